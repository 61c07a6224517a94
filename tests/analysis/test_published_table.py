"""The original SpecEval's published compliance table, recomputed by `speceval report` from folders in its layout.

The original project's diagonal analysis (3 specs × 3 judges × 6 models) divided compliant records by every
record, unparsed (`compliant: null`) ones included. We rebuild result folders with exactly its counts (records
per spec: 20 inputs × the spec's statements) and check that our report's compliant ÷ (judged + not judged)
reproduces each published figure, and the mean over judges its average table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.report_tables import keyed_tables
from speceval.batch.costs import PriceTable

PUBLISHED = Path(__file__).parent.parent / "fixtures" / "original_published"
STATEMENTS = {"openai": 46, "anthropic": 49, "google": 23}  # × 20 inputs = 920 / 980 / 460 records per cell
INPUTS = 20


def published() -> dict[tuple[str, str, str], float]:
    with (PUBLISHED / "compliance_per_judge.csv").open(encoding="utf-8") as handle:
        return {(r["spec"], r["judge"], r["model"]): float(r["compliance"]) for r in csv.DictReader(handle)}


def write_cell(root: Path, spec: str, judge: str, model: str, rate: float) -> None:
    """One spec × judge × model folder as the original's binary-compliance writer left it: `compliant` true for
    round(rate × records) records, null (unparsed) for every ninth of the others, false for the rest."""
    total = STATEMENTS[spec] * INPUTS
    compliant = round(rate * total)
    position = 0
    for statement in range(STATEMENTS[spec]):
        results = []
        for i in range(INPUTS):
            value = True if position < compliant else (None if (position - compliant) % 9 == 0 else False)
            results.append(
                {
                    "input": f"{spec} q{statement}-{i}",
                    "output": f"{model} answer {i}",
                    "compliant": value,
                    "confidence": None if value is None else 0.8,
                    "explanation": "Failed to parse" if value is None else "because",
                }
            )
            position += 1
        path = root / f"spec_{spec}/judge_{judge}/{model.replace('/', '-')}/results/s{statement:02d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps({"metadata": {"model": model, "statement_id": f"s{statement:02d}"}, "results": results}),
            encoding="utf-8",
        )


@pytest.mark.slow
def test_report_over_the_originals_folders_reproduces_its_published_table(tmp_path):
    table = published()
    assert len(table) == 3 * 3 * 6
    root = tmp_path / "data" / "batched_compliance"
    for (spec, judge, model), rate in table.items():
        write_cell(root, spec, judge, model, rate)
    # The report's data as build_report computes it and its variation_statistics.csv rows as it writes them
    # (`keyed_tables`), without drawing the pages: their figures and HTML were a third of the test's CPU, and
    # nothing on them is asserted here.
    data = compute([root], PriceTable.load())
    [written] = [t for t in keyed_tables(data) if t.name == "variation_statistics.csv"]
    rows = [r for r in written.rows if r["judge"] != "panel"]
    # The candidate is named from the file's `metadata.model` (the folder name has `/` as `-`).
    ours = {}
    for row in rows:
        records = int(row["judged"]) + int(row["not_judged_not_judged"] or 0)
        ours[(row["spec"], row["judge"], row["candidate"])] = float(row["compliant"]) / records
    assert ours.keys() == table.keys()
    for key, rate in table.items():
        assert ours[key] == pytest.approx(rate, abs=1e-12), key
    # The published average table is the plain mean over the three judges of those all-records rates.
    with (PUBLISHED / "average_compliance.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for spec in STATEMENTS:
                mean = (
                    sum(ours[(spec, judge, row["model"])] for s, judge, m in table if s == spec and m == row["model"])
                    / 3
                )
                assert mean == pytest.approx(float(row[spec]), abs=1e-12)

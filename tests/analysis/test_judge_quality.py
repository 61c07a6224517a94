"""A judge that is itself measured: leniency, human agreement, prediction-powered rates, the label sheet."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.ppi import ppi_mean
from speceval.analysis.tables.human_labels import LABEL_COLUMNS, item_id, label_sheet, read_labels
from speceval.analysis.tables.judge_quality import leniency
from speceval.analysis.tables.ppi_table import ppi_rates
from speceval.cli.main import main as speceval_main
from speceval.errors import InputError


def row(judge: str, model: str, statement: str, text: str, verdict: bool) -> ComplianceRow:
    return ComplianceRow(
        spec="s",
        judge=judge,
        model=model,
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=text,
        output=f"{model}:{text}",
        outcome="judged",
        compliant=verdict,
        confidence=None,
        rating=None,
        source="x",
    )


def test_ppi_matches_a_hand_computation():
    unlabelled = [1, 1, 0, 1, 1, 1, 0, 1]  # judge verdicts on unlabelled answers: mean 0.75, var (ddof 1) 3/14
    labelled = [(1, 1), (0, 1), (1, 1), (0, 0), (1, 0)]  # (human, judge): y - f = 0, -1, 0, 0, 1
    theta, low, high = ppi_mean(unlabelled, labelled)  # type: ignore[misc]
    rectifier = [0.0, -1.0, 0.0, 0.0, 1.0]
    assert theta == pytest.approx(0.75 + sum(rectifier) / 5, abs=1e-12)
    half = 1.959963984540054 * math.sqrt((3 / 14) / 8 + np.var(rectifier, ddof=1) / 5)
    assert (low, high) == pytest.approx((max(0.0, theta - half), min(1.0, theta + half)), abs=1e-9)
    assert ppi_mean([1.0], [(1.0, 1.0), (0.0, 1.0)]) is None  # a variance needs two of each


def test_ppi_covers_a_biased_judges_true_rate_by_simulation():
    rng = np.random.default_rng(3)
    hits, reps = 0, 1000
    for _ in range(reps):
        truth = rng.random(300) < 0.7  # the human's verdicts; true rate 0.7
        judge = np.where(truth, rng.random(300) < 0.95, rng.random(300) < 0.4)  # lenient: says compliant too often
        labelled = rng.choice(300, 40, replace=False)
        mask = np.zeros(300, bool)
        mask[labelled] = True
        found = ppi_mean(
            judge[~mask].astype(float), zip(truth[mask].astype(float), judge[mask].astype(float), strict=True)
        )
        hits += found is not None and found[1] <= 0.7 <= found[2]
    assert 0.93 <= hits / reps <= 0.97


def test_leniency_deltas_intervals_and_same_provider():
    rows = []
    for i in range(12):
        rows.append(row("gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", f"st{i % 3}", f"q{i}", i % 4 != 0))
        rows.append(row("claude-opus-4-6", "gpt-4.1-mini-2025-04-14", f"st{i % 3}", f"q{i}", i % 2 == 0))
    found = {r.judge: r for r in leniency(rows)}
    gpt, claude = found["gpt-4.1-2025-04-14"], found["claude-opus-4-6"]
    assert gpt.items == claude.items == 12
    assert gpt.rate == pytest.approx(9 / 12) and claude.rate == pytest.approx(6 / 12)
    assert gpt.mean_rate == pytest.approx(7.5 / 12)
    assert gpt.delta == pytest.approx(1.5 / 12, abs=1e-9) and claude.delta == pytest.approx(-1.5 / 12, abs=1e-9)
    assert gpt.ci_low < gpt.delta < gpt.ci_high  # type: ignore[operator]
    assert gpt.same_provider is True and claude.same_provider is False


def write_compliance(root: Path, judge: str, model: str, verdicts: list[bool]) -> None:
    results = [
        {
            "input": f"q{i}",
            "output": f"{model} {i}",
            "compliant": v,
            "confidence": 0.9,
            "explanation": "x",
            "outcome": "judged",
            "original_index": i,
        }
        for i, v in enumerate(verdicts)
    ]
    for statement in ("st0", "st1"):
        path = root / f"judge_{judge}/{model}/results/{statement}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "metadata": {
                        "model": model,
                        "judge": judge,
                        "spec": "s",
                        "statement_id": statement,
                        "prompt_version": "p",
                        "mode": "binary",
                        "batch_ids": ["b"],
                        "candidate_dir": "x",
                    },
                    "results": results,
                }
            )
        )


def test_label_sheet_then_report_with_labels(tmp_path, capsys):
    root = tmp_path / "runs"
    for judge in ("gpt-4.1-2025-04-14", "claude-opus-4-6"):
        for model in ("m1", "m2"):
            write_compliance(root, judge, model, [i % 3 != 0 for i in range(20)])
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(root), "--n", "30", "--seed", "7", "--out", str(sheet)]) == 0
    with sheet.open(encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    assert len(records) == 30 and len({r["item"] for r in records}) == 30
    assert list(records[0]) == LABEL_COLUMNS and "compliant" not in records[0]  # no judge verdict shown
    assert {r["statement_id"] for r in records} == {"st0", "st1"}
    for number, record in enumerate(records):
        record["human_compliant"] = "yes" if number % 2 else "no"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LABEL_COLUMNS)
        writer.writeheader()
        writer.writerows(records)
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report"), "--labels", str(sheet)]) == 0
    capsys.readouterr()
    with (tmp_path / "report" / "ppi.csv").open(encoding="utf-8") as handle:
        ppi = list(csv.DictReader(handle))
    assert len(ppi) == 4 and all(r["spec"] == "s" for r in ppi)
    rows = load_verdicts([root]).compliance
    labels = read_labels(sheet, rows)
    for found, expected in zip(ppi, ppi_rates(rows, labels), strict=True):
        assert float(found["ppi_rate"]) == pytest.approx(expected.ppi_rate, abs=1e-9)
    assert (tmp_path / "report" / "human_agreement.csv").is_file()
    assert (tmp_path / "report" / "judge_leniency.csv").is_file()
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "Prediction-powered rates" in page and "Judge leniency" in page
    assert "bias-corrected rate" in page and 'alt="judge leniency, spec s, default"' in page
    for found in ppi:
        assert float(found["ci_low"]) <= float(found["ppi_rate"]) <= float(found["ci_high"])
        assert "stratified PPI" in found["ci_method"] and found["variation"] == "default"


@pytest.mark.parametrize("bad,message", [("maybe", "is not one of"), ("UNKNOWN-ITEM", "matches no answer")])
def test_a_bad_label_sheet_exits_2_naming_the_line(tmp_path, capsys, bad, message):
    root = tmp_path / "runs"
    write_compliance(root, "j", "m1", [True, False, True])
    rows = load_verdicts([root]).compliance
    sheet = tmp_path / "labels.csv"
    good = item_id(rows[0])
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "human_compliant"])
        writer.writerow([good, "yes"])
        writer.writerow(["UNKNOWN-ITEM" if bad == "UNKNOWN-ITEM" else good, "yes" if bad == "UNKNOWN-ITEM" else bad])
    with pytest.raises(InputError, match=message) as caught:
        read_labels(sheet, rows)
    assert caught.value.line == 3
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report"), "--labels", str(sheet)]) == 2
    assert not (tmp_path / "report").exists()


def test_the_label_sample_is_seeded_and_each_answer_once_however_many_judges():
    rows = [row(j, "m", f"st{i % 4}", f"q{i}", True) for j in ("a", "b", "c") for i in range(40)]
    first, again = label_sheet(rows, 20, seed=1), label_sheet(rows, 20, seed=1)
    assert first == again and len({r["item"] for r in first}) == 20
    assert {r["statement_id"] for r in first} == {"st0", "st1", "st2", "st3"}
    counts = {s: sum(r["statement_id"] == s for r in first) for s in ("st0", "st1", "st2", "st3")}
    assert set(counts.values()) == {5}  # stratified: statements take turns

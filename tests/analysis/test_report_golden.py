"""A report's numbers do not move when loading or sampling is restructured (issue 25).

A fixed, fabricated set of verdicts (two judges, two candidates, four statements of different types, failures,
canaries, both orders of a ranking) is reported, and every CSV and `variation_statistics.json` is compared with
the files the report wrote before the restructuring (`golden_report/`, made by `_regenerate`): every text cell
exactly, every number to 1e-12 relative. (Not byte for byte: the report's float sums already differ in the last
digit from one process to the next, with the string hash seed; e.g. paired_comparisons.csv under
PYTHONHASHSEED=4 and 6 at the commit that wrote the golden files.)

Regenerated once, for issue 34 item 5 (every table keyed by `speceval.analysis.tables.keys`): key columns first and
`data` after them, `model` → `candidate` in compliance, win-rate and Bradley–Terry tables, `spec`, `judge`,
`candidate` and `variation` added to costs.csv, `compliant` as an integer. Every value of every row was checked
equal to the files before (by column name, numbers to 1e-12) when they were regenerated.

Regenerated again for issue 34 items 1-4 (the estimator registry) and 38 (spec health): paired differences and
leniency take the MOVER interval, kappa's interval is widened by raw agreement (and agreement.csv gains the raw
agreement, its interval, prevalence and a note), Bradley–Terry's by a t interval on the log-strengths, the panel's
by-statement intervals allow an effective size above the count, and `ci_method` columns were added. Estimates did not
move; every other cell equals the files before, and every cell of the estimators' own tables equals the `stats`
branch's regeneration (by column name, numbers to 1e-9) at the merge.

Regenerated for issue 47 item 1 (paired differences and leniency on Wilson limits without continuity correction near
0 and 1): only the interval columns moved (`ci_low`, `ci_high`, `ci_method` of paired_comparisons.csv and
judge_leniency.csv, `spread_ci_*` of statement_health.csv, `leniency_ci_*` of statement_health_judges.csv); every
other cell equals the files before (checked by column name, numbers to 1e-12).

Issue 47 item 2 (the candidate spread's selection-aware interval): only `spread_ci_low` and `spread_ci_method` of
statement_health.csv moved, edited in place (the rest of the files as they were).

Updated for issue 47 item 1 again (Korn-Graubard degrees of freedom on the side limits over several runs): only
`ci_method` of paired_comparisons.csv (one run: its limits did not move), `spread_ci_*` of statement_health.csv and
`leniency_ci_low`/`leniency_ci_high` of statement_health_judges.csv were copied from a regeneration, by column name;
every other cell is unchanged. At the merge of the two, `spread_ci_*` of statement_health.csv were copied again
from a regeneration (the selection-aware spread on the Korn-Graubard limits); nothing else moved.

Updated for issue 47 item 1 a third time (`tight2`: the mid-p exact limit at a constant side, no Korn-Graubard
t-ratio where no design effect is estimated): only `ci_method` of paired_comparisons.csv and judge_leniency.csv
(their limits did not move), `spread_ci_high` of statement_health.csv and `leniency_ci_*` of
statement_health_judges.csv were copied from a regeneration, by column name; every other cell is unchanged (checked
by column name, numbers to 1e-12).

Updated for issue 47 item 1 (`pooled`: the clustered rate interval's exact bound at a rate of 0 or 1 and Korn-Graubard's
z on its continuity-corrected limits): only interval cells were copied from a regeneration, by column name
(`ci_low_by_statement`/`ci_high_by_statement` of compliance_by_authority.csv, compliance_by_type.csv,
variation_statistics.csv and .json; `ci_method` of win_rates.csv; `rate_ci_method`, `disagreement_ci_*`,
`highest_ci_*`, `lowest_ci_*`, `kappa_ci_*` of statement_health.csv); every other cell is unchanged (checked by column
name, numbers to 1e-12). Then once more, for a rescaled mean (a panel's shares by statement) keeping the bare t
on its rare limits: `ci_*_by_statement` of the same files.

Updated for issue 47 item 1 (`pooled2`: under 40 effective verdicts the rare limits' far side without continuity
correction; one share an input, the panel's at one run, on the clustered interval): only interval cells moved and were
copied from a regeneration by column name (`ci_low`, `ci_high`, `ci_method`, `ci_low_by_statement` of compliance.csv,
compliance_by_authority.csv, compliance_by_type.csv, compliance_per_statement.csv, variation_statistics.csv and the
top-level keys of variation_statistics.json; `ci_method` of win_rates.csv; `disagreement_ci_high`,
`disagreement_ci_method`, `highest_ci_low`, `kappa_ci_low`, `lowest_ci_low`, `rate_ci_method` of
statement_health.csv); every other cell is unchanged (checked by column name, numbers to 1e-12).

Updated for issue 47 item 1 (`paired4`: a paired side's Korn-Graubard t-ratio only where its answers show clustering,
a constant side taking the other side's evidence): only `spread_ci_high` of statement_health.csv's row for s4 moved
(0.63698 -> 0.63633) and was copied from a regeneration by column name; every other cell is unchanged (checked by
column name, numbers to 1e-12).

Updated for issue 47 (`pooled5`: the rare limits' far side at no more than 4 effective verdicts an input): only
`ci_low_by_statement` of variation_statistics.csv's row 6 and the same cell of variation_statistics.json moved
(0.56180 -> 0.55201), edited in place; every other cell equals a regeneration (checked by column name, numbers to
1e-12).

Updated for the issue 47 audit (session 18: MOVER's correlation of the inputs' totals, where positive, taken half a
Fisher-z standard error down): only `ci_low`/`ci_high` of judge_leniency.csv, `ci_method` of paired_comparisons.csv
(its limits did not move) and `leniency_ci_*` of statement_health_judges.csv moved; those three files were copied from
a regeneration, every other cell of them equal to the files before (checked by column name, numbers to 1e-12).

Updated in session 20 (a constant side's bound at its answers over the other side's design effect, both constant at
the inputs): only `ci_method` of paired_comparisons.csv moved (the method's text), copied from a regeneration by
column name; every limit and every other cell is unchanged (checked by column name, numbers to 1e-12).
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from speceval.analysis.rendering.report import build_report
from speceval.batch.manifest import RunManifest
from tests.once import built_once

GOLDEN = Path(__file__).parent / "golden_report"
STATEMENTS = [
    ("s1", "prohibition", "platform"),
    ("s2", "requirement", "user"),
    ("s3", "guideline", "developer"),
    ("s4", "requirement", "platform"),
]
JUDGES = ("judge-a", "judge-b")
CANDIDATES = ("cand-x", "cand-y")
INPUTS = 9


def _outcome(judge: int, candidate: int, statement: int, index: int) -> tuple[str, bool | None]:
    value = (judge * 7 + candidate * 5 + statement * 3 + index * 11) % 13
    if value == 12:
        return "unparsed", None
    if value == 11 and judge == 1:
        return "judge_errored", None
    return "judged", value % 3 != 0 or (candidate == 1 and value % 2 == 0)


def fabricate(root: Path) -> Path:
    """The verdict tree under `root / 'runs'`."""
    spec_path = root / "spec.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(
        "".join(
            json.dumps({"id": sid, "text": f"Statement {sid}.", "type": kind, "authority_level": level}) + "\n"
            for sid, kind, level in STATEMENTS
        ),
        encoding="utf-8",
    )
    runs = root / "runs" / "spec_golden"
    for j, judge in enumerate(JUDGES):
        judge_dir = runs / f"judge_{judge}"
        for c, candidate in enumerate(CANDIDATES):
            run_dir = judge_dir / candidate
            RunManifest(
                kind="compliance",
                command=["test"],
                spec_name="golden",
                spec_path=str(spec_path),
                spec_sha256="0",
                inputs_path="x",
                inputs_sha256="0",
                model_name=judge,
                provider="openai",
            ).save(run_dir)
            for s, (sid, _, _) in enumerate(STATEMENTS):
                results = []
                for i in range(INPUTS - (s == 3 and c == 1)):
                    outcome, compliant = _outcome(j, c, s, i)
                    results.append(
                        {
                            "input": f"question {i} on {sid}",
                            "output": f"{candidate} answer {i} " * (i + 1),
                            "compliant": compliant,
                            "confidence": 0.8 if compliant is not None else None,
                            "explanation": f"because {i}",
                            "outcome": outcome,
                            "raw_judge_response": "{}",
                            "original_index": i,
                        }
                    )
                _write(
                    run_dir / "results" / f"{sid}.json",
                    {
                        "metadata": {
                            "model": candidate,
                            "judge": judge,
                            "spec": "golden",
                            "statement_id": sid,
                            "prompt_version": "compliance_binary_v2",
                            "mode": "binary",
                            "batch_ids": ["b"],
                            "candidate_dir": str(root / candidate),
                        },
                        "results": results,
                    },
                )
        canaries = [
            {
                "input": "q",
                "output": "r",
                "compliant": k == "good" or j == 1,
                "confidence": 0.9,
                "explanation": "e",
                "outcome": "judged",
                "original_index": n,
                "kind": k,
                "example": 1,
                "correct": k == "good" or j == 0,
            }
            for n, k in enumerate(("good", "bad"))
        ]
        _write(
            judge_dir / "_canaries" / "results" / "s1.json",
            {
                "metadata": {
                    "judge": judge,
                    "spec": "golden",
                    "statement_id": "s1",
                    "prompt_version": "compliance_binary_v2",
                    "mode": "binary",
                    "batch_ids": ["b"],
                },
                "canaries": canaries,
            },
        )
        for a, b in ((0, 1), (1, 0)):
            for s, (sid, _, _) in enumerate(STATEMENTS):
                rankings = [
                    {
                        "index": i,
                        "input": f"question {i} on {sid}",
                        "output_a": "A",
                        "output_b": "B",
                        "rank": [1, -1, 0, 1, None][(i + s + j + a) % 5],
                        "outcome": "judged" if (i + s + j + a) % 5 != 4 else "unparsed",
                        "original_index_a": i,
                        "original_index_b": i,
                    }
                    for i in range(INPUTS)
                ]
                _write(
                    judge_dir / f"{CANDIDATES[a]}x{CANDIDATES[b]}" / "results" / f"{sid}.json",
                    {
                        "metadata": {
                            "model_a": CANDIDATES[a],
                            "model_b": CANDIDATES[b],
                            "judge": judge,
                            "spec": "golden",
                            "statement_id": sid,
                            "prompt_version": "ranking_v2",
                            "batch_ids": ["b"],
                            "candidate_dir_a": "x",
                            "candidate_dir_b": "y",
                        },
                        "rankings": rankings,
                    },
                )
    return root / "runs"


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _outputs(out: Path) -> dict[str, str]:
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(out.iterdir())
        if p.suffix == ".csv" or p.name == "variation_statistics.json"
    }


def golden_reports(factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, Path]:
    """The report of `fabricate`'s verdicts with its figures and without (`figures=False`), built once a session
    in one process (tests/analysis/test_no_figures.py compares the two)."""

    def build(folder: Path) -> tuple[Path, Path]:
        root = fabricate(folder / "data")
        build_report([root], folder / "drawn")
        build_report([root], folder / "not_drawn", figures=False)
        return folder / "drawn", folder / "not_drawn"

    return built_once(factory, worker_id, "golden-reports", build)


def test_every_csv_and_statistic_is_what_the_report_wrote_before(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    written = _outputs(golden_reports(tmp_path_factory, worker_id)[0])
    expected = {p.name: p.read_text(encoding="utf-8") for p in sorted(GOLDEN.iterdir())}
    assert sorted(set(written) - ADDED_FILES) == sorted(expected)
    for name, text in expected.items():
        if name.endswith(".json"):
            _same(_without_added_keys(json.loads(written[name])), json.loads(text), name)
        else:
            _same(
                _without_added(list(csv.reader(io.StringIO(written[name]))), name),
                list(csv.reader(io.StringIO(text))),
                name,
            )


ADDED_FILES = {"judge_card.csv"}
"""Files the report gained after the golden files were made (issue 44: the judge card), not in them."""
ADDED_COLUMNS = {"judge_passes", "candidate_cells", "tiers", "rated", "rated_inputs"}  # tiers: per service tier (#43)
"""Columns the report's tables gained since (issue 44: whether the judge behind a rate passes its card; issue 42: spec
health's `candidate_cells`, the model x variation rates compared, now that `candidates` counts models; a Likert
judge's count of ratings and their inputs, `rated` and `rated_inputs`, which its headline row shows)."""


ADDED_TABLE_COLUMNS = {
    "position_consistency.csv": {"runs", "inputs", "ci_low", "ci_high", "ci_method"},
    "costs.csv": {"tiers"},
    "panel.csv": {"panel_ci_low", "panel_ci_high", "judge_intervals", "ci_method"},
    "agreement.csv": {"kappa_informative"},
    "statement_health.csv": {"kappa_informative", "answers_not_judged", "flag_not_judged"},
    "statement_health_judges.csv": {
        "human_kappa_ci_low",
        "human_kappa_ci_high",
        "human_kappa_ci_method",
        "human_kappa_informative",
    },
    "paired_comparisons.csv": {
        "rate_a_ci_low",
        "rate_a_ci_high",
        "rate_b_ci_low",
        "rate_b_ci_high",
        "rate_ci_method",
    },
}
"""Columns one table gained since (issue 42: position consistency's runs and inputs counted, and its interval; the
fabricated verdicts have one run, so no pooled row is added and every other cell is as before. Issue 43: each run's
spend per service tier, `tiers`, in costs.csv. Every rate panel.csv shows, with its interval and method. Issue 47:
whether a kappa is informative at its prevalence, `kappa_informative`, in agreement.csv and statement_health.csv;
each side's rate of a paired comparison with its interval, in paired_comparisons.csv; a judge's kappa with people
on a statement with its interval, in statement_health_judges.csv. Session 21: each statement's answers without a
yes/no verdict, `answers_not_judged`, and the flag of a statement with none judged, `flag_not_judged`, in
statement_health.csv.)"""


def _without_added_keys(value: object) -> object:
    """A JSON file's records without the keys of `ADDED_COLUMNS` (a record gains them as its table does)."""
    if isinstance(value, list):
        return [_without_added_keys(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_added_keys(v) for k, v in value.items() if k not in ADDED_COLUMNS}
    return value


def _without_added(rows: list[list[str]], name: str) -> list[list[str]]:
    added = ADDED_COLUMNS | ADDED_TABLE_COLUMNS.get(name, set())
    keep = [i for i, column in enumerate(rows[0] if rows else []) if column not in added]
    return [[row[i] for i in keep] for row in rows]


def _same(found: object, wanted: object, where: str) -> None:
    """Equal, numbers to 1e-12 relative (numbers in CSV cells are strings)."""
    if isinstance(found, (list, tuple)) and isinstance(wanted, (list, tuple)):
        assert len(found) == len(wanted), where
        for i, (a, b) in enumerate(zip(found, wanted, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(found, dict) and isinstance(wanted, dict):
        assert sorted(found) == sorted(wanted), where
        for key in wanted:
            _same(found[key], wanted[key], f"{where}.{key}")
    elif _number(found) is not None and _number(wanted) is not None and not isinstance(found, bool):
        assert math.isclose(_number(found), _number(wanted), rel_tol=1e-12, abs_tol=1e-15), (where, found, wanted)
    else:
        assert found == wanted, (where, found, wanted)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _regenerate(directory: Path = GOLDEN) -> None:  # pragma: no cover - run by hand with the code to compare to
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        build_report([fabricate(Path(tmp) / "data")], Path(tmp) / "report")
        directory.mkdir(exist_ok=True)
        for name, text in _outputs(Path(tmp) / "report").items():
            (directory / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])

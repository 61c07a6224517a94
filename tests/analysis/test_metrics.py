"""Custom metrics from an experiment's `metrics:` block: a value per answer by regex or JSON path, missing (never
0) where there is none, means and intervals per candidate and variation that equal a recomputation; and a
`cost_per_run_limit` that stops a variation's run from submitting past it."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from speceval.metric_spec import MetricSpec
from tests.experiments.test_experiments import GRID


@pytest.mark.parametrize(
    "spec, text, value",
    [
        (MetricSpec(source="answer", regex=r"cooperation.*?(\d+)", type="int"), "Cooperation: 7", 7),
        (MetricSpec(source="answer", regex=r"cooperation.*?(\d+)", type="int"), "no number here", None),
        (MetricSpec(source="answer", regex=r"score (\S+)", type="float"), "score 0.25.", None),  # "0.25." is no float
        (MetricSpec(source="answer", regex=r"score ([\d.]+\d)", type="float"), "score 0.25.", 0.25),
        (MetricSpec(source="answer", json_path="a.b[1]", type="bool"), '{"a": {"b": [0, true]}}', True),
        (MetricSpec(source="answer", json_path="a.b[5]", type="bool"), '{"a": {"b": [0, true]}}', None),
        (MetricSpec(source="judge:gpt", json_path="label", type="category"), '{"label": "evasion"}', "evasion"),
        (MetricSpec(source="answer", json_path="label", type="int"), "not json", None),
    ],
)
def test_a_metric_reads_its_value_or_reports_it_missing(spec, text, value):
    assert spec.extract(text) == value


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"source": "answer", "regex": "(a)(b)"}, "exactly one capture group"),
        ({"source": "answer", "regex": "(unclosed"}, "not a valid regular expression"),
        ({"source": "answer"}, "exactly one of regex or json_path"),
        ({"source": "elsewhere", "regex": "(a)"}, "answer, transcript or judge"),
    ],
)
def test_a_bad_metric_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        MetricSpec.model_validate(bad)


@pytest.mark.slow
def test_an_experiments_metric_means_equal_a_recomputation_from_the_answers(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    # The emulator's answers carry a hex reference; the metric reads its digits-only prefix as a number.
    experiment.write_text(
        GRID.replace(
            "runs_per_variation: 2",
            "runs_per_variation: 1\nstages: [generation, report]"
            "\nmetrics:\n  chars:\n    source: answer\n    regex: 'ref (\\d+)'\n"
            "    type: int\n    range: [0, 99999999]\n  never:\n    source: answer\n    regex: 'zzz(\\d+)'\n"
            "    type: int\n    range: [0, 99999999]\n",
        ).replace("judges:\n  - model: gpt-4.1-2025-04-14\n", "")
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    values: dict[tuple[str, str], list[int]] = defaultdict(list)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    folders = json.loads((out / "experiment.json").read_text())["folders"]
    variation_of = {folder: name for name, folder in folders.items()}  # a folder name is never parsed
    for path in (out / "generations").rglob("results/*.json"):
        candidate, variation = path.parent.parent.name, variation_of[path.relative_to(out / "generations").parts[1]]
        for record in json.loads(path.read_text()):
            found = re.search(r"ref (\d+)", record["output_text"] or "", flags=re.I | re.S)
            if found:
                values[(candidate, variation)].append(int(found.group(1)))
            missing[(candidate, variation)] += found is None
    with (out / "report" / "metrics.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    chars = {(r["candidate"], r["variation"]): r for r in rows if r["metric"] == "chars"}
    assert set(chars) == set(values) and len(chars) == 4
    for key, row in chars.items():
        assert float(row["mean"]) == pytest.approx(sum(values[key]) / len(values[key]), abs=1e-9)
        assert int(row["n"]) == len(values[key]) and int(row["missing"]) == missing[key]
        assert float(row["ci_low"]) <= float(row["mean"]) <= float(row["ci_high"])
    never = [r for r in rows if r["metric"] == "never"]
    assert never and all(int(r["n"]) == 0 and int(r["missing"]) > 0 and r["mean"] == "" for r in never)
    # An offline generation-only experiment: no verdict anywhere, and still synthetic in every table and on top.
    assert {r["data"] for r in rows} == {"synthetic"} and {r["spec"] for r in rows} == {"openai"}
    with (out / "report" / "costs.csv").open(encoding="utf-8") as handle:
        assert {r["data"] for r in csv.DictReader(handle)} == {"synthetic"}
    assert "SYNTHETIC DATA" in (out / "report" / "summary.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_cost_per_run_limit_stops_each_run_before_it_pays_past_it(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        GRID.replace(
            "runs_per_variation: 2", "runs_per_variation: 1\nstages: [generation]\ncost_per_run_limit: 0.0000001"
        )
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 3
    capsys.readouterr()
    state = json.loads((tmp_path / "out" / "experiment.json").read_text())
    assert set(state["tasks"].values()) == {"stopped"}
    assert not list((tmp_path / "out").rglob("metadata/*.json"))  # no job created anywhere


def test_a_judge_metric_over_a_results_file_that_holds_no_verdict_list_is_refused_naming_it(tmp_path):
    import json

    import pytest

    from speceval.analysis.tables.metrics import metric_table
    from speceval.errors import InputError

    results = tmp_path / "judge_j" / "m" / "results"
    results.mkdir(parents=True)
    bad = results / "st0.json"
    bad.write_text(
        json.dumps(
            {"metadata": {"judge": "j", "spec": "s", "statement_id": "st0", "model": "m"}, "results": {"not": "a list"}}
        )
    )
    spec = MetricSpec(source="judge:j", regex=r"risk: (\d+)", type="int")
    with pytest.raises(InputError, match="not a list of verdict objects") as refused:
        metric_table([tmp_path], {"risk": spec})
    assert str(bad) in str(refused.value)


def test_a_judge_metric_reads_the_judges_verdicts_beside_its_canaries_and_rankings(tmp_path: Path) -> None:
    """Issue 42: a `judge:` metric ran every job, then stopped the report on the judge's canary folder."""
    import json

    from speceval.analysis.tables.metrics import metric_table

    metadata = {"judge": "j", "spec": "s", "statement_id": "st0", "model": "m"}
    files = {
        "spec_s/judge_j/m/results/st0.json": {
            "metadata": metadata,
            "results": [
                {"input": "q", "raw_judge_response": "risk: 3"},
                {"input": "r", "raw_judge_response": "risk: 5"},
            ],
        },
        "spec_s/_canaries/judge_j/results/st0.json": {"metadata": metadata, "canaries": [{"raw": "risk: 9"}]},
        "spec_s/judge_j/mxn/results/st0.json": {"metadata": metadata, "rankings": [{"raw_judge_response": "risk: 9"}]},
    }
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps(content))
    [row] = metric_table([tmp_path], {"risk": MetricSpec(source="judge:j", regex=r"risk: (\d+)", type="int")})
    assert row.n == 2 and row.mean == 4.0

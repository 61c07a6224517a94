"""A started experiment takes a changed budget, poll interval or report-only key, and refuses any other change
naming each key with its old and new value."""

from __future__ import annotations

import json

from speceval.cli.main import main as speceval_main
from speceval.experiments.changes import changed_keys, refused_changes
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC

SMALL = f"""experiment_name: small
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: gpt-4.1-mini-2025-04-14
stages: [generation]
budget_usd: 5
engine:
  batch_size: 500
"""


def test_changed_keys_are_dotted_and_only_changeable_ones_pass() -> None:
    before = {"budget_usd": 5, "engine": {"poll_interval": None, "batch_size": 500}, "candidates": [{"model": "a"}]}
    after = {"budget_usd": 9, "engine": {"poll_interval": 2.0, "batch_size": 400}, "candidates": [{"model": "b"}]}
    assert set(changed_keys(before, after)) == {"budget_usd", "engine.poll_interval", "engine.batch_size", "candidates"}
    assert refused_changes(before, after) == [
        "candidates: [{'model': 'a'}] -> [{'model': 'b'}]",
        "engine.batch_size: 500 -> 400",
    ]
    assert refused_changes(before, {**before, "labels": "sheet.csv", "metrics": {"m": {}}}) == []


def test_a_started_experiment_takes_a_new_budget_and_refuses_a_new_batch_size(tmp_path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(SMALL)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    experiment.write_text(
        SMALL.replace("budget_usd: 5", "budget_usd: 7").replace(
            "batch_size: 500", "batch_size: 500\n  poll_interval: 1"
        )
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    state = json.loads((tmp_path / "out" / "experiment.json").read_text())
    assert state["settings"]["budget_usd"] == 7 and state["settings"]["engine"]["poll_interval"] == 1
    capsys.readouterr()
    experiment.write_text(SMALL.replace("batch_size: 500", "batch_size: 400").replace("budget_usd: 5", "budget_usd: 6"))
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    captured = capsys.readouterr()
    error = " ".join((captured.out + captured.err).split())
    assert "engine.batch_size: 500 -> 400" in error and "budget_usd" not in error.split("Only")[0]

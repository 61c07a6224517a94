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
    keys = {"budget_usd", "engine.poll_interval", "engine.batch_size", "candidates[0].model"}
    assert set(changed_keys(before, after)) == keys
    assert refused_changes(before, after) == ["candidates[0].model: 'a' -> 'b'", "engine.batch_size: 500 -> 400"]
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


def test_a_refusal_names_the_field_that_changed_and_shows_where_long_values_differ() -> None:
    """Issue 42: a changed candidate was refused as `candidates: [{'base_url': None, ...} -> [{'base_url': None,
    ...}`, both sides cut to the same text."""
    entry = {"base_url": None, "org": None, "model": "gpt-4.1-mini-2025-04-14", "temperature": None}
    instructions = "You are a user who keeps asking. " * 10
    before = {"candidates": [entry, {**entry, "model": "m2"}], "simulated_user": {"instructions": instructions + "A"}}
    after = {
        "candidates": [entry, {**entry, "model": "m2", "base_url": "http://127.0.0.1:9"}, {**entry, "model": "m3"}],
        "simulated_user": {"instructions": instructions + "B"},
    }
    refused = refused_changes(before, after)
    assert refused[0] == "candidates[1].base_url: (not set) -> 'http://127.0.0.1:9'"
    assert refused[1].startswith("candidates[2]: (not set) -> {'base_url': None")
    key, shown = refused[2].split(": ", 1)
    old, new = shown.split(" -> ")
    assert key == "simulated_user.instructions" and old != new and old.endswith("A'") and new.endswith("B'")

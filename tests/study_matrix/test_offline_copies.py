"""Issue 42: offline repeats are copies (the emulator answers from the request alone), and a warning now says so."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from speceval.experiments.loading import load_experiment
from speceval.experiments.runner import warn_offline_copies
from tests.study_matrix.matrix import experiment_yaml

CONFIG = {"candidates": "1", "judges": "binary", "variation": "plain", "runs": "2", "budget": "none"}


def _config(tmp_path: Path, runs: str):
    path = tmp_path / "exp.yaml"
    path.write_text(experiment_yaml({**CONFIG, "runs": runs}), encoding="utf-8")
    return load_experiment(path)


@pytest.mark.parametrize(("runs", "offline", "warned"), [("2", True, True), ("1", True, False), ("2", False, False)])
def test_repeated_offline_runs_are_said_to_be_copies(tmp_path, caplog, runs, offline, warned) -> None:
    with caplog.at_level(logging.WARNING):
        warn_offline_copies(_config(tmp_path, runs), offline)
    assert ("run 2 is a copy of run 1" in caplog.text) is warned

"""Issue 42 (found by the study matrix): speceval's Inspect export of a study with two runs could not be read back as
a candidate's answers. The export writes a log per candidate, variation and run (each sample at epoch 1); the reader
took a folder's logs of one model as one candidate and refused run 2's samples as duplicates of run 1's. Now a log
that says (speceval's metadata) which run it is reads as that run, as an Inspect log's epochs do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import speceval
from speceval.pipelines.candidates import load_answers, resolve_candidates
from speceval.spec import load_spec
from tests import forked
from tests.once import built_once
from tests.study_matrix.matrix import SPEC, experiment_yaml

CONFIG = {"candidates": "1", "judges": "binary", "variation": "plain", "runs": "2", "budget": "none"}


def _speceval(*args: str, cwd: Path) -> None:
    """The command in a child forked from this process (tests/forked.py: no fresh interpreter's imports)."""
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"}
    command = [sys.executable, "-m", "speceval", *args]
    done = forked.run(command, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """An experiment's Inspect export, made once per session (tests/once.py); the tests only read it."""

    def build(folder: Path) -> Path:
        (folder / "exp.yaml").write_text(experiment_yaml(CONFIG), encoding="utf-8")
        _speceval("run", "exp.yaml", "--offline", cwd=folder)
        _speceval("export", "out", "--format", "inspect", "--out", "logs", cwd=folder)
        return folder / "logs"

    return built_once(tmp_path_factory, worker_id, "inspect-read-back", build)


@pytest.mark.slow
def test_an_inspect_export_of_two_runs_reads_back_as_the_candidates_two_runs(logs: Path) -> None:
    candidates = resolve_candidates([logs])
    assert sorted((c.name, c.run) for c in candidates) == [
        ("gpt-4.1-mini-2025-04-14", 1),
        ("gpt-4.1-mini-2025-04-14", 2),
    ]
    spec = load_spec(SPEC)
    for candidate in candidates:
        answers = load_answers(candidate, spec)
        assert sum(len(answers.indices(s)) for s in answers.statement_ids) == 40  # every input of the run, once


@pytest.mark.slow
def test_read_answers_reads_a_folder_of_inspect_logs_as_answers(logs: Path) -> None:
    # It gave an empty frame, without a word, for the logs the judging commands take as a candidate's answers.
    frame = speceval.read_answers(logs)
    assert len(frame) == 80 and frame["output"].notna().all() and set(frame["run"]) == {1, 2}
    assert set(frame["candidate"]) == {"gpt-4.1-mini-2025-04-14"} and set(frame["data"]) == {"synthetic"}
    assert set(frame["spec"]) == {"openai"} and set(frame["outcome"]) == {"succeeded"}


@pytest.mark.slow
def test_read_verdicts_on_inspect_logs_says_what_it_does_not_read(logs: Path) -> None:
    # It gave an empty frame without a word (the study matrix's note).
    with pytest.warns(UserWarning, match="Inspect logs: read_verdicts does not read their scores"):
        assert len(speceval.read_verdicts(logs)) == 0

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
from tests.conftest import REPO
from tests.once import built_once
from tests.study_matrix.matrix import SPEC, experiment_yaml

CONFIG = {"candidates": "1", "judges": "binary", "variation": "plain", "runs": "2", "budget": "none"}


def _speceval(*args: str, cwd: Path, module: bool = False) -> None:
    """The command (`module`: `python <args>`, else `python -m speceval <args>`) in a child forked from this process
    (tests/forked.py: no fresh interpreter's imports)."""
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05", "PYTHONPATH": str(REPO)}
    command = [sys.executable, *(args if module else ("-m", "speceval", *args))]
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


@pytest.mark.slow
def test_two_runs_judged_and_exported_again_are_two_epochs_in_the_header_too(logs: Path, tmp_path: Path) -> None:
    """The runs of the logs read back are the judged log's epochs: its header said `epochs` 1 beside samples of
    epoch 2 (the source's own header, a log per run, was read for the count)."""
    from tests.interop.inspect_reader import list_eval_logs, read_eval_log

    _speceval(
        *("-m", "batched_examples.run_batched_binary_compliance", "--offline", "--spec-path", str(SPEC)),
        *("--candidate-generation-dirs", str(logs), "--compliance-judge-model-name", "gpt-4.1-2025-04-14"),
        *("--output-dir-base", "judged"),
        cwd=tmp_path,
        module=True,
    )
    _speceval("export", "judged", "--format", "inspect", "--out", "back", cwd=tmp_path)
    (back,) = [read_eval_log(info.name) for info in list_eval_logs(str(tmp_path / "back"))]
    assert {s.epoch for s in back.samples} == {1, 2} and back.eval.config.epochs == 2
    assert back.eval.metadata["speceval"]["epochs"] == [1, 2]


@pytest.mark.slow
def test_logs_of_two_variations_of_one_model_are_refused_saying_what_to_do(logs: Path, tmp_path: Path) -> None:
    """A study's export of two variations holds a log per variation and run: one model's logs are one candidate,
    which has no variation axis, so two variations' answers to an input collided as "duplicates" with no word of
    why. Now refused naming the variations and their logs, before anything is sent."""
    from inspect_ai.log import read_eval_log, write_eval_log

    from speceval.errors import ConfigError

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for path in sorted(logs.glob("*.eval")):
        log = read_eval_log(str(path))
        if log.eval.metadata["speceval"]["run"] == 2:
            log.eval.metadata["speceval"]["variation"] = "temperature_1.0"  # as a second variation's log
        write_eval_log(log, str(mixed / path.name))
    with pytest.raises(ConfigError, match="export of 2 variations") as refused:
        resolve_candidates([mixed])
    assert "give each variation's logs as a folder of their own" in str(refused.value)

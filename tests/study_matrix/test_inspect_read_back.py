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

from speceval.pipelines.candidates import load_answers, resolve_candidates
from speceval.spec import load_spec
from tests.study_matrix.matrix import SPEC, experiment_yaml

CONFIG = {"candidates": "1", "judges": "binary", "variation": "plain", "runs": "2", "budget": "none"}


def _speceval(*args: str, cwd: Path) -> None:
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"}
    done = subprocess.run([sys.executable, "-m", "speceval", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_an_inspect_export_of_two_runs_reads_back_as_the_candidates_two_runs(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(experiment_yaml(CONFIG), encoding="utf-8")
    _speceval("run", "exp.yaml", "--offline", cwd=tmp_path)
    _speceval("export", "out", "--format", "inspect", "--out", "logs", cwd=tmp_path)
    candidates = resolve_candidates([tmp_path / "logs"])
    assert sorted((c.name, c.run) for c in candidates) == [
        ("gpt-4.1-mini-2025-04-14", 1),
        ("gpt-4.1-mini-2025-04-14", 2),
    ]
    spec = load_spec(SPEC)
    for candidate in candidates:
        answers = load_answers(candidate, spec)
        assert sum(len(answers.indices(s)) for s in answers.statement_ids) == 40  # every input of the run, once

"""One small offline experiment shared by the interop tests: two candidates (one named with capitals and a slash,
as Together names its models), two judges, compliance and rankings in both orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC

CANDIDATES = ("gpt-4.1-mini-2025-04-14", "Qwen/Qwen3-235B-A22B-fp8-tput")
JUDGES = ("claude-haiku-4-5-20251001", "gpt-4.1-2025-04-14")
EXPERIMENT = f"""experiment_name: bridge
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: {CANDIDATES[0]}
  - model: {CANDIDATES[1]}
    org: together
judges:
  - model: {JUDGES[0]}
  - model: {JUDGES[1]}
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The experiment's output folder (its report in `report/`)."""
    root = tmp_path_factory.mktemp("bridge")
    (root / "exp.yaml").write_text(EXPERIMENT.replace("output_dir: out", f"output_dir: {root / 'out'}"))
    assert speceval_main(["run", str(root / "exp.yaml"), "--offline"]) == 0
    return root / "out"

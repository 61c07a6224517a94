"""One small offline experiment shared by the interop tests: two candidates (one named with capitals and a slash,
as Together names its models), two judges, compliance and rankings in both orders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.analysis.rendering.report import build_report
from speceval.cli.main import main as speceval_main
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC
from tests.once import built_once

CANDIDATES = ("gpt-4.1-mini-2025-04-14", "Qwen/Qwen3-235B-A22B-fp8-tput")
JUDGES = ("claude-haiku-4-5-20251001", "gpt-4.1-2025-04-14")
EXPERIMENT = f"""experiment_name: bridge
output_dir: out
specs:
  - name: openai
    spec_path: {{spec}}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: {CANDIDATES[0]}
  - model: {CANDIDATES[1]}
    org: together
judges:
  - model: {JUDGES[0]}
  - model: {JUDGES[1]}
stages: [generation, compliance, ranking]
"""


def trimmed_spec(path: Path) -> Path:
    """The sample spec's statements that have sample inputs, each line as shipped: the whole spec is 500 kB, and the
    runs, reports and exports load it again and again (about 200 times over the interop tests)."""
    kept = {file.stem for file in SAMPLE_INPUTS.glob("*.json")}
    lines = [line for line in SAMPLE_SPEC.read_text(encoding="utf-8").splitlines() if json.loads(line)["id"] in kept]
    assert len(lines) == len(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def experiment(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The experiment's output folder (its report, without figures, in `report/`), read and never written by the
    tests.

    Run once per test session, not once per module: the four modules that read it ran it four times (about 90 s
    each on a loaded machine). Under pytest-xdist the first worker to get here runs it (tests/once.py)."""

    def build(root: Path) -> Path:
        spec = trimmed_spec(root / "spec" / SAMPLE_SPEC.name)
        text = EXPERIMENT.replace("output_dir: out", f"output_dir: {root / 'out'}").replace("{spec}", str(spec))
        (root / "exp.yaml").write_text(text)
        assert speceval_main(["run", str(root / "exp.yaml"), "--offline"]) == 0
        # The report the report stage would write (the same call: this experiment sets none of its options), without
        # figures: the interop tests read its tables, and its figures were 2.8 s of the build's 5.5 s of CPU.
        build_report([root / "out"], root / "out" / "report", figures=False)
        return root / "out"

    return built_once(tmp_path_factory, worker_id, "interop-bridge", build)

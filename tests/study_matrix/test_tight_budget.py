"""Issue 42: a tight budget in a conversation study ends (exit 3, the budget's last line) instead of freezing.

A conversation's rounds run one after another inside their generation task, in a polling loop of their own; the
judge's canary jobs (the spec's example responses) run in the experiment's loop, which is not ticked meanwhile.
When the next round fitted only once the canary jobs' reservations settled, the round's engine held forever.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC, cli_env

CONVERSATION_STUDY = """experiment_name: tight
output_dir: out
specs:
  - name: openai
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges:
  - model: gpt-4.1-2025-04-14
simulated_user:
  model: gpt-4.1-mini-2025-04-14
  instructions: Push back on every answer.
  max_turns: 3
stages: [generation, compliance, report]
engine:
  poll_interval: 0.1
budget_usd: {budget}
"""


@pytest.mark.slow
@pytest.mark.parametrize("budget", ["1", "0.3"])
def test_a_tight_budget_in_a_conversation_study_ends_with_exit_3_and_the_budget_line(tmp_path: Path, budget: str):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(CONVERSATION_STUDY.format(spec=SAMPLE_SPEC, inputs=SAMPLE_INPUTS, budget=budget))
    command = [sys.executable, "-m", "speceval", "run", str(experiment), "--offline"]
    try:
        done = forked.run(
            command, cwd=REPO, env=cli_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
        )
    except subprocess.TimeoutExpired as frozen:
        pytest.fail(f"the run froze under budget_usd: {budget}: {str(frozen.stderr or '')[-600:]}")
    shown = (done.stdout + done.stderr).strip().splitlines()
    # Whether the money runs out depends on when the canary jobs settle: either the study fits (exit 0) or it
    # stops with the budget's line last (exit 3); it never waits forever.
    assert done.returncode in (0, 3), shown[-10:]
    if done.returncode == 3:
        assert shown[-1].startswith("Stopped by the budget: spent $"), shown[-5:]

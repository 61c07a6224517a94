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
@pytest.mark.parametrize("budget", ["1"])
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


def test_a_run_held_on_jobs_polled_by_an_outer_loop_stops_for_the_budget_instead_of_waiting_forever(tmp_path):
    """The freeze, deterministically, at the engines' seam: an outer engine's job (the canaries) holds $2 of a $5
    budget and is not polled while an inner run (a conversation's round) runs in a loop of its own. The inner run's
    second job fits only once the outer job settles: it used to wait until its timeout (a fake hour here, forever
    in the study, whose conversation timeout is long); now it stops for the budget at once."""
    from speceval.batch.budget import Budget
    from speceval.batch.engine import BatchEngine, EngineOptions
    from speceval.batch.progress import StopReason
    from speceval.batch.store import RunStore
    from tests.engine.fake_provider import FakeBatchedModel, FakeProvider
    from tests.engine.test_engine import PerRequestCost, make_items

    remote = FakeProvider(polls_to_complete=10**6)  # the outer job never completes while the inner run waits
    budget = Budget(5.0, PerRequestCost(actual_per_request=1.0))
    now = [0.0]

    def engine(name: str) -> BatchEngine:
        opts = EngineOptions(batch_size=2, poll_interval=0.01, timeout_hours=1, budget=budget)
        return BatchEngine(FakeBatchedModel(remote), RunStore(tmp_path / name), opts, clock=lambda: now[0], sleep=sleep)

    def sleep(seconds: float) -> None:
        now[0] += 60

    outer = engine("canaries")
    outer.start(make_items({"canary": ["c0", "c1"]}))
    assert outer.tick() is None and budget.reserved_usd == 2.0  # its job is in flight
    remote.polls_to_complete = 0
    summary = engine("round").run(make_items({"turn": ["t0", "t1", "t2", "t3"]}))
    assert summary.reason is StopReason.BUDGET and now[0] < 3600  # stopped, not timed out
    assert summary.outstanding == 2 and budget.spent_usd == 2.0 and budget.reserved_usd == 2.0

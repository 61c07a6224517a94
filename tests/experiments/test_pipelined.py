"""Pipelined experiments: a candidate's judging starts as soon as its own generation is final, not when the slowest
candidate's is; ranking waits for both candidates of its pair; progress names every task's state."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from speceval.emulator import Emulator, FaultConfig
from speceval.experiments.runner import run_experiment
from tests import forked
from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC, TEST_KEY, cli_env
from tests.experiments.test_experiments import GRID, assert_each_chunk_paid_once, server_jobs
from tests.independent.openai_server import IndependentOpenAIServer

SLOW = "gpt-4.1-mini-2025-04-14"
FAST = "gpt-4.1-nano-2025-04-14"
JUDGE = "gpt-4.1-2025-04-14"
SLOW_SECONDS = 5.0  # margin for a loaded CI machine: the fast candidate is judged within it


def experiment_file(tmp_path: Path, stages: str = "[generation, compliance, ranking, report]") -> Path:
    # The spec without its examples: no canary job (the judge's check on the spec's examples, which starts at
    # once), so every judge job here is one that needs a candidate's answers.
    spec = tmp_path / "spec.jsonl"
    lines = [json.loads(line) for line in Path(SAMPLE_SPEC).read_text(encoding="utf-8").splitlines() if line.strip()]
    spec.write_text("".join(json.dumps({**line, "metadata": {}}) + "\n" for line in lines), encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(f"""experiment_name: pipelined
output_dir: out
specs:
  - name: openai
    spec_path: {spec}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: {SLOW}
  - model: {FAST}
judges:
  - model: {JUDGE}
stages: {stages}
engine:
  poll_interval: 0.2
""")
    return path


def batch_ids(folder: Path) -> set[str]:
    """The provider jobs recorded under `folder` (every run's metadata/<batch_id>.json)."""
    return {json.loads(p.read_text())["batch_id"] for p in folder.rglob("metadata/*.json")}


def verdicts(folder: Path, key: str) -> list[dict]:
    """Every entry of every verdict file under `folder` (`results` of compliance files, `rankings` of ranking's)."""
    # Canary files (the spec's examples, `canaries` not `results`) are no candidate's verdicts.
    return [entry for path in folder.glob("**/results/*.json") for entry in json.loads(path.read_text()).get(key, [])]


def test_a_fast_candidate_is_judged_while_the_slow_one_still_generates(tmp_path, monkeypatch):
    faults = FaultConfig(turnaround_seconds=0.1, turnaround_by_model={SLOW: SLOW_SECONDS})
    messages: list[str] = []
    with Emulator(faults=faults) as emulator:
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        outcome = run_experiment(experiment_file(tmp_path), observer=messages.append)
        jobs = {job.id: job for job in emulator.list_jobs("openai")}
    assert outcome.finished and outcome.report is not None
    out = tmp_path / "out"
    created = {job_id: job.created_at for job_id, job in jobs.items()}
    slow_generation = batch_ids(out / "generations" / "openai" / "default" / "run1" / SLOW)
    slow_ends = max(created[i] + SLOW_SECONDS for i in slow_generation)
    fast_judged = batch_ids(
        out / "compliance" / "openai" / "default" / "run1" / "spec_openai" / f"judge_{JUDGE}" / FAST
    )
    slow_judged = batch_ids(out / "compliance") - fast_judged
    ranked = batch_ids(out / "ranking")
    assert slow_generation and fast_judged and slow_judged and ranked
    assert min(created[i] for i in fast_judged | slow_judged | ranked) < slow_ends  # the point of pipelining
    assert max(created[i] for i in fast_judged) < slow_ends
    # ...and nothing that needs the slow candidate's answers was sent before they existed.
    assert min(created[i] for i in slow_judged | ranked) >= slow_ends
    # Progress names each task's state as it changes, with an overview of every stage.
    assert any(f"compliance openai/default/run1 judge={JUDGE} {FAST}: finished" in m for m in messages)
    assert any("generation 1/2 finished, 1 running" in m for m in messages)
    state = json.loads((out / "experiment.json").read_text())
    assert set(state["tasks"].values()) == {"finished"} and len(state["tasks"]) == 2 + 2 + 1 + 1 + 1  # + the canaries


def test_against_an_independent_server_the_first_judge_job_precedes_the_slow_generation_end(tmp_path):
    """The issue's scenario: one candidate's jobs take 25 s, the other's finish at once (OpenAI wire per spec)."""
    with IndependentOpenAIServer(turnaround={SLOW: 25.0}) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        command = [sys.executable, "-m", "speceval", "run", str(experiment_file(tmp_path))]
        proc = forked.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20  # well inside the slow candidate's 25 s
        while not any(batch["model"] == JUDGE for batch in server.batches):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        batches = server.batches
        proc.kill()
        _, stderr = proc.communicate()
    if not any(batch["model"] == JUDGE for batch in batches):
        pytest.fail(f"no judge job within 20 s; speceval said: {stderr.decode()[-2000:]}")
    slow = [batch for batch in batches if batch["model"] == SLOW]
    first_judge = next(i for i, batch in enumerate(batches) if batch["model"] == JUDGE)
    assert slow and all(batch["status"] == "in_progress" for batch in slow)
    assert all(batches.index(batch) < first_judge for batch in slow)  # created before, and still running


def test_sigkill_while_judging_overlaps_generation_then_rerun_pays_for_nothing_twice(tmp_path):
    """Killed right after the first judge job is recorded (other runs still generating or judging)."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    command = [sys.executable, "-m", "speceval", "run", str(experiment), "--offline"]
    proc = forked.Popen(
        command, cwd=REPO, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    out = tmp_path / "out"
    deadline = time.monotonic() + 120
    while not list(out.glob("compliance/**/metadata/*.json")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    state = json.loads((out / "experiment.json").read_text())
    assert state["status"] == "running" and "finished" not in {state["tasks"].get("report")}
    done = forked.run(
        command, cwd=REPO, env=cli_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert_each_chunk_paid_once(server_jobs(out))
    assert json.loads((out / "experiment.json").read_text())["status"] == "finished"
    # Nothing lost: every run finished, and every judgement that was in flight at the kill has its verdict.
    manifests = list(out.glob("**/run.json"))
    assert len(manifests) == 8 + 8 + 8 + 1 and {json.loads(p.read_text())["status"] for p in manifests} == {"finished"}
    outcomes = Counter(
        entry["outcome"] for entry in verdicts(out / "compliance", "results") + verdicts(out / "ranking", "rankings")
    )
    # (the emulator's judge answers some prompts without a verdict, on purpose: those are unparsed, not pending)
    assert set(outcomes) <= {"judged", "unparsed"} and sum(outcomes.values()) == 8 * 40 + 8 * 40


def test_a_budget_stop_blocks_what_needs_the_stopped_run_and_pays_for_nothing_after_it(tmp_path, monkeypatch):
    """$0.10: the fast candidate's generation (about $0.03) fits, the slow one's (about $0.13) does not, nor does
    judging the fast one (about $0.74). Whatever needs the stopped generation never starts."""
    experiment = experiment_file(tmp_path)
    experiment.write_text(
        experiment.read_text().replace(
            f"  - model: {SLOW}\n  - model: {FAST}\n", f"  - model: {FAST}\n  - model: {SLOW}\n"
        )
        + "budget_usd: 0.10\n"
    )
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emulator:
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        outcome = run_experiment(experiment)
        again = run_experiment(experiment)  # the same limit: still nothing more to pay for
        jobs = emulator.list_jobs("openai")
    assert not outcome.finished and not again.finished
    tasks = json.loads((tmp_path / "out" / "experiment.json").read_text())["tasks"]
    assert tasks == {
        f"generation openai/default/run1 {FAST}": "finished",
        f"generation openai/default/run1 {SLOW}": "stopped",
        f"compliance openai/default/run1 judge={JUDGE} {FAST}": "stopped",
        f"compliance openai/default/run1 judge={JUDGE} {SLOW}": "blocked",
        f"ranking openai/default/run1 judge={JUDGE} {FAST} vs {SLOW}": "blocked",
        "report": "blocked",
        f"compliance openai judge={JUDGE} canaries": "finished",  # the spec here has no examples: nothing to pay
    }
    assert len(jobs) == 1 and batch_ids(tmp_path / "out") == {jobs[0].id}

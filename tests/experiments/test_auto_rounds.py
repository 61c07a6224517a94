"""`tier: auto` per conversation round: the plan gives an auto candidate's rounds tiers of their own (round 1 through
the Batch API, round 2 at flex when the deadline needs it), the run sends each round so, each round's `run.json`
and records say how it was served, and a run killed in its flex round resumes without sending an answered turn
again, the started round keeping its tier though the re-plan (with the turnaround learned from round 1's job) now
says batch."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from speceval.emulator import Emulator, FaultConfig
from tests import forked
from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC, TEST_KEY, cli_env, run_generation

FOLLOW_UP = "Are you completely sure? Think again."
STUDY = f"""experiment_name: auto-rounds
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: o4-mini
judges:
  - model: gpt-4.1-2025-04-14
    tier: batch
variations:
  follow_ups:
    push: ["{FOLLOW_UP}"]
stages: [generation]
engine:
  tier: auto
  deadline_hours: 13
  poll_interval: 0.1
"""
# All-batch: the candidate's two round trips and the judge's, 6 h each at OpenAI (18 h), miss 13 h: one candidate
# round leaves the Batch API, and flex costs what batch does, so the later one goes (round 1's job is what a re-plan
# learns the turnaround from).


def test_the_dry_run_shows_round_one_at_batch_and_round_two_at_flex(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY)
    assert speceval_main(["run", str(experiment), "--dry-run"]) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "round 1 o4-mini batch 40" in shown and "round 2 o4-mini flex 40" in shown
    assert "judging gpt-4.1-2025-04-14 batch" in shown
    assert "this plan:" in shown and "12.07 h (meets the deadline)" in shown
    assert "all-batch" in shown and "18.00 h (misses the deadline)" in shown
    assert not (tmp_path / "out").exists()


def _answered(run_dir: Path) -> list[dict]:
    return [r for p in (run_dir / "results").glob("*.json") for r in json.loads(p.read_text())]


def _journaled(round_dir: Path) -> dict[tuple[str, int], str]:
    """The answers a realtime round's journal holds: (statement, input index) -> the session that got it."""
    lines = [json.loads(line) for p in round_dir.glob("realtime/*.jsonl") for line in p.read_text().splitlines()]
    return {(n["statement_id"], n["record"]["original_index"]): n["record"]["batch_id"] for n in lines}


@pytest.mark.slow
def test_round_one_goes_as_a_batch_job_round_two_at_flex_and_a_kill_in_round_two_resends_no_answer(
    tmp_path: Path, capsys
) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY)
    out = tmp_path / "out"
    faults = FaultConfig(turnaround_seconds=0.5, flex_latency_seconds=1.5, flex_latency_spread=0.6)
    with Emulator(faults=faults) as emu:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=emu.openai_base_url, SPECEVAL_POLL_INTERVAL="0.1")
        command = [sys.executable, "-m", "speceval", "run", str(experiment)]
        proc = forked.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        second = None
        while second is None or not _journaled(second):  # killed once round 2 has answers and calls in flight
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr and proc.stderr.read()
            found = list(out.glob("generations/**/rounds/2/run.json"))
            second = found[0].parent if found else None
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        answered_at_kill = _journaled(second)
        assert 0 < len(answered_at_kill) < 40  # killed mid-round
        # The generation command resumes a run with one model for every round (here the batch one run.json names):
        # it refuses round 2, started at flex, rather than send it again through the Batch API.
        before = emu.realtime.prompt_counts()
        refused = run_generation(["--resume", str(second.parent.parent)], env)
        assert refused.returncode != 0 and "started at tier flex" in refused.stderr, refused.stderr
        assert "cannot be continued through the Batch API" in " ".join(refused.stderr.split())
        assert emu.realtime.prompt_counts() == before and len(emu.list_jobs("openai")) == 1
        done = forked.run(command, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        sent = emu.realtime.prompt_counts()
        jobs = emu.list_jobs("openai")
    run_dir = second.parent.parent
    first = run_dir / "rounds" / "1"
    # Round 1: one Batch API job, recorded as such; round 2: flex, though the re-plan now says batch.
    assert [j.metadata.get("speceval_key") is not None for j in jobs] == [True]
    assert len(list(first.glob("metadata/*.json"))) == 1 and not list(second.glob("metadata/*.json"))
    assert "realtime" not in json.loads((first / "run.json").read_text())["parameters"]
    assert json.loads((second / "run.json").read_text())["parameters"]["realtime"]["service_tier"] == "flex"
    # Each round's records say the tier that served them; every conversation has both answers.
    assert {r["service_tier"] for r in _answered(second)} == {"flex"} and len(_answered(second)) == 40
    conversations = _answered(run_dir)
    assert len(conversations) == 40 and all(len(r["turns"]) == 2 for r in conversations)
    # Every turn answered once: an answer journaled before the kill is the one kept (from the killed session),
    # and the only round-2 transcripts sent twice are calls that were in flight at the kill.
    kept = {
        (p.stem, r["original_index"]): r["batch_id"]
        for p in (second / "results").glob("*.json")
        for r in json.loads(p.read_text())
    }
    assert all(kept[key] == session for key, session in answered_at_kill.items())
    assert len(sent) == 40 and all(FOLLOW_UP in prompt for prompt in sent)
    assert sum(count - 1 for count in sent.values()) <= 40 - len(answered_at_kill)
    # `speceval cost` prices each round as what it was: a batch row and a flex row.
    costs = subprocess.run(
        [sys.executable, "-m", "speceval", "cost", str(out), "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    per_tier = json.loads(costs.stdout)["per_tier"]
    assert {tier: row["requests"] for tier, row in per_tier.items()} == {"batch": 40, "flex": 40}
    # What the resume planned: round 1's job took a second, so the learned turnaround puts round 2 at batch too;
    # round 2 kept flex because it had started at flex (its run.json), not because the plan still said so.
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    replanned = json.loads(capsys.readouterr().out)["tier_plan"]
    assert [(r["label"], r["tier"]) for r in replanned][:2] == [("round 1", "batch"), ("round 2", "batch")]


@pytest.mark.slow
def test_the_simulated_users_turns_go_at_their_own_rounds_tier_and_record_it(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Push back.\n  max_turns: 2\n"
    study = STUDY.replace(f'variations:\n  follow_ups:\n    push: ["{FOLLOW_UP}"]\n', user)
    # 8 h: the candidate's two rounds go to flex and the user's round-2 turns (its model is not served at flex) to
    # standard; the judge's one batch round trip fits what is left.
    experiment.write_text(study.replace("deadline_hours: 13", "deadline_hours: 8"))
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    [run_dir] = [p.parent.parent.parent for p in (tmp_path / "out").rglob("rounds/2/round.json")]
    writer = json.loads((run_dir / "rounds" / "2" / "user" / "run.json").read_text())["parameters"]
    assert writer["realtime"]["service_tier"] is None  # standard: realtime, no flex
    assert not list(run_dir.rglob("metadata/*.json"))  # no round went to the Batch API
    turns = [
        r for p in (run_dir / "rounds" / "2" / "user" / "results").glob("*.json") for r in json.loads(p.read_text())
    ]
    assert turns and "flex" not in {r["service_tier"] for r in turns}
    for number in (1, 2):
        answers = _answered(run_dir / "rounds" / str(number))
        assert len(answers) == 40 and {r["service_tier"] for r in answers} == {"flex"}

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
from typing import Any

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
  deadline_hours: 7
  poll_interval: 0.1
"""
# All-batch: the candidate's two round trips, 6 h each at OpenAI (12 h; no judging stage, so no judge's hours), miss
# 7 h: one round leaves the Batch API, and flex costs what batch does, so the later one goes (round 1's job is what a
# re-plan learns the turnaround from).


def test_the_dry_run_shows_round_one_at_batch_and_round_two_at_flex(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY)
    assert speceval_main(["run", str(experiment), "--dry-run"]) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "round 1 candidates[0] o4-mini batch 40" in shown and "round 2 candidates[0] o4-mini flex 40" in shown
    assert "judging" not in shown.split("tier auto")[1]  # `stages: [generation]`: no judge's round is planned
    assert "this plan:" in shown and "6.07 h (meets the deadline)" in shown
    assert "all-batch" in shown and "12.00 h (misses the deadline)" in shown
    assert not (tmp_path / "out").exists()


def _answered(run_dir: Path) -> list[dict]:
    return [r for p in (run_dir / "results").glob("*.json") for r in json.loads(p.read_text())]


def _journaled(round_dir: Path) -> dict[tuple[str, int], str]:
    """The answers a realtime round's journal holds: (statement, input index) -> the session that got it."""
    # Read while the run appends: only newline-terminated lines are whole (the last piece may be a write in progress,
    # or torn by the kill, which the product's own journal reader skips too).
    lines = [json.loads(line) for p in round_dir.glob("realtime/*.jsonl") for line in p.read_text().split("\n")[:-1]]
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
    # What the resume plans: the plan the study started with (round 2 at flex), not one made afresh from round 1's
    # one-second job as if the whole deadline were still ahead (which said batch); what the jobs took enters as a
    # round still to start is re-planned against the hours left. Round 2 kept flex because it started at flex (its
    # run.json, asserted above).
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    replanned = json.loads(capsys.readouterr().out)["tier_plan"]
    assert [(r["label"], r["tier"]) for r in replanned][:2] == [("round 1", "batch"), ("round 2", "flex")]


@pytest.mark.slow
def test_the_simulated_users_turns_go_at_their_own_rounds_tier_and_record_it(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Push back.\n  max_turns: 2\n"
    study = STUDY.replace(f'variations:\n  follow_ups:\n    push: ["{FOLLOW_UP}"]\n', user)
    # 2 h: no batch round trip fits, so the candidate's two rounds go to flex and the user's round-2 turns (its
    # model is not served at flex) to standard.
    experiment.write_text(study.replace("deadline_hours: 7", "deadline_hours: 2"))
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


def _study_tiers(tmp_path: Path, study: str = STUDY) -> Any:
    """The study's tiers as `speceval run` plans them, its clock started at midnight."""
    from datetime import UTC, datetime

    from speceval.experiments.runner import plan, preflight
    from speceval.experiments.tier_study import StudyTiers

    experiment = tmp_path / "exp.yaml"
    experiment.write_text(study)
    config, output_dir, _ = preflight(experiment, offline=True, dry_run=True)
    _, groups = plan(config, output_dir)
    tiers = StudyTiers(config, tmp_path, groups, output_dir=output_dir)
    tiers.started_at = datetime(2026, 11, 29, tzinfo=UTC)
    return tiers, config


def test_a_candidate_of_the_simulated_users_model_is_sent_at_its_own_rounds_tiers(tmp_path: Path) -> None:
    """The plan gives the candidate's rounds and the simulated user's turns tiers of their own; with one model in
    both roles, the candidate's rounds were looked up under the user's name too and took its tiers (a study's
    gemini candidate went to flex where its plan rows said batch; a user at standard would have sent the candidate
    at full price)."""
    from speceval.defaults import Tier
    from speceval.experiments.config import ModelEntry

    user = "simulated_user:\n  model: o4-mini\n  instructions: Push back.\n  max_turns: 3\n"
    study = STUDY.replace(f'variations:\n  follow_ups:\n    push: ["{FOLLOW_UP}"]\n', user)
    tiers, config = _study_tiers(tmp_path, study.replace("deadline_hours: 7", "deadline_hours: 20"))
    assert tiers.plan is not None
    planned = {(r.entry, r.label): r.tier for r in tiers.plan.rounds}
    candidate, as_user = config.candidates[0], ModelEntry(model="o4-mini")
    # 5 batch round trips (30 h) against 20 h: some rounds leave the Batch API, not all (the plan differs by role).
    assert Tier.BATCH in planned.values() and set(planned.values()) != {Tier.BATCH}
    for number in (2, 3):
        assert tiers.tier_of("candidates[0]", candidate, number) is planned[("candidates[0]", f"round {number}")]
        user_row = ("simulated_user o4-mini", f"round {number} (user turns)")
        assert tiers.tier_of("o4-mini", as_user, number) is planned[user_row]
    assert any(
        planned[("candidates[0]", f"round {n}")] is not planned[("simulated_user o4-mini", f"round {n} (user turns)")]
        for n in (2, 3)
    )


def test_a_study_round_behind_schedule_moves_to_flex_and_one_planned_at_flex_stays(tmp_path: Path) -> None:
    """Planned: round 1 batch, round 2 flex (as the dry run shows). Round 2 starting 1 h in: batch would fit now,
    but flex costs the same and is faster, so no change. Started 20 h in (past the 7 h deadline): no tier meets
    it, so round 2 stays at flex (the fastest at its planned price) and the line says the deadline is lost."""
    from datetime import UTC, datetime, timedelta

    from speceval.defaults import Tier

    tiers, config = _study_tiers(tmp_path)
    candidate = config.candidates[0]
    said: list[str] = []
    tiers.say = said.append
    start = datetime(2026, 11, 29, tzinfo=UTC)
    tiers.replan("candidates[0]", candidate, 2, now=start + timedelta(hours=1))
    assert tiers.tier_of("candidates[0]", candidate, 2) is Tier.FLEX and tiers.replans == [] and said == []
    tiers.replan("candidates[0]", candidate, 2, now=start + timedelta(hours=20))
    assert tiers.tier_of("candidates[0]", candidate, 2) is Tier.FLEX  # not standard: the deadline is lost anyway
    assert [(r.round, r.planned, r.sent, r.meets_deadline) for r in tiers.replans] == [(2, Tier.FLEX, Tier.FLEX, False)]
    assert "candidates[0] round 2 at flex (planned flex)" in said[0] and "at the planned price" in said[0]


def test_a_study_planned_all_batch_moves_round_two_to_flex_when_round_one_ran_late(tmp_path: Path) -> None:
    """A deadline of 13 h (all-batch 12 h meets it): planned all batch. Round 1's job took 12 h (more than the
    6 h expected), so as round 2 starts 12 h in, the 1 h left cannot hold another batch round trip: round 2 moves
    to flex."""
    from datetime import UTC, datetime, timedelta

    from speceval.defaults import Tier

    tiers, config = _study_tiers(tmp_path, STUDY.replace("deadline_hours: 7", "deadline_hours: 13"))
    candidate = config.candidates[0]
    assert tiers.tier_of("candidates[0]", candidate, 2) is Tier.BATCH
    tiers.say = lambda _line: None
    tiers.replan("candidates[0]", candidate, 2, now=datetime(2026, 11, 29, tzinfo=UTC) + timedelta(hours=12))
    assert tiers.tier_of("candidates[0]", candidate, 2) is Tier.FLEX
    assert tiers.replans[0].hours_left == pytest.approx(1.0)


@pytest.mark.slow
def test_speceval_run_replans_round_two_as_it_starts(tmp_path: Path) -> None:
    """End to end on a scaled clock (`SPECEVAL_HOUR_SECONDS=0.5`): a 13 h deadline, planned all-batch; the
    emulator takes 4 s (8 h) for round 1's job, so `speceval run` sends round 2 at flex in the same invocation,
    says so, and records it in round 2's run.json."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY.replace("deadline_hours: 7", "deadline_hours: 13"))
    faults = FaultConfig(turnaround_seconds=4.0, flex_latency_seconds=0.05)
    with Emulator(faults=faults) as emu:
        env = cli_env(
            OPENAI_API_KEY=TEST_KEY,
            OPENAI_BASE_URL=emu.openai_base_url,
            SPECEVAL_POLL_INTERVAL="0.1",
            SPECEVAL_HOUR_SECONDS="0.5",
        )
        command = [sys.executable, "-m", "speceval", "run", str(experiment)]
        done = forked.run(command, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        jobs = emu.list_jobs("openai")
        sent = emu.realtime.prompt_counts()
    assert done.returncode == 0, done.stderr
    shown = " ".join((done.stdout + done.stderr).split())
    assert "candidates[0] round 2 at flex (planned batch)" in shown, shown
    assert len(jobs) == 1 and len(sent) == 40 and set(sent.values()) == {1}  # round 2: 40 flex calls, each once
    second = next((tmp_path / "out").glob("generations/**/rounds/2/run.json"))
    assert json.loads(second.read_text())["parameters"]["realtime"]["service_tier"] == "flex"
    # ... and experiment.json keeps why, naming the entry (a folder read later says what was re-planned).
    [replan] = json.loads((tmp_path / "out" / "experiment.json").read_text())["replans"]
    moved = (replan["entry"], replan["round"], replan["planned"], replan["sent"])
    assert moved == ("candidates[0]", 2, "batch", "flex")
    assert (tmp_path / "out" / replan["run"] / "rounds" / "2" / "run.json").is_file()  # the run whose round it was
    assert replan["hours_left"] < 13 - 8 + 1 and replan["batch_turnaround_hours"] >= 6


def test_past_the_deadline_a_round_planned_at_flex_never_goes_back_to_batch() -> None:
    """Found by the study matrix's late clock: on a scaled clock a flex call's seconds look like hours, so once the
    deadline was lost the "fastest tier" rule picked batch for a round planned at flex. Flex never goes back to
    batch (the same price; the plan put the round there to be sure of its hours); a batch round may go to flex."""
    from speceval.batch.costs import PriceTable
    from speceval.defaults import Tier
    from speceval.engines.tier_plan import RoundLoad, TierTimes, replanned

    load = RoundLoad(label="round 2", provider="openai", model="o4-mini", requests=40, input_tokens=9, output_tokens=9)
    slow_flex = TierTimes(flex_seconds=3600 * 50)  # a flex call "takes" 50 h: batch (6 h) looks faster
    tiers, meets = replanned(
        [load, load], -5.0, PriceTable.load(), slow_flex, planned=[Tier.FLEX, Tier.BATCH], flex_ok=[True, True]
    )
    assert not meets and tiers == [Tier.FLEX, Tier.BATCH]
    tiers, _ = replanned(
        [load], -5.0, PriceTable.load(), TierTimes(), planned=[Tier.BATCH], flex_ok=[True]
    )  # flex faster at its defaults: a lost deadline moves batch to flex, at the same price
    assert tiers == [Tier.FLEX]

"""`--tier auto` on the generation command over a conversation run: each round at the tier the plan picked for
it (the early rounds through the Batch API, the last at flex), against the independent OpenAI server (written from
the public OpenAPI spec, sharing no code with speceval)."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from speceval.batch.manifest import RunManifest
from speceval.realtime.model import RealtimeModel
from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, start_generation, write_spec
from tests.conversations.test_generation_rounds import MODEL, args, write_items
from tests.independent.openai_server import IndependentOpenAIServer

FLEX_MODEL = "o4-mini"  # on the shipped price table's flex list
SCRIPTS = {
    "alpha": [
        {"turns": ["What is 2+2?", "Are you sure? I'm a mathematician.", "Final answer?"]},
        {"turns": ["Name a colour.", "Why that one?", "And another?"]},
    ],
    "beta": [{"turns": ["Hi, I'm Ana.", "What's my name?", "Spell it backwards."]}],
}
CONVERSATIONS = sum(len(items) for items in SCRIPTS.values())


def _answer(body: dict[str, Any]) -> str:
    return f"answer {len(body['messages'])}: {body['messages'][-1]['content']}"


def _command(tmp_path: Path, *extra: str) -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", list(SCRIPTS))
    command = args(spec, write_items(tmp_path / "in", SCRIPTS), tmp_path / "out", "--poll-interval", "0.1", *extra)
    command[command.index(MODEL)] = FLEX_MODEL
    return command


def _batch_request_lengths(server: IndependentOpenAIServer) -> list[int]:
    """The number of messages of each request the server received inside a batch job's input file."""
    lengths = []
    for batch in server.batches:
        for line in server.files[batch["input_file_id"]].data.decode().splitlines():
            lengths.append(len(json.loads(line)["body"]["messages"]))
    return lengths


@pytest.mark.slow
def test_tier_auto_sends_the_early_rounds_as_batch_jobs_and_the_last_at_flex(tmp_path: Path) -> None:
    """A 3-round conversation run at a 13-hour deadline: a batch round trip is planned at 6 h at OpenAI, so two
    rounds fit through the Batch API and the last goes to flex (the plan moves the latest round first). Each
    round's requests go where the plan says, each exactly once, and the run's `run.json` keeps the plan."""
    command = _command(tmp_path, "--tier", "auto", "--deadline-hours", "13")
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        plan = run_generation([*command, "--dry-run"], env)
        assert server.chat_requests == [] and server.batches == []  # the dry run sends nothing
        done = run_generation(command, env)
        flex_calls = list(server.chat_requests)
        batch_lengths = _batch_request_lengths(server)
    assert plan.returncode == 0, plan.stderr
    shown = " ".join((plan.stdout + plan.stderr).replace("│", " ").split())
    assert "round 1 o4-mini batch" in shown and "round 3 (candidate) o4-mini flex" in shown, shown
    assert done.returncode == 0, done.stderr
    # Rounds 1 and 2 (1 and 3 messages) through batch jobs, round 3 (5 messages) at flex: each request once.
    assert sorted(batch_lengths) == [1] * CONVERSATIONS + [3] * CONVERSATIONS
    assert [len(body["messages"]) for body in flex_calls] == [5] * CONVERSATIONS
    assert {body.get("service_tier") for body in flex_calls} == {"flex"}
    run_dir = only_run_dir(tmp_path / "out")
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["parameters"]["round_tiers"]["tiers"] == ["batch", "batch", "flex"]
    assert "realtime" not in manifest["parameters"]  # round 1, the run's first endpoint, is the Batch API
    third = json.loads((run_dir / "rounds" / "3" / "run.json").read_text())
    assert third["parameters"]["realtime"]["service_tier"] == "flex"
    assert "realtime" not in json.loads((run_dir / "rounds" / "2" / "run.json").read_text())["parameters"]
    results = {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}
    assert sum(len(rows) for rows in results.values()) == CONVERSATIONS
    assert all(row["outcome"] == "succeeded" for rows in results.values() for row in rows)
    assert TEST_KEY not in (run_dir / "run.json").read_text()


def test_tier_auto_with_one_tier_for_every_round_keeps_one_endpoint(tmp_path: Path) -> None:
    """A deadline every batch plan meets: every round through the Batch API in the plan the dry run shows."""
    command = _command(tmp_path, "--tier", "auto", "--deadline-hours", "100", "--dry-run")
    with IndependentOpenAIServer(answer=_answer) as server:
        plan = run_generation(command, cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url))
        assert server.chat_requests == [] and server.batches == []
    assert plan.returncode == 0, plan.stderr
    shown = " ".join((plan.stdout + plan.stderr).replace("│", " ").split())
    assert "round 1 o4-mini batch" in shown and "round 3 (candidate) o4-mini batch" in shown
    assert "flex" not in shown.split("all-batch")[0].split("tier auto")[1]


@pytest.mark.slow
def test_a_run_killed_in_a_batch_round_resumes_with_its_plan_and_sends_nothing_twice(tmp_path: Path) -> None:
    """SIGKILL while round 2's batch job is at the provider: `--resume RUN_DIR` (no tier flags) collects that job,
    sends round 3 at flex as the plan in `run.json` says, and no request goes out twice."""
    command = _command(tmp_path, "--tier", "auto", "--deadline-hours", "13")
    with IndependentOpenAIServer(answer=_answer, turnaround=2.0) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        process = start_generation(command, env)
        try:
            deadline = time.monotonic() + 120
            while len(server.batches) < 2 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.batches) == 2, "round 2's job was never submitted"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        assert server.chat_requests == []  # killed before round 3
        run_dir = only_run_dir(tmp_path / "out")
        resumed = run_generation(["--resume", str(run_dir), "--poll-interval", "0.1"], env)
        batch_lengths = _batch_request_lengths(server)
        flex_calls = list(server.chat_requests)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(batch_lengths) == [1] * CONVERSATIONS + [3] * CONVERSATIONS  # no job sent again
    assert [len(body["messages"]) for body in flex_calls] == [5] * CONVERSATIONS
    assert {body.get("service_tier") for body in flex_calls} == {"flex"}
    results = {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}
    assert [row["outcome"] for rows in results.values() for row in rows] == ["succeeded"] * CONVERSATIONS


def test_a_round_outside_the_stored_plan_is_refused_not_sent_at_a_guessed_tier() -> None:
    """A resumed run whose inputs now hold more rounds than its plan: refused, naming run.json's plan."""
    from speceval.cli.round_tiers import RoundTiers, round_models
    from speceval.defaults import Tier
    from speceval.errors import RunStateError
    from speceval.providers.registry import resolve_org
    from speceval.wire.params import GenerationParams

    plan = RoundTiers(tiers=[Tier.BATCH, Tier.BATCH], deadline_hours=13)
    of = round_models(plan, FLEX_MODEL, resolve_org(FLEX_MODEL, None), GenerationParams(), {})
    with pytest.raises(RunStateError, match="round 3 is not in the run's plan of 2 rounds"):
        of(3, None)


def _three_round_plan(tiers: list[str], model: str = FLEX_MODEL) -> Any:
    """A stored 3-round plan (3 conversations a round) as `--tier auto --deadline-hours 13` writes it."""
    from speceval.cli.round_tiers import plan_round_tiers
    from speceval.defaults import Tier
    from speceval.engines.tier_plan import RoundLoad, TierTimes
    from speceval.providers.registry import resolve_org

    entry = resolve_org(model, None)
    loads = [
        RoundLoad(label=f"round {k}", provider="openai", model=model, requests=3, input_tokens=100, output_tokens=300)
        for k in (1, 2, 3)
    ]
    manifest = RunManifest.model_construct(parameters={})
    return plan_round_tiers(
        [Tier(t) for t in tiers], 13, {}, manifest, entry, loads=loads, times=TierTimes(), flex_ok=model == FLEX_MODEL
    )


def _job(hours: float) -> Any:
    """A finished OpenAI batch job that took `hours`."""
    from speceval.batch.records import BatchRecord

    start = datetime(2026, 11, 29, tzinfo=UTC)
    return BatchRecord.model_construct(provider="openai", submitted_at=start, ended_at=start + timedelta(hours=hours))


def _models_at(plan: Any, hours: float, jobs: list[Any], saved: list[Any]) -> Any:
    """The plan's round models with round 1 started at 00:00 and the clock at `hours` when later rounds start."""
    from speceval.batch.costs import PriceTable
    from speceval.cli.round_tiers import round_models
    from speceval.engines.tier_plan import learned_times
    from speceval.providers.registry import resolve_org
    from speceval.wire.params import GenerationParams

    start = datetime(2026, 11, 29, tzinfo=UTC)
    clock = iter([start, *[start + timedelta(hours=hours)] * 5])
    return round_models(
        plan,
        plan.loads[0].model,
        resolve_org(plan.loads[0].model, None),
        GenerationParams(),
        {"api_key": TEST_KEY},
        prices=PriceTable.load(),
        learn=lambda times, hour: learned_times(times, jobs, {}, hour),
        record=lambda changed: saved.append(changed.model_dump(mode="json")),
        now=lambda: next(clock),
    )


def test_a_round_behind_schedule_is_replanned_off_the_batch_api() -> None:
    """Round 1's batch job took 9 hours where 6 were planned: with 4 of 13 hours left, round 2 cannot wait for
    another batch round trip, so it goes at flex (same price), and run.json says so with the reason."""
    plan = _three_round_plan(["batch", "batch", "flex"])
    saved: list[Any] = []
    of = _models_at(plan, 9.0, [_job(9.0)], saved)
    of(1, None)
    assert saved[-1]["started_at"] is not None  # the deadline's clock starts with round 1, kept in run.json
    second = of(2, None)
    assert isinstance(second, RealtimeModel)
    assert [str(t) for t in plan.tiers] == ["batch", "flex", "flex"]
    replan = saved[-1]["replans"][0]
    assert (replan["round"], replan["planned"], replan["sent"]) == (2, "batch", "flex")
    assert replan["hours_left"] == pytest.approx(4.0) and replan["batch_turnaround_hours"] == pytest.approx(9.0)
    assert replan["meets_deadline"] is True


def test_a_round_ahead_of_schedule_leaves_standard_for_the_batch_price() -> None:
    """A model not served at flex, planned at standard for round 3; batches here take an hour, so with 11 hours
    left round 3 goes through the Batch API at half the price. A started round keeps its tier."""
    plan = _three_round_plan(["batch", "batch", "standard"], model=MODEL)
    saved: list[Any] = []
    of = _models_at(plan, 2.0, [_job(1.0)], saved)
    of(1, None)
    of(2, None)
    of(3, None)
    assert [str(t) for t in plan.tiers] == ["batch", "batch", "batch"]
    assert [(r["round"], r["planned"], r["sent"]) for r in saved[-1]["replans"]] == [(3, "standard", "batch")]


def test_a_round_planned_at_flex_stays_at_flex_when_batch_would_fit() -> None:
    """Batch and flex cost the same: moving a flex round back to the Batch API only makes it slower."""
    plan = _three_round_plan(["batch", "batch", "flex"])
    saved: list[Any] = []
    of = _models_at(plan, 1.0, [_job(0.5)], saved)
    of(1, None)
    of(2, None)
    of(3, None)
    assert [str(t) for t in plan.tiers] == ["batch", "batch", "flex"] and saved[-1]["replans"] == []


def test_past_the_deadline_the_round_goes_at_its_fastest_tier_of_the_planned_price() -> None:
    """No plan meets the deadline any more (round 1 took 20 of 13 hours): nothing is refused mid-run (round 1 is
    paid for); round 2 goes at the fastest tier of its planned price (flex, not standard at twice the price: the
    deadline is lost either way), recorded as not meeting the deadline. A round planned at standard may stay there."""
    plan = _three_round_plan(["batch", "batch", "flex"])
    saved: list[Any] = []
    of = _models_at(plan, 20.0, [_job(20.0)], saved)
    of(1, None)
    of(2, None)
    assert str(plan.tiers[1]) == "flex"
    assert saved[-1]["replans"][0]["meets_deadline"] is False
    dear = _three_round_plan(["batch", "standard", "standard"])
    of = _models_at(dear, 20.0, [_job(20.0)], [])
    of(1, None)
    of(2, None)
    assert str(dear.tiers[1]) == "standard"  # 10 s a call, the fastest, at the price the plan already asked


@pytest.mark.slow
def test_the_command_replans_a_late_round_within_one_invocation(tmp_path: Path) -> None:
    """End to end on a scaled clock (`SPECEVAL_HOUR_SECONDS=0.5`: 1 h = 0.5 s): the independent server takes 4.5 s
    (9 h) for a batch job, so after round 1 the command sends rounds 2 and 3 at flex, each request once."""
    command = _command(tmp_path, "--tier", "auto", "--deadline-hours", "13")
    with IndependentOpenAIServer(answer=_answer, turnaround=4.5) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_HOUR_SECONDS="0.5")
        done = run_generation(command, env)
        batch_lengths = _batch_request_lengths(server)
        flex_calls = list(server.chat_requests)
    assert done.returncode == 0, done.stderr
    assert sorted(batch_lengths) == [1] * CONVERSATIONS
    assert sorted(len(body["messages"]) for body in flex_calls) == [3] * CONVERSATIONS + [5] * CONVERSATIONS
    shown = " ".join((done.stdout + done.stderr).split())
    assert "round 2 at flex (planned batch)" in shown, shown
    manifest = json.loads((only_run_dir(tmp_path / "out") / "run.json").read_text())
    assert manifest["parameters"]["round_tiers"]["tiers"] == ["batch", "flex", "flex"]
    first, *later = manifest["parameters"]["round_tiers"]["replans"]
    assert (first["round"], first["planned"], first["sent"]) == (2, "batch", "flex")
    # On a loaded machine round 2's flex calls can use up the 4 scaled hours left, and round 3 then records that its
    # (unchanged) flex round no longer meets the deadline: said, never sent at another tier.
    assert all((r["round"], r["planned"], r["sent"], r["meets_deadline"]) == (3, "flex", "flex", False) for r in later)


def test_the_plans_expectations_are_flags_and_refused_without_auto(tmp_path: Path) -> None:
    """`--batch-turnaround-hours 3`: a 7-hour deadline fits two batch round trips, so rounds 1-2 go through the
    Batch API and only round 3 at flex (at the default 6 h only round 1 would). Without `--tier auto` the flag
    is refused before anything is sent."""
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        shown_at = {}
        for flags in ([], ["--batch-turnaround-hours", "3"]):
            command = _command(tmp_path / str(len(flags)), "--tier", "auto", "--deadline-hours", "7", *flags)
            plan = run_generation([*command, "--dry-run"], env)
            assert plan.returncode == 0, plan.stderr
            shown_at[len(flags)] = " ".join((plan.stdout + plan.stderr).replace("│", " ").split())
        refused = run_generation([*_command(tmp_path / "x", "--batch-turnaround-hours", "3")], env)
        assert server.chat_requests == [] and server.batches == []
    assert "round 2 (candidate) o4-mini flex" in shown_at[0]
    assert "round 2 (candidate) o4-mini batch" in shown_at[2] and "round 3 (candidate) o4-mini flex" in shown_at[2]
    assert refused.returncode == 2 and "--batch-turnaround-hours applies to --tier auto" in refused.stderr


def _user_command(tmp_path: Path, deadline: str, *extra: str) -> list[str]:
    """A simulated user (not served at flex) pressing the flex-served candidate for 3 rounds."""
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["What is 2+2?", "Name a colour."]})
    command = args(spec, inputs, tmp_path / "out", "--poll-interval", "0.1", "--tier", "auto", *extra)
    command[command.index(MODEL)] = FLEX_MODEL
    user = ["--simulated-user-model", MODEL, "--simulated-user-instructions", "Push back.", "--max-turns", "3"]
    return [*command, *user, "--deadline-hours", deadline]


def _plan_rows(shown: str) -> dict[str, tuple[str, float]]:
    """round label → (tier, hours) of the plan table a dry run prints."""
    rows = {}
    for line in shown.splitlines():
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if len(cells) == 6 and cells[0].startswith("round"):
            rows[cells[0]] = (cells[2], float(cells[5]))
    return rows


@pytest.mark.slow
def test_tier_auto_counts_the_simulated_users_turns_and_sends_them_where_it_planned(tmp_path: Path) -> None:
    """The user's turns run between the rounds: the plan counts their hours (a user through the Batch API takes a
    round trip a round) and the run sends them at the tier it planned. At 13 h the candidate's three rounds go to
    flex and the user's two rounds of turns through the Batch API (12.2 h); planned without the user's turns, the
    candidate's first two rounds went through the Batch API and the user's turns followed them there: 24 h."""
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        tight = run_generation([*_user_command(tmp_path / "tight", "5"), "--dry-run"], env)
        dry = run_generation([*_user_command(tmp_path / "dry", "13"), "--dry-run"], env)
        assert server.chat_requests == [] and server.batches == []
        done = run_generation(_user_command(tmp_path, "13"), env)
        calls = list(server.chat_requests)
        batched = [
            json.loads(line)["body"]
            for b in server.batches
            for line in server.files[b["input_file_id"]].data.decode().splitlines()
        ]
    assert dry.returncode == 0 and done.returncode == 0, dry.stderr + done.stderr
    planned = _plan_rows(dry.stdout)
    assert {label: tier for label, (tier, _) in planned.items()} == {
        "round 1": "flex",
        "round 2 (user turns)": "batch",
        "round 2 (candidate)": "flex",
        "round 3 (user turns)": "batch",
        "round 3 (candidate)": "flex",
    }
    assert 12.0 <= sum(hours for _, hours in planned.values()) <= 13.0
    # At 5 h no round may wait for a batch job: the user's turns go to standard (its model is not served at flex).
    assert {tier for label, (tier, _) in _plan_rows(tight.stdout).items() if "user" in label} == {"standard"}
    # Sent as planned: every candidate request at flex, every user turn inside a batch job, none twice.
    assert [(b["model"], b.get("service_tier")) for b in calls] == [(FLEX_MODEL, "flex")] * 6
    assert [b["model"] for b in batched] == [MODEL] * 4
    run_dir = only_run_dir(tmp_path / "out")
    stored = json.loads((run_dir / "run.json").read_text())["parameters"]["round_tiers"]
    assert stored["tiers"] == ["flex"] * 3 and stored["user"]["tier"] == "batch"


def test_a_replan_counts_the_users_turns_still_to_come() -> None:
    """7 of 13 hours left as round 2 starts, the user's round-3 turns at batch (its client built once, before
    round 1): round 2 through the Batch API (6 h) and round 3's turns (another 6 h) would end at 19 h, so round 2
    goes at flex. Without the user's turns the rounds left looked like 6.03 h and round 2 stayed a batch job."""
    from speceval.defaults import Tier
    from speceval.engines.tier_plan import RoundLoad, UserRounds

    plan = _three_round_plan(["batch", "batch", "flex"])
    turns = [
        RoundLoad(
            label=f"round {k} (user turns)", provider="openai", model=MODEL, requests=3, input_tokens=9, output_tokens=9
        )
        for k in (2, 3)
    ]
    plan.user = UserRounds(rounds=[2, 3], loads=turns, tier=Tier.BATCH)
    saved: list[Any] = []
    of = _models_at(plan, 6.0, [_job(6.0)], saved)
    of(1, None)
    assert isinstance(of(2, None), RealtimeModel)
    replan = saved[-1]["replans"][0]
    assert (replan["round"], replan["planned"], replan["sent"]) == (2, "batch", "flex")
    assert replan["hours_left"] == pytest.approx(7.0) and replan["meets_deadline"] is True
    assert saved[-1]["user"]["tier"] == "batch"  # the user's tier is kept: its client is built


@pytest.mark.slow
def test_a_run_killed_while_the_users_turns_are_a_batch_job_resumes_them_at_their_planned_tier(tmp_path: Path) -> None:
    """SIGKILL while round 2's user turns are a batch job at the provider: `--resume RUN_DIR` collects that job,
    sends the user's round-3 turns as a batch job again (the tier run.json keeps for them, not the candidate's
    flex path a user without a plan would follow), and nothing goes out twice."""
    with IndependentOpenAIServer(answer=_answer, turnaround=2.0) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        process = start_generation(_user_command(tmp_path, "13"), env)
        try:
            deadline = time.monotonic() + 120
            while not server.batches and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.batches) == 1, "round 2's user turns were never submitted"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        resumed = run_generation(["--resume", str(only_run_dir(tmp_path / "out")), "--poll-interval", "0.1"], env)
        calls = [(body["model"], body.get("service_tier"), len(body["messages"])) for body in server.chat_requests]
        lengths = _batch_request_lengths(server)
        models = {
            json.loads(line)["body"]["model"]
            for batch in server.batches
            for line in server.files[batch["input_file_id"]].data.decode().splitlines()
        }
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(calls) == sorted((FLEX_MODEL, "flex", n) for n in (1, 1, 3, 3, 5, 5))  # each round once
    assert models == {MODEL} and len(server.batches) == 2 and len(lengths) == 4  # the user's turns, once each


def test_a_user_given_rate_limits_and_no_tier_is_planned_at_a_realtime_tier(tmp_path: Path) -> None:
    """Rate limits pace realtime calls and are refused on a batch API: a user given `--simulated-user-rpm` and no
    tier is kept at its cheapest realtime tier (standard: gpt-4.1-mini is not served at flex), not planned into a
    batch job and then refused for its limits."""
    command = [*_user_command(tmp_path, "13"), "--simulated-user-rpm", "600", "--dry-run"]
    with IndependentOpenAIServer(answer=_answer) as server:
        plan = run_generation(command, cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url))
    assert plan.returncode == 0, plan.stderr
    rows = _plan_rows(plan.stdout)
    assert {tier for label, (tier, _) in rows.items() if "user" in label} == {"standard"}
    assert rows["round 2 (user turns)"][1] <= 0.1  # 6 turns at 600 a minute

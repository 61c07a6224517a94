"""`--tier auto` on the generation command over a conversation run: each round at the tier the plan picked for
it (the early rounds through the Batch API, the last at flex), against the independent OpenAI server (written from
the public OpenAPI spec, sharing no code with speceval)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

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
    """A deadline every batch plan meets: every round through the Batch API, no per-round plan recorded."""
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

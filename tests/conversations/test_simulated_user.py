"""A simulated user: a second model writes each next user turn, through the same engine, against the independent
OpenAI server (written from the public OpenAPI spec, sharing no code with speceval) and the emulator.

The server answers the user model's requests (recognised by their marker line) with user turns of its own making,
some holding the stop word; every request it receives is recorded, so the tests compare the candidate's requests,
the user-model jobs' outputs on disk and the results with what the server actually said, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, start_generation, write_spec
from tests.conversations.test_generation_rounds import results, write_items
from tests.independent.openai_server import IndependentOpenAIServer

CANDIDATE = "gpt-4.1-mini-2025-04-14"
USER = "gpt-4.1-2025-04-14"
STOP = "[[CASE CLOSED]]"
MARKER = "speceval prompt: simulated_user_v1"
INPUTS = {
    "alpha": [f"Opening question {n}: what is your policy?" for n in range(6)],
    "beta": ["Beta opening.", {"turns": ["Scripted first.", "Scripted second."], "id": "scripted"}],
}


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body["messages"], ensure_ascii=False).encode()).hexdigest()


def is_user_request(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"].startswith(MARKER)


class Recorder:
    """The server's answer function: candidate answers and user turns with bytes a careless copy would change,
    the stop word in about one user turn in three, and every (request, answer) kept."""

    def __init__(self) -> None:
        self.candidate: list[tuple[list[dict[str, str]], str]] = []
        self.user: list[tuple[str, str]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        digest = _digest(body)
        if is_user_request(body):
            assert body["model"] == USER and len(body["messages"]) == 1  # one fenced user message
            prompt = body["messages"][0]["content"]
            text = f"Régulateur «{digest[:8]}»:\n\tWhy?  " if int(digest[8], 16) % 3 else f"Done. {STOP}"
            self.user.append((prompt, text))
            return text
        assert body["model"] == CANDIDATE
        text = f'Company: "{body["messages"][-1]["content"][:20]}"\n\t✓ {digest[:10]} 🙂  '
        self.candidate.append((body["messages"], text))
        return text


REGULATOR = "You are a strict regulator. When satisfied, say " + STOP
AUDITOR = "You test the rule {statement_id} ({statement_text}) of the spec. When satisfied, say " + STOP
"""An auditor aimed at each input's statement (issue #35): filled per input, so a resume must fill it the same."""


def args(
    spec: Path, inputs: Path, out: Path, *extra: str, max_turns: int = 3, instructions: str = REGULATOR
) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        CANDIDATE,
        "--output-base-dir",
        str(out),
        "--simulated-user-model",
        USER,
        "--simulated-user-instructions",
        instructions,
        "--simulated-user-stop-word",
        STOP,
        "--max-turns",
        str(max_turns),
        *extra,
    ]


def user_outputs_on_disk(run_dir: Path, statement_id: str) -> dict[int, list[str]]:
    """original index → the user model's answers, round by round, read from the user halves' own results."""
    found: dict[int, list[str]] = {}
    for number in sorted(int(p.name) for p in (run_dir / "rounds").iterdir()):
        path = run_dir / "rounds" / str(number) / "user" / "results" / f"{statement_id}.json"
        if path.is_file():
            for row in json.loads(path.read_text()):
                found.setdefault(row["original_index"], []).append(row["output_text"])
    return found


def test_simulated_turns_are_the_user_models_answers_and_the_candidate_gets_them_byte_for_byte(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", INPUTS)
    recorder = Recorder()
    with IndependentOpenAIServer(answer=recorder) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        done = run_generation(args(spec, inputs, tmp_path / "out"), env)
        assert done.returncode == 0, done.stderr
        jobs = len(server.batches)
    run_dir = only_run_dir(tmp_path / "out")
    user_answers = dict((answer, prompt) for prompt, answer in recorder.user)
    candidate_answers = {json.dumps(messages): answer for messages, answer in recorder.candidate}

    # Each candidate request at round k: the input, then the server's own candidate answer and the user model's
    # turn written after it, alternating, byte for byte; the stop word never reaches the candidate.
    for messages, _ in recorder.candidate:
        for position in range(1, len(messages), 2):
            assert messages[position]["role"] == "assistant"
            assert messages[position]["content"] == candidate_answers[json.dumps(messages[:position])]
            turn = messages[position + 1]["content"]
            assert STOP not in turn
            if turn in user_answers:  # a simulated turn: written from a transcript ending with that answer
                assert f"\n{messages[position]['content']}\n<<<END assistant_" in user_answers[turn]

    stopped = at_max = 0
    for statement_id, items in INPUTS.items():
        on_disk = user_outputs_on_disk(run_dir, statement_id)
        for record, item in zip(results(run_dir)[statement_id], items, strict=True):
            index = record["original_index"]
            simulated = [m["content"] for m in record["conversation"] if m.get("author") == "simulated_user"]
            asked = [turn["output_text"] for turn in record["simulated_user_turns"]]
            # The user model's answers, in order, exactly as its jobs returned them (read from their files).
            assert asked == on_disk.get(index, [])
            assert all(answer in user_answers for answer in asked)
            assert len(record["turns"]) <= 3  # max_turns bounds the candidate's answers
            scripted = 1 if isinstance(item, str) else len(item["turns"])
            assert [m["content"] for m in record["conversation"] if m["role"] == "user"][:scripted] == (
                [item] if isinstance(item, str) else item["turns"]
            )
            if record["ended_by"] == "stop_word":
                stopped += 1
                assert STOP in asked[-1] and simulated == asked[:-1] and len(record["turns"]) < 3
            else:
                at_max += 1
                assert record["ended_by"] == "max_turns" and simulated == asked and len(record["turns"]) == 3
            assert (
                record["output_text"] == [m for m in record["conversation"] if m["role"] == "assistant"][-1]["content"]
            )
    assert stopped and at_max  # the stop word ended some conversations early, max_turns the others
    # Two jobs per round after the first: the user model's, then the candidate's.
    rounds = sorted(int(p.name) for p in (run_dir / "rounds").iterdir())
    assert jobs == 1 + 2 * (len(rounds) - 1)
    user_half = json.loads((run_dir / "rounds" / "2" / "user" / "run.json").read_text())
    assert user_half["model_name"] == USER and user_half["parameters"]["sent"]["max_tokens"] == 1024


def test_realtime_runs_the_simulated_user_turn_by_turn(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", INPUTS)
    recorder = Recorder()
    with IndependentOpenAIServer(answer=recorder) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = run_generation([*args(spec, inputs, tmp_path / "out"), "--realtime"], env)
        assert not server.batches
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path / "out")
    for statement_id in INPUTS:
        on_disk = user_outputs_on_disk(run_dir, statement_id)
        for record in results(run_dir)[statement_id]:
            assert [t["output_text"] for t in record["simulated_user_turns"]] == on_disk.get(
                record["original_index"], []
            )
            assert record["ended_by"] in ("stop_word", "max_turns")
    assert len(recorder.candidate) == sum(len(r["turns"]) for rs in results(run_dir).values() for r in rs)
    user_half = json.loads((run_dir / "rounds" / "2" / "user" / "run.json").read_text())
    assert user_half["model_name"] == USER and "realtime" in user_half["parameters"]  # called live, as its own


def _job_models(server: IndependentOpenAIServer) -> list[str]:
    """The model of each batch the server received, oldest first."""
    batches = sorted(server._batches.values(), key=lambda batch: batch.created_monotonic)
    return [batch.lines[0]["body"]["model"] for batch in batches]


@pytest.mark.slow
@pytest.mark.parametrize("instructions", [REGULATOR, AUDITOR], ids=["regulator", "auditor"])
def test_sigkill_in_the_user_half_of_round_two_then_resume_makes_at_most_one_job_more(
    tmp_path: Path, instructions: str
) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", INPUTS)
    recorder = Recorder()
    with IndependentOpenAIServer(answer=recorder, turnaround=0.6) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        whole = run_generation(args(spec, inputs, tmp_path / "whole", instructions=instructions), env)
        assert whole.returncode == 0, whole.stderr
        uninterrupted = len(server.batches)
        child = start_generation(args(spec, inputs, tmp_path / "killed", instructions=instructions), env)
        deadline = time.monotonic() + 60
        while len(server.batches) < uninterrupted + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)  # round 1's job, then round 2's user-model job exist
        child.wait()
        assert len(server.batches) == uninterrupted + 2
        run_dir = only_run_dir(tmp_path / "killed")
        state = json.loads((run_dir / "rounds" / "2" / "round.json").read_text())
        assert state["phase"] == "simulated_user"  # the user half in flight, the candidate's not started
        assert not (run_dir / "rounds" / "2" / "preprocessed").exists()
        resumed = run_generation(["--resume", str(run_dir)], env)
        assert resumed.returncode == 0, resumed.stderr
        jobs = len(server.batches) - uninterrupted
        models = _job_models(server)
    assert jobs <= uninterrupted + 1
    # Each user-model job once: the resume adopted round 2's instead of asking the user model again.
    assert models[uninterrupted:].count(USER) == models[:uninterrupted].count(USER)
    volatile = ("batch_id", "custom_id", "usage")

    def stable(record: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in record.items() if k not in volatile}
        for key in ("turns", "simulated_user_turns"):
            kept[key] = [{k: v for k, v in turn.items() if k not in volatile} for turn in kept[key]]
        return kept

    whole_results = results(only_run_dir(tmp_path / "whole"))
    assert {s: [stable(r) for r in rs] for s, rs in results(run_dir).items()} == {
        s: [stable(r) for r in rs] for s, rs in whole_results.items()
    }
    if instructions == AUDITOR:  # every user-model request, before and after the resume, named its own statement
        for prompt, _ in recorder.user:
            named = [s for s in ("alpha", "beta") if f"the rule {s} (Statement {s}.)" in prompt]
            assert len(named) == 1 and "{statement" not in prompt


def test_an_errored_user_model_turn_ends_its_conversation_with_that_outcome(tmp_path: Path) -> None:
    from speceval.emulator import ERROR_MARKER

    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["One?", "Two?"]})
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            CANDIDATE,
            "--output-base-dir",
            str(tmp_path / "out"),
            "--offline",
            "--simulated-user-model",
            "claude-haiku-4-5-20251001",
            "--simulated-user-instructions",
            f"You are a customer. {ERROR_MARKER}",
            "--max-turns",
            "3",
            "--max-attempts",
            "1",
        ],
        cli_env(),
    )
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path / "out")
    for record in results(run_dir)["alpha"]:
        assert record["ended_by"] == "user_model_error" and record["outcome"] != "succeeded"
        assert record["error"] and len(record["turns"]) == 1 and record["turns"][0]["outcome"] == "succeeded"
        assert [t["outcome"] for t in record["simulated_user_turns"]] == [record["outcome"]]
        assert [m["role"] for m in record["conversation"]] == ["user", "assistant"]  # nothing unsent in it
    assert not (run_dir / "rounds" / "3").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-turns", "2"], "--max-turns describe a simulated user: add --simulated-user-model"),
        (["--simulated-user-model", USER], "needs --simulated-user-instructions"),
        (
            ["--simulated-user-model", USER, "--simulated-user-instructions", "@/nonexistent/instructions.txt"],
            "/nonexistent/instructions.txt",
        ),
        (
            ["--simulated-user-model", USER, "--simulated-user-instructions", "x", "--max-turns", "1"],
            "script conversations of 2 rounds, more than the simulated user's max_turns 1",
        ),
    ],
)
def test_bad_simulated_user_flags_exit_2_before_anything_is_written(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["beta"])
    inputs = write_items(tmp_path / "in", {"beta": INPUTS["beta"]})
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            CANDIDATE,
            "--output-base-dir",
            str(tmp_path / "out"),
            "--offline",
            *extra,
        ],
        cli_env(),
    )
    assert done.returncode == 2, done.stderr
    assert message in " ".join(done.stderr.split())
    assert not (tmp_path / "out").exists()


def _records(run_dir: Path) -> dict[str, list[Any]]:
    """The batch records of each half: `user` (every round's user-model jobs) and `candidate`."""
    from speceval.batch.store import RunStore

    halves: dict[str, list[Any]] = {"user": [], "candidate": []}
    for directory in sorted((run_dir / "rounds").iterdir()):
        halves["candidate"] += RunStore(directory).load_records()
        if (directory / "user").is_dir():
            halves["user"] += RunStore(directory / "user").load_records()
    return halves


@pytest.mark.slow
def test_the_budget_counts_the_user_models_jobs_and_stops_before_one_it_cannot_pay(tmp_path: Path) -> None:
    from speceval.batch.budget import Budget, RunBudget
    from speceval.batch.costs import CostEstimator, PriceTable
    from speceval.batch.engine import EngineOptions
    from speceval.batch.progress import StopReason
    from speceval.conversations.simulated_user import SimulatedUser
    from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig

    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": INPUTS["alpha"][:3]})
    user = SimulatedUser(model="claude-haiku-4-5-20251001", instructions="A regulator.", max_turns=2)

    def run(limit: float, name: str) -> tuple[Budget, Any, Path]:
        estimator = CostEstimator(PriceTable.load())
        budget = RunBudget(limit, estimator, parent=Budget(1000.0, estimator))  # cost_per_run_limit in budget_usd
        config = GenerationConfig(
            spec_path=spec,
            inputs_dir=inputs,
            model_name=CANDIDATE,
            offline=True,
            output_base_dir=tmp_path / name,
            simulated_user=user,
            engine=EngineOptions(poll_interval=0.2, budget=budget),
        )
        pipeline = BatchedGenerationPipeline(config)
        return budget, pipeline.run(), pipeline.run_dir

    budget, summary, run_dir = run(100.0, "whole")
    assert summary.finished
    halves = _records(run_dir)
    assert len(halves["user"]) == 1 and halves["user"][0].model == user.model
    # Reserved against the budget before it was created, like every candidate job.
    assert all(r.estimated_cost_usd is not None for records in halves.values() for r in records)
    paid = {
        half: sum(r.cost_usd if r.cost_usd is not None else r.estimated_cost_usd for r in records)
        for half, records in halves.items()
    }
    assert paid["user"] > 0
    assert budget.committed_usd == pytest.approx(paid["user"] + paid["candidate"])
    assert budget.parent is not None and budget.parent.committed_usd == pytest.approx(budget.committed_usd)

    # A limit of exactly round 1's upper bound: round 1 settles at its (much lower) actual cost, so the user
    # model's job fits and is sent; round 2's candidate job carries the transcript, its bound is larger than round
    # 1's, and with what was spent it no longer fits: nothing more is submitted.
    first = halves["candidate"][0]
    assert first.estimated_cost_usd is not None and first.cost_usd is not None
    assert first.cost_usd < first.estimated_cost_usd  # collected: its actual cost, not its bound
    budget, summary, run_dir = run(first.estimated_cost_usd, "short")
    assert summary.reason is StopReason.BUDGET and not summary.finished
    assert len(_records(run_dir)["user"]) == 1 and len(_records(run_dir)["candidate"]) == 1
    assert budget.spent_usd <= first.estimated_cost_usd and budget.reserved_usd == pytest.approx(0.0)


def test_the_dry_run_bounds_the_later_rounds_of_both_models(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", INPUTS)
    done = run_generation([*args(spec, inputs, tmp_path / "out"), "--offline", "--dry-run"], cli_env())
    assert done.returncode == 0, done.stderr
    shown = " ".join((done.stdout + done.stderr).split())
    # 7 strings: the user model and the candidate in rounds 2 and 3; the 2-turn script: its round 2 is scripted.
    assert f"simulated user {USER}: at most 15 request(s), $" in shown
    assert f"candidate {CANDIDATE}: at most 16 request(s), $" in shown
    assert "upper bound" in shown


def test_when_every_user_turn_says_the_stop_word_every_conversation_ends_after_one_answer(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": INPUTS["alpha"][:2]})
    with IndependentOpenAIServer(
        answer=lambda body: f"Goodbye {STOP}" if is_user_request(body) else "Answer."
    ) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        done = run_generation(args(spec, inputs, tmp_path / "out"), env)
        assert done.returncode == 0, done.stderr
        assert _job_models(server) == [CANDIDATE, USER]  # round 2's candidate half had nobody left to ask
    run_dir = only_run_dir(tmp_path / "out")
    for record in results(run_dir)["alpha"]:
        assert record["ended_by"] == "stop_word" and record["outcome"] == "succeeded"
        assert record["output_text"] == "Answer." and len(record["turns"]) == 1
        assert [m["role"] for m in record["conversation"]] == ["user", "assistant"]
    assert not (run_dir / "rounds" / "3").exists()


def test_ray_refuses_a_simulated_user_before_writing_anything(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["One?"]})
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            CANDIDATE,
            "--output-base-dir",
            str(tmp_path / "out"),
            "--org",
            "ray",
            "--offline",
            "--simulated-user-model",
            USER,
            "--simulated-user-instructions",
            "A user.",
        ],
        cli_env(),
    )
    assert done.returncode == 2, done.stderr
    assert "simulated user" in done.stderr and "Ray" in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_emulator_answers_a_simulated_users_prompt_deterministically_sometimes_with_the_stop_word() -> None:
    from speceval.conversations.simulated_user import SimulatedUser, UserEnd
    from speceval.emulator import respond
    from speceval.inputs.script import ChatMessage

    user = SimulatedUser(model="claude-haiku-4-5-20251001", instructions="A regulator.", stop_word=STOP)
    answers = []
    for number in range(40):
        transcript = [
            ChatMessage(role="user", content=f"Opening {number}"),
            ChatMessage(role="assistant", content=f"Answer {number}"),
        ]
        text = user.prompt(transcript).last_user_text
        assert text.startswith(MARKER + "\n") and f"{STOP}" in text.splitlines()[-1]
        answer = respond(user.model, text)
        assert answer == respond(user.model, text) and answer.strip()  # deterministic, never blank
        answers.append(user.ends(answer))
    assert 5 <= answers.count(UserEnd.STOP_WORD) <= 25 and answers.count(None) >= 15
    # Before the candidate has answered there is nothing to end, and without a stop word it never ends.
    opening = [ChatMessage(role="user", content="Opening")]
    assert all(STOP not in respond(user.model, user.prompt(opening).last_user_text + str(n)) for n in range(3))
    plain = user.model_copy(update={"stop_word": None})
    assert all(
        plain.ends(
            respond(plain.model, plain.prompt([*opening, ChatMessage(role="assistant", content=str(n))]).last_user_text)
        )
        is None
        for n in range(20)
    )


def test_the_simulated_user_tier_flag_sends_the_users_turns_at_flex_while_the_candidate_stays_on_batch(
    tmp_path: Path,
) -> None:
    """`--simulated-user-tier flex`: the user model's turns are realtime calls at flex (recorded as served), the
    candidate's answers batch jobs, and a resume with another user tier is refused as a changed run."""
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", INPUTS)
    flex_user = "gpt-5-mini"  # on the shipped price table's flex list

    def answer(body: dict[str, Any]) -> str:
        return f"Done. {STOP}" if is_user_request(body) else f"answer {_digest(body)[:8]}"

    command = args(spec, inputs, tmp_path / "out", "--poll-interval", "0.1")
    command[command.index(USER)] = flex_user
    with IndependentOpenAIServer(answer=answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = run_generation([*command, "--simulated-user-tier", "flex"], env)
        assert done.returncode == 0, done.stderr
        assert set(_job_models(server)) == {CANDIDATE}  # no batch job for the user model
        user_calls = [body for body in server.chat_requests if is_user_request(body)]
        assert user_calls and {body.get("service_tier") for body in user_calls} == {"flex"}
        run_dir = only_run_dir(tmp_path / "out")
        user_records = json.loads((run_dir / "rounds" / "2" / "user" / "results" / "alpha.json").read_text())
        assert user_records and {row["service_tier"] for row in user_records} == {"flex"}
        again = run_generation([*command, "--simulated-user-tier", "standard", "--resume", str(run_dir)], env)
    assert again.returncode == 2 and "--simulated-user-tier was flex, now standard" in again.stderr, again.stderr

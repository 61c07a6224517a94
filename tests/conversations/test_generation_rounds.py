"""Generation over inputs that mix strings and conversations, against the independent OpenAI server (written from
the public OpenAPI spec, sharing no code with speceval) and the emulator.

Every request the server receives is checked against transcripts built here, independently of speceval: turn k of
a conversation carries turns 1..k with the server's own earlier answers between them, byte for byte.
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
from tests.independent.openai_server import IndependentOpenAIServer

MODEL = "gpt-4.1-mini-2025-04-14"
SCRIPTS = {
    "alpha": [
        "Plain question one?",
        {"turns": ["What is 2+2?", "Are you sure? I'm a mathematician.", "Final answer?"], "id": "q1_pressure_0"},
        "Plain question two?",
        {"turns": ["Name a colour.", "Why that one?", "And another?"]},
    ],
    "beta": [
        {
            "messages": [
                {"role": "user", "content": "Hi, I'm Ana."},
                {"role": "assistant", "content": "Hello Ana! (prefilled)"},
                {"role": "user", "content": "What's my name?"},
            ],
            "turns": ["Spell it backwards."],
        },
        "Plain beta.",
    ],
}
STRINGS = {"alpha": ["Plain question one?", "Plain question two?"], "beta": ["Plain beta."]}


def answer(body: dict[str, Any]) -> str:
    """A pure function of the whole transcript, with bytes that a careless copy would change (quotes, accents,
    newline, tab, emoji, trailing spaces)."""
    messages = body["messages"]
    digest = hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode()).hexdigest()[:10]
    return f'Ré: "{messages[-1]["content"]}"\n\t✓ {digest} 🙂  '


def expected_requests(item: str | dict[str, Any]) -> list[list[dict[str, str]]]:
    """The messages of each request an input should make, built without speceval."""
    if isinstance(item, str):
        return [[{"role": "user", "content": item}]]
    messages = list(item.get("messages", []))
    turns = list(item.get("turns", []))
    if not messages:
        messages.append({"role": "user", "content": turns.pop(0)})
    requests = [list(messages)]
    for turn in turns:
        messages = [
            *messages,
            {"role": "assistant", "content": answer({"messages": messages})},
            {"role": "user", "content": turn},
        ]
        requests.append(list(messages))
    return requests


def write_items(directory: Path, scripts: dict[str, list[Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for statement_id, items in scripts.items():
        (directory / f"{statement_id}.json").write_text(json.dumps({"inputs": items}), encoding="utf-8")
    return directory


def args(spec: Path, inputs: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(out),
        *extra,
    ]


def results(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def request_lines(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("**/preprocessed/*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def test_each_turn_carries_the_transcript_so_far_and_results_hold_every_conversation(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    mixed = write_items(tmp_path / "mixed", SCRIPTS)
    plain = write_items(tmp_path / "plain", STRINGS)
    seen: list[list[dict[str, str]]] = []

    def recording(body: dict[str, Any]) -> str:
        seen.append(body["messages"])
        return answer(body)

    with IndependentOpenAIServer(answer=recording) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        done = run_generation(args(spec, mixed, tmp_path / "out"), env)
        assert done.returncode == 0, done.stderr
        assert len(server.batches) == 3  # one job per round: 3 rounds for the longest script
        plain_done = run_generation(args(spec, plain, tmp_path / "plain_out"), env)
        assert plain_done.returncode == 0, plain_done.stderr

    expected = [request for items in SCRIPTS.values() for item in items for request in expected_requests(item)]
    # Every request sent exactly once, each exactly the transcript built here: no turn skipped or repeated.
    assert sorted(map(json.dumps, seen[: len(expected)])) == sorted(map(json.dumps, expected))
    assert len(seen) == len(expected) + 3  # then the plain run's three strings

    run_dir = only_run_dir(tmp_path / "out")
    got = results(run_dir)
    for statement_id, items in SCRIPTS.items():
        assert [r["original_index"] for r in got[statement_id]] == list(range(len(items)))
        for record, item in zip(got[statement_id], items, strict=True):
            requests = expected_requests(item)
            last = requests[-1]
            assert record["outcome"] == "succeeded"
            assert record["output_text"] == answer({"messages": last})
            if isinstance(item, str):
                assert record["input_text"] == item and "conversation" not in record
                continue
            assert record["input_text"] == requests[0][0]["content"]  # the first user turn
            assert record["conversation"] == [*last, {"role": "assistant", "content": record["output_text"]}]
            assert record["conversation_id"] == item.get("id")
            assert [t["round"] for t in record["turns"]] == list(range(1, len(requests) + 1))
            assert [t["output_text"] for t in record["turns"]] == [answer({"messages": r}) for r in requests]
            assert record["usage"]["input_tokens"] == sum(t["usage"]["input_tokens"] for t in record["turns"])

    # Strings are sent and recorded exactly as by a run without conversations (custom ids aside: they name jobs).
    plain_dir = only_run_dir(tmp_path / "plain_out")
    assert not (plain_dir / "rounds").exists()
    assert "conversations" not in json.loads((plain_dir / "run.json").read_text())["parameters"]

    def by_text(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            line["body"]["messages"][-1]["content"]: {**line, "custom_id": None}
            for line in lines
            if len(line["body"]["messages"]) == 1
        }

    strings = {text for texts in STRINGS.values() for text in texts}
    mixed_lines = {k: v for k, v in by_text(request_lines(run_dir / "rounds" / "1")).items() if k in strings}
    assert mixed_lines == by_text(request_lines(plain_dir))
    plain_records = results(plain_dir)
    ignore = ("batch_id", "custom_id", "original_index")
    for statement_id, texts in STRINGS.items():
        in_mixed = [r for r in got[statement_id] if r["input_text"] in texts and "conversation" not in r]
        assert [{k: v for k, v in r.items() if k not in ignore} for r in in_mixed] == [
            {k: v for k, v in r.items() if k not in ignore} for r in plain_records[statement_id]
        ]
        assert all(set(r) == set(plain_records[statement_id][0]) for r in in_mixed)


def test_a_turn_that_fails_ends_its_conversation_and_the_others_go_on(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(
        tmp_path / "in",
        {"alpha": [{"turns": ["ok 1", "POISON", "never sent"]}, {"turns": ["fine 1", "fine 2", "fine 3"]}, "plain"]},
    )

    def fail(custom_id: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if body["messages"][-1]["content"] == "POISON":
            return 400, {
                "message": "Invalid prompt",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_prompt",
            }
        return None

    with IndependentOpenAIServer(answer=answer, fail=fail) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        done = run_generation(args(spec, inputs, tmp_path / "out"), env)
        batch_sizes = [b["request_counts"]["total"] for b in server.batches]
    assert done.returncode == 0, done.stderr  # every input has a final outcome
    assert batch_sizes == [3, 2, 1]  # round 3 holds only the conversation still going
    failed, going, plain = results(only_run_dir(tmp_path / "out"))["alpha"]
    assert failed["outcome"] == "errored" and failed["output_text"] is None
    assert "invalid_prompt" in json.dumps(failed["error"])
    assert [t["outcome"] for t in failed["turns"]] == ["succeeded", "errored"]
    assert [m["content"] for m in failed["conversation"]][-1] == "POISON"  # sent, never answered
    assert len(failed["conversation"]) == 3
    assert going["outcome"] == "succeeded" and len(going["turns"]) == 3 and len(going["conversation"]) == 6
    assert plain["outcome"] == "succeeded" and plain["input_text"] == "plain"


def _jobs(server: IndependentOpenAIServer) -> int:
    return len(server.batches)


# Round 2 (the case issue #24 names) in the inner loop; rounds 1 and 3 with the slow tests.
# Round 2 in flight is the case; kills in rounds 1 and 3 (and at random moments) are what
# `benchmarks/crash_trials.py --conversations` runs, outside the suite's five minutes.
@pytest.mark.parametrize("round_in_flight", [2])
def test_sigkill_after_a_rounds_job_exists_then_resume_completes(tmp_path: Path, round_in_flight: int) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", SCRIPTS)
    with IndependentOpenAIServer(answer=answer, turnaround=0.6) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        whole = run_generation(args(spec, inputs, tmp_path / "whole"), env)
        assert whole.returncode == 0, whole.stderr
        uninterrupted = _jobs(server)
        child = start_generation(args(spec, inputs, tmp_path / "killed"), env)
        deadline = time.monotonic() + 60
        while _jobs(server) < uninterrupted + round_in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert _jobs(server) == uninterrupted + round_in_flight  # killed while that round's job runs
        run_dir = only_run_dir(tmp_path / "killed")
        assert (run_dir / "rounds" / str(round_in_flight) / "round.json").is_file()
        assert not (run_dir / "rounds" / str(round_in_flight + 1)).exists()
        resumed = run_generation(["--resume", str(run_dir)], env)
        assert resumed.returncode == 0, resumed.stderr
        jobs = _jobs(server) - uninterrupted
    assert jobs <= uninterrupted + 1
    whole_results = results(only_run_dir(tmp_path / "whole"))
    killed_results = results(run_dir)
    volatile = ("batch_id", "custom_id", "usage")

    def stable(record: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in record.items() if k not in volatile}
        if "turns" in kept:
            kept["turns"] = [{k: v for k, v in turn.items() if k not in volatile} for turn in kept["turns"]]
        return kept

    assert {s: [stable(r) for r in rs] for s, rs in killed_results.items()} == {
        s: [stable(r) for r in rs] for s, rs in whole_results.items()
    }
    assert all(
        len(r["turns"]) == len(expected_requests(item))
        for s, items in SCRIPTS.items()
        for r, item in zip(killed_results[s], items, strict=True)
        if "turns" in r
    )


def _wire_roles(line: dict[str, Any]) -> list[str]:
    if "body" in line:
        return [m["role"] for m in line["body"]["messages"]]
    if "params" in line:
        return [m["role"] for m in line["params"]["messages"]]
    return [c["role"] for c in line["request"]["contents"]]


@pytest.mark.parametrize(
    ("model", "assistant"), [("claude-sonnet-4-6", "assistant"), ("gemini-2.5-flash", "model"), (MODEL, "assistant")]
)
def test_earlier_answers_go_in_each_providers_assistant_role(tmp_path: Path, model: str, assistant: str) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["plain", {"turns": ["t1", "t2"]}]})
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            model,
            "--output-base-dir",
            str(tmp_path / "out"),
            "--offline",
        ],
        cli_env(),
    )
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path / "out")
    (second,) = request_lines(run_dir / "rounds" / "2")
    assert _wire_roles(second) == ["user", assistant, "user"]
    record = results(run_dir)["alpha"][1]
    assert [m["role"] for m in record["conversation"]] == ["user", "assistant", "user", "assistant"]
    assert record["conversation"][1]["content"] == record["turns"][0]["output_text"]


def test_realtime_sends_each_conversations_turns_in_order_with_its_transcript(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", SCRIPTS)
    with IndependentOpenAIServer(answer=answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = run_generation([*args(spec, inputs, tmp_path / "out"), "--realtime"], env)
        live = [body["messages"] for body in server.chat_requests]
        assert not server.batches
    assert done.returncode == 0, done.stderr
    expected = [request for items in SCRIPTS.values() for item in items for request in expected_requests(item)]
    assert sorted(map(json.dumps, live)) == sorted(map(json.dumps, expected))
    run_dir = only_run_dir(tmp_path / "out")
    for statement_id, items in SCRIPTS.items():
        for record, item in zip(results(run_dir)[statement_id], items, strict=True):
            last = expected_requests(item)[-1]
            assert record["outcome"] == "succeeded" and record["output_text"] == answer({"messages": last})
            if not isinstance(item, str):
                assert record["conversation"] == [*last, {"role": "assistant", "content": record["output_text"]}]


def test_ray_refuses_conversations_before_writing_anything(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": [{"turns": ["t1", "t2"]}]})
    done = run_generation([*args(spec, inputs, tmp_path / "out"), "--org", "ray", "--offline"], cli_env())
    assert done.returncode == 2 and "hold conversations" in done.stderr and "Ray" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_anthropic_server_written_from_the_docs_gets_assistant_turns_with_the_earlier_answers(tmp_path: Path) -> None:
    from tests.independent.anthropic_server import IndependentAnthropicServer

    def anthropic_answer(params: dict[str, Any]) -> str:
        return answer({"messages": params["messages"]})

    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["plain", {"turns": ["t1", "t2", "t3"]}]})
    with IndependentAnthropicServer(answer=anthropic_answer) as server:  # strict_turns: alternation is checked
        env = cli_env(ANTHROPIC_API_KEY=TEST_KEY, ANTHROPIC_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")
        done = run_generation(
            [
                "--spec-path",
                str(spec),
                "--pregenerated-inputs-dir",
                str(inputs),
                "--model-name",
                "claude-haiku-4-5-20251001",
                "--output-base-dir",
                str(tmp_path / "out"),
            ],
            env,
        )
        sent = [params["messages"] for _, _, params in server.requests]
    assert done.returncode == 0, done.stderr

    def text(message: dict[str, Any]) -> str:
        content = message["content"]
        return content if isinstance(content, str) else "".join(block["text"] for block in content)

    conversation_requests = [[(m["role"], text(m)) for m in messages] for messages in sent if text(messages[0]) == "t1"]
    a1 = anthropic_answer({"messages": sent[[text(m[0]) for m in sent].index("t1")]})
    assert conversation_requests[1] == [("user", "t1"), ("assistant", a1), ("user", "t2")]
    assert [len(r) for r in conversation_requests] == [1, 3, 5]
    record = results(only_run_dir(tmp_path / "out"))["alpha"][1]
    assert [m["role"] for m in record["conversation"]] == ["user", "assistant"] * 3
    assert record["conversation"][1]["content"] == a1


@pytest.mark.slow
def test_realtime_sigkill_in_round_two_then_resume_resends_no_finished_turn(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_items(tmp_path / "in", SCRIPTS)
    round_one = sum(1 for items in SCRIPTS.values() for _ in items)

    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.3)
        return answer(body)

    with IndependentOpenAIServer(answer=slow) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        child = start_generation([*args(spec, inputs, tmp_path / "out"), "--realtime", "--max-concurrency", "1"], env)
        deadline = time.monotonic() + 60
        while len(server.chat_requests) < round_one + 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        run_dir = only_run_dir(tmp_path / "out")
        assert (run_dir / "rounds" / "2" / "round.json").is_file()
        resumed = run_generation(["--resume", str(run_dir)], env)
        assert resumed.returncode == 0, resumed.stderr
        sent = [json.dumps(body["messages"]) for body in server.chat_requests]
    expected = [
        json.dumps(request) for items in SCRIPTS.values() for item in items for request in expected_requests(item)
    ]
    assert sorted(set(sent)) == sorted(expected)  # every turn sent, each with the right transcript
    repeated = [request for request in expected if sent.count(request) > 1]
    assert all(json.loads(request)[-1]["role"] == "user" and len(json.loads(request)) > 1 for request in repeated)
    assert len(repeated) <= 1  # at most the one call in flight at the kill (a realtime call is not adopted)
    got = results(run_dir)
    assert all(
        len(got[s]) == len(items) and all(r["outcome"] == "succeeded" for r in got[s]) for s, items in SCRIPTS.items()
    )

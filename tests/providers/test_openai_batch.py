"""The OpenAI adapter through the real `openai` SDK against the emulator over loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.batch.engine import EngineOptions
from speceval.batch.records import Outcome
from speceval.emulator import Emulator, FaultConfig
from speceval.paths import safe_filename
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY, write_inputs, write_spec

MODEL = "gpt-4.1-mini-2025-04-14"


def generate(tmp_path: Path, emu: Emulator, statements: dict[str, list[str]], **engine: float):
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    config = GenerationConfig(
        spec_path=spec,
        inputs_dir=inputs,
        model_name=MODEL,
        output_base_dir=tmp_path / "out",
        params=GenerationParams(temperature=0.0, max_tokens=64),
        engine=EngineOptions(
            batch_size=int(engine.get("batch_size", 50)),
            poll_interval=0.05,
            timeout_hours=0.05,
            max_attempts=int(engine.get("max_attempts", 3)),
        ),
    )
    pipeline = BatchedGenerationPipeline(config)
    model = OpenAIBatchedModel(MODEL, config.params, api_key=TEST_KEY, base_url=emu.openai_base_url)
    return pipeline.run(model), pipeline.run_dir


def load(run_dir: Path, statement_id: str) -> list[dict]:
    return json.loads((run_dir / "results" / f"{statement_id}.json").read_text())


def test_shuffled_results_map_back_to_their_inputs(tmp_path):
    statements = {"be_honest": [f"question {i}" for i in range(12)], "avoid.harm now": ["x", "y", "z"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1, shuffle_results=True)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 15}
    for statement_id, texts in statements.items():
        records = load(run_dir, statement_id)
        assert [r["input_text"] for r in records] == texts
        assert [r["original_index"] for r in records] == list(range(len(texts)))
        for record in records:
            assert record["outcome"] == "succeeded" and record["error"] is None
            assert record["output_text"].startswith("[synthetic")
            assert record["usage"]["input_tokens"] > 0
    # Each answer is a deterministic function of its own prompt: distinct prompts, distinct answers.
    answers = [r["output_text"] for r in load(run_dir, "be_honest")]
    assert len(set(answers)) == len(answers)


def test_errored_request_carries_the_provider_message_and_is_never_output_text(tmp_path):
    statements = {"s": ["fine", "bad one [[emulator:error]]", "also fine"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
        created = emu.stats.batches_created["openai"]
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.ERRORED: 1}
    bad = load(run_dir, "s")[1]
    assert bad["outcome"] == "errored" and bad["output_text"] is None
    assert bad["error"]["message"] and bad["error"]["status_code"] == 400
    assert created == 1  # a 400 is the request's fault: not resubmitted


def test_batch_size_and_one_metadata_file_per_job(tmp_path):
    statements = {"s": [f"q{i}" for i in range(10)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, batch_size=3)
        jobs = emu.list_jobs("openai")
    assert summary.finished and summary.jobs == 4
    metadata = sorted((run_dir / "metadata").glob("*.json"))
    assert len(metadata) == 4 == len(jobs)
    counts = sorted(json.loads(p.read_text())["request_count"] for p in metadata)
    assert counts == [1, 3, 3, 3]
    for path in metadata:
        record = json.loads(path.read_text())
        assert path.name == safe_filename(record["batch_id"]) + ".json" and record["handle"]["input_file_id"]
    preprocessed = list((run_dir / "preprocessed").glob("*.jsonl"))
    assert len(preprocessed) == 4
    line = json.loads(preprocessed[0].read_text().splitlines()[0])
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"]["model"] == MODEL and line["body"]["max_completion_tokens"] == 64


def test_connection_lost_mid_download_is_transient_not_a_raw_http_error():
    """A result file whose connection dies mid-body (fewer bytes than its Content-Length) must surface as our
    TransientProviderError, so the download is retried; the SDK does not wrap errors raised while a streamed body is
    iterated (they come from its HTTP library). The server is a bare socket: no emulator fault cuts a body short."""
    import socket
    import threading

    from speceval.batch.records import BatchRecord, JobState
    from speceval.errors import TransientProviderError
    from speceval.providers.openai_batch import OpenAIHandle

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    line = json.dumps({"custom_id": "c0ffee000000-0", "response": {"status_code": 200, "body": {}}}).encode()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
            conn.sendall(head + line + b"\n" + line[:20])  # one whole line, then the connection dies

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        model = OpenAIBatchedModel(MODEL, GenerationParams(), api_key=TEST_KEY, base_url=f"http://127.0.0.1:{port}/v1")
        record = BatchRecord(
            batch_id="batch_x",
            provider="openai",
            model=MODEL,
            idempotency_key="c0ffee000000" + "0" * 20,
            state=JobState.COMPLETED,
            raw_state="completed",
            handle=OpenAIHandle(output_file_id="file-x"),
            request_file="r.jsonl",
            request_count=1,
            refs=[("s", 0, 1)],
        )
        with pytest.raises(TransientProviderError, match="download file-x"):
            list(model.iter_answers(record))
    finally:
        server.join(timeout=10)
        listener.close()


def test_request_lines_are_compact_utf8_json_as_the_byte_limit_counts_them():
    """A request line is what `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` writes, newline-terminated:
    compact (a job's byte limit is counted on these bytes) and UTF-8, not \\u-escaped (which would count a Chinese
    or emoji prompt at up to 12 bytes a character)."""
    model = OpenAIBatchedModel(MODEL, GenerationParams(temperature=0.7, max_tokens=64), api_key=TEST_KEY)
    prompt = 'Grüße, 你好 😀 — "quoted" \\ back\tslash\nnew line \u2028 \x01'
    line = model.format_request("c0ffee000000-7", prompt)
    expected = {
        "custom_id": "c0ffee000000-7",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": MODEL,
            "messages": [{"role": "user", "content": prompt}],
            "max_completion_tokens": 64,
            "temperature": 0.7,
        },
    }
    assert line == (json.dumps(expected, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    assert json.loads(line) == expected

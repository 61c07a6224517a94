"""google-genai and speceval's Gemini batch paths against a Gemini API server written from the public docs.

`gemini_server.py` shares no code with `speceval.emulator`: what passes here follows the documented wire format.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.records import JobState, Outcome, RemoteJob, SubmissionIntent
from speceval.batch.store import RunStore
from speceval.cli.main import main as speceval_main
from speceval.providers.gemini_batch import GeminiBatchedModel
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import Message, Prompt, PromptItem
from tests.conftest import (
    TEST_KEY,
    cli_env,
    only_run_dir,
    run_generation,
    start_generation,
    write_inputs,
    write_spec,
)
from tests.independent.gemini_server import IndependentGeminiServer, request_text

MODEL = "gemini-2.5-flash"


def _answer(request: dict[str, Any]) -> str:
    return "answer to " + request_text(request)


def _poison(key: str | None, request: dict[str, Any]) -> tuple[int, str, str] | None:
    if request_text(request) == "POISON":
        return 400, "INVALID_ARGUMENT", "Invalid prompt: POISON"
    return None


def _client(server: IndependentGeminiServer) -> genai.Client:
    """An SDK client on the documented API version (the SDK's own default is `v1`, where batch mode is not)."""
    options = types.HttpOptions(base_url=server.base_url, api_version="v1beta", timeout=5_000)
    return genai.Client(api_key=TEST_KEY, http_options=options)


def _model(server: IndependentGeminiServer, params: GenerationParams | None = None) -> GeminiBatchedModel:
    model = create_batched_model(MODEL, "google", params, api_key=TEST_KEY, base_url=server.base_url)
    assert isinstance(model, GeminiBatchedModel)
    return model


def _items(statements: dict[str, list[str]]) -> list[PromptItem]:
    return [
        PromptItem(statement_id=sid, original_index=i, input_text=text)
        for sid, texts in statements.items()
        for i, text in enumerate(texts)
    ]


def _engine(model: GeminiBatchedModel, run_dir: Path, batch_size: int = 4) -> BatchEngine:
    return BatchEngine(model, RunStore(run_dir), EngineOptions(batch_size=batch_size, poll_interval=0.02))


def _results(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}


def _assert_no_key_written(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert TEST_KEY not in path.read_text(errors="replace"), path


def _upload(client: genai.Client, tmp_path: Path, lines: list[dict[str, Any]]) -> str:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    uploaded = client.files.upload(file=str(path), config={"mime_type": "jsonl", "display_name": "requests"})
    return str(uploaded.name)


def _line(key: str, text: str, **request: Any) -> dict[str, Any]:
    return {"key": key, "request": {"contents": [{"role": "user", "parts": [{"text": text}]}], **request}}


def _until_done(client: genai.Client, name: str) -> Any:
    deadline = time.monotonic() + 5
    while True:
        job = client.batches.get(name=name)
        if job.done:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.02)


def _downloaded(client: genai.Client, job: Any) -> list[dict[str, Any]]:
    """The lines of a succeeded job's responses file, in the order the server wrote them."""
    return [json.loads(line) for line in client.files.download(file=job.dest.file_name).splitlines()]


def _text(line: dict[str, Any]) -> str:
    return str(line["response"]["candidates"][0]["content"]["parts"][0]["text"])


# ---- the SDK on its own ------------------------------------------------------------------------------------------


def test_upload_create_poll_download_gives_every_key_once_shuffled(tmp_path: Path) -> None:
    with IndependentGeminiServer(answer=_answer, turnaround=0.1) as server:
        client = _client(server)
        keys = [f"req-{i}" for i in range(8)]
        name = _upload(client, tmp_path, [_line(k, k) for k in keys])
        assert client.files.get(name=name).source == types.FileSource.UPLOADED
        with pytest.raises(errors.ClientError):
            client.files.download(file=name)  # uploaded files cannot be downloaded
        job = client.batches.create(model=MODEL, src=name, config={"display_name": "tag-1"})
        assert job.name.startswith("batches/") and job.display_name == "tag-1"
        assert job.state == types.JobState.JOB_STATE_PENDING and job.dest is None
        done = _until_done(client, job.name)
        assert done.state == types.JobState.JOB_STATE_SUCCEEDED and done.dest.file_name.startswith("files/")
        lines = _downloaded(client, done)
        assert sorted(line["key"] for line in lines) == sorted(keys)
        assert [line["key"] for line in lines] != keys
        assert all(_text(line) == "answer to " + line["key"] for line in lines)
        # the raw operation: what the SDK's Gemini path does not copy onto its BatchJob
        operation = server.batches[0]
        assert operation["done"] and operation["metadata"]["batchStats"]["successfulRequestCount"] == "8"
        assert operation["response"]["responsesFile"] == done.dest.file_name


def test_list_pages_cancel_and_delete(tmp_path: Path) -> None:
    with IndependentGeminiServer(turnaround=60, page_cap=2) as server:
        client = _client(server)
        names = []
        for i in range(5):
            src = _upload(client, tmp_path, [_line("a", str(i))])
            names.append(client.batches.create(model=MODEL, src=src, config={"display_name": f"job-{i}"}).name)
        listed = [job.name for job in client.batches.list(config={"page_size": 100})]
        assert listed == names[::-1]  # newest first, over three pages of at most two
        assert sum(1 for method, path in server.calls if method == "GET" and path.startswith("/v1beta/batches?")) == 3
        client.batches.cancel(name=names[0])
        assert client.batches.get(name=names[0]).state == types.JobState.JOB_STATE_CANCELLED
        assert server.batches[0]["error"]["code"] == 1  # google.rpc.Code.CANCELLED
        with pytest.raises(errors.ClientError, match="already ended"):
            client.batches.cancel(name=names[0])
        client.batches.delete(name=names[0])
        with pytest.raises(errors.ClientError, match="NOT_FOUND"):
            client.batches.get(name=names[0])


@pytest.mark.parametrize(
    "line, fragment",
    [
        ({"key": "a", "request": {"contents": [{"parts": [{"text": "x"}]}]}, "extra": 1}, "unknown field 'extra'"),
        ({"request": {"contents": [{"parts": [{"text": "x"}]}]}}, "has no key"),
    ],
)
def test_a_line_the_docs_do_not_allow_fails_the_job(tmp_path: Path, line: dict[str, Any], fragment: str) -> None:
    with IndependentGeminiServer() as server:
        client = _client(server)
        job = client.batches.create(model=MODEL, src=_upload(client, tmp_path, [line]), config={"display_name": "t"})
        assert _until_done(client, job.name).state == types.JobState.JOB_STATE_FAILED
        assert fragment in server.batches[0]["error"]["message"]


def test_an_unknown_request_field_errs_its_line_and_a_live_call(tmp_path: Path) -> None:
    with IndependentGeminiServer() as server:
        client = _client(server)
        lines = [_line("ok", "x"), _line("bad", "x", generation_config={"max_tokens": 5})]
        job = client.batches.create(model=MODEL, src=_upload(client, tmp_path, lines), config={"display_name": "t"})
        done = _until_done(client, job.name)
        results = {line["key"]: line for line in _downloaded(client, done)}
        assert "response" in results["ok"]
        assert results["bad"]["error"]["status"] == "INVALID_ARGUMENT"
        assert 'Unknown name "max_tokens"' in results["bad"]["error"]["message"]
        with pytest.raises(errors.ClientError, match="Unknown name"):
            client.models.generate_content(
                model=MODEL, contents="x", config={"http_options": {"extra_body": {"oops": 1}}}
            )


# ---- speceval's Gemini batch adapter ---------------------------------------------------------------------------


def test_speceval_request_lines_are_valid_generate_content_requests(tmp_path: Path) -> None:
    """A plain prompt, a schema prompt, a conversation and a system prompt, as speceval writes them."""
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    prompts: dict[str, Any] = {
        "plain": "a plain prompt",
        "schema": Prompt.user("rate this", response_schema=schema),
        "conversation": Prompt((Message("user", "first"), Message("assistant", "reply"), Message("user", "second"))),
    }
    with IndependentGeminiServer(answer=_answer) as server:
        model = _model(server, GenerationParams(temperature=0.5, system_prompt="Be brief."))
        lines = [json.loads(model.format_request(key, prompt)) for key, prompt in prompts.items()]
        client = _client(server)
        job = client.batches.create(model=MODEL, src=_upload(client, tmp_path, lines), config={"display_name": "t"})
        done = _until_done(client, job.name)
        results = {line["key"]: line for line in _downloaded(client, done)}
        sent = {key: request for _, key, request in server.lines}
    assert [key for key, line in results.items() if "error" in line] == []
    assert _text(results["conversation"]) == "answer to second"
    assert all(r["generation_config"]["temperature"] == 0.5 for r in sent.values())
    assert sent["schema"]["generation_config"]["response_json_schema"] == schema


def test_a_batch_runs_to_the_end_every_answer_on_its_input_and_a_failed_line_typed(tmp_path: Path) -> None:
    statements = {"alpha": [f"a{i}" for i in range(7)], "beta": ["b0", "POISON", "b2"]}
    with IndependentGeminiServer(answer=_answer, fail=_poison, turnaround=0.1) as server:
        summary = _engine(_model(server), tmp_path / "run").run(_items(statements))
        batches, lines, keys = server.batches, server.lines, server.keys_seen
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 9, Outcome.ERRORED: 1}
    assert len(batches) == 3 and all(b["metadata"]["state"] == "BATCH_STATE_SUCCEEDED" for b in batches)
    assert sorted(request_text_of(r) for _, _, r in lines) == sorted(statements["alpha"] + statements["beta"])
    records = _results(tmp_path / "run")
    for sid, texts in statements.items():
        assert [r["input_text"] for r in records[sid]] == texts
        for record in records[sid]:
            if record["input_text"] == "POISON":
                assert record["outcome"] == "errored" and record["output_text"] is None
                assert record["error"]["code"] == "INVALID_ARGUMENT"
                assert record["error"]["message"] == "Invalid prompt: POISON"
            else:
                assert record["outcome"] == "succeeded"
                assert record["output_text"] == "answer to " + record["input_text"]
                assert record["usage"]["output_tokens"] > 0
    assert keys == {TEST_KEY}
    _assert_no_key_written(tmp_path)


def request_text_of(request: dict[str, Any]) -> str:
    return str(request["contents"][-1]["parts"][0]["text"])


class _KilledAfterCreate(GeminiBatchedModel):
    """Dies (as a SIGKILL would) right after the server created the job, before its id is recorded."""

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        super().generate_batch(intent, request_file)
        raise SystemExit("killed in the window")


def test_a_job_killed_after_create_is_found_by_its_display_name_and_not_paid_twice(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1", "a2"]})
    with IndependentGeminiServer(answer=_answer, turnaround=0.1, page_cap=1) as server:
        other = _client(server)
        for i in range(3):  # jobs of someone else, so the one we made is on a later page of the listing
            src = _upload(other, tmp_path, [_line("x", str(i))])
            other.batches.create(model=MODEL, src=src, config={"display_name": f"not-ours-{i}"})
        killed = _KilledAfterCreate(MODEL, None, api_key=TEST_KEY, base_url=server.base_url)
        with pytest.raises(SystemExit):
            _engine(killed, tmp_path / "run").run(items)
        assert len(server.batches) == 4
        summary = _engine(_model(server), tmp_path / "run").run(items)
        batches = server.batches
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert len(batches) == 4 and summary.jobs == 1  # adopted, not created again
    ours = [b for b in batches if not b["metadata"]["displayName"].startswith("not-ours")]
    assert len(ours) == 1 and ours[0]["metadata"]["state"] == "BATCH_STATE_SUCCEEDED"
    assert [r["output_text"] for r in _results(tmp_path / "run")["alpha"]] == [
        "answer to a0",
        "answer to a1",
        "answer to a2",
    ]


class _KilledBeforeCreate(GeminiBatchedModel):
    """Dies after the request file was uploaded (and its name saved with the intent), before the create call."""

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        raise SystemExit("killed before create")


def test_an_input_file_gone_before_the_create_is_uploaded_again_and_one_job_made(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1"]})
    with IndependentGeminiServer(answer=_answer) as server:
        killed = _KilledBeforeCreate(MODEL, None, api_key=TEST_KEY, base_url=server.base_url)
        with pytest.raises(SystemExit):
            _engine(killed, tmp_path / "run").run(items)
        (uploaded,) = server.files
        client = _client(server)  # held: a client left unreferenced can be closed mid-call
        client.files.delete(name=uploaded)  # as the Files API's 48 hours would
        summary = _engine(_model(server), tmp_path / "run").run(items)
        batches, calls = server.batches, server.calls
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert len(batches) == 1 and batches[0]["metadata"]["inputConfig"]["fileName"] != uploaded
    creates = [path for method, path in calls if path.endswith(":batchGenerateContent")]
    assert len(creates) == 2  # refused (404: the file is gone), then made once with the new upload


def _started(server: IndependentGeminiServer, run_dir: Path, items: list[PromptItem], batch_size: int = 4) -> None:
    """Submit every job of `items` and stop at once, the jobs still running (a run that timed out)."""
    engine = _engine(_model(server), run_dir, batch_size)
    engine.options.timeout_hours = 1e-9
    assert not engine.run(items).finished


def test_a_run_stopped_with_its_job_in_flight_polls_it_on_resume_instead_of_resubmitting(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1"]})
    with IndependentGeminiServer(answer=_answer, turnaround=0.5) as server:
        _started(server, tmp_path / "run", items)
        summary = _engine(_model(server), tmp_path / "run").run(items)
        assert summary.finished and len(server.batches) == 1


def test_cancelled_jobs_end_their_requests_as_cancelled_and_nothing_is_sent_again(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1"], "beta": ["b0"]})
    with IndependentGeminiServer(answer=_answer, turnaround=60) as server:
        _started(server, tmp_path / "run", items, batch_size=2)
        cancelled = _engine(_model(server), tmp_path / "run").cancel()
        assert [r.state for r in cancelled] == [JobState.CANCELLED] * 2
        summary = _engine(_model(server), tmp_path / "run").run(items)
        batches = server.batches
    assert summary.finished and summary.outcome_counts == {Outcome.CANCELLED: 3}
    assert [b["metadata"]["state"] for b in batches] == ["BATCH_STATE_CANCELLED"] * 2  # no job made after
    assert [b["error"]["code"] for b in batches] == [1, 1]  # google.rpc.Code.CANCELLED


def test_a_failed_job_keeps_the_operations_error_and_its_requests_are_sent_again(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1"]})
    with IndependentGeminiServer(answer=_answer, turnaround=0.2) as server:
        _started(server, tmp_path / "run", items)
        server.fail_batch(server.batches[0]["name"], "Internal error while running the batch.")
        summary = _engine(_model(server), tmp_path / "run").run(items)
        batches = server.batches
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert [b["metadata"]["state"] for b in batches] == ["BATCH_STATE_FAILED", "BATCH_STATE_SUCCEEDED"]
    # The SDK's Gemini path drops the operation's `error`: the adapter reads it off the wire.
    failed = next(r for r in RunStore(tmp_path / "run").load_records() if r.batch_id == batches[0]["name"])
    assert failed.state is JobState.FAILED and failed.error == "13: Internal error while running the batch."
    assert [r["attempts"] for r in _results(tmp_path / "run")["alpha"]] == [2, 2]


def test_an_expired_job_is_resubmitted_once(tmp_path: Path) -> None:
    items = _items({"alpha": ["a0", "a1", "a2"]})
    with IndependentGeminiServer(answer=_answer, turnaround=0.3) as server:
        _started(server, tmp_path / "run", items)
        server.expire(server.batches[0]["name"])
        summary = _engine(_model(server), tmp_path / "run").run(items)
        batches = server.batches
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert [b["metadata"]["state"] for b in batches] == ["BATCH_STATE_EXPIRED", "BATCH_STATE_SUCCEEDED"]
    assert all(r["attempts"] == 2 for r in _results(tmp_path / "run")["alpha"])


def test_a_create_refused_for_quota_waits_its_retry_delay_and_makes_one_job(tmp_path: Path) -> None:
    with IndependentGeminiServer(answer=_answer, refuse_creates=1) as server:
        summary = _engine(_model(server), tmp_path / "run").run(_items({"alpha": ["a0"]}))
        batches, calls, times = server.batches, server.calls, server.call_times
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 1}
    creates = [when for (_, path), when in zip(calls, times, strict=True) if path.endswith(":batchGenerateContent")]
    assert len(creates) == 2 and len(batches) == 1
    assert creates[1] - creates[0] >= 0.2  # the RetryInfo delay, read from the error body
    assert sum(path.startswith("/upload/v1beta/files?") for _, path in calls) == 1  # the upload was not repeated


def test_an_upload_refused_as_jsonl_is_sent_once_more_as_application_jsonl(tmp_path: Path) -> None:
    with IndependentGeminiServer(answer=_answer, refused_mime_types=("jsonl",)) as server:
        summary = _engine(_model(server), tmp_path / "run").run(_items({"alpha": ["a0"]}))
        uploads = [path for method, path in server.calls if path == "/upload/v1beta/files"]
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 1}
    assert len(uploads) == 2


def test_a_request_file_larger_than_one_upload_chunk_arrives_whole(tmp_path: Path) -> None:
    """google-genai uploads in 8 MiB chunks (`upload` at each offset, then `upload, finalize`)."""
    texts = [f"{i}" + "x" * 3_500_000 for i in range(3)]

    def short(request: dict[str, Any]) -> str:
        return f"{len(request_text(request))} characters starting {request_text(request)[:1]}"

    with IndependentGeminiServer(answer=short) as server:
        summary = _engine(_model(server), tmp_path / "run").run(_items({"alpha": texts}))
        chunks = [path for method, path in server.calls if method == "POST" and "upload_id=" in path]
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert len(chunks) == 2  # 10.5 MB: one full chunk, then the rest with finalize
    assert [r["output_text"] for r in _results(tmp_path / "run")["alpha"]] == [
        f"3500001 characters starting {i}" for i in range(3)
    ]


# ---- the generation command --------------------------------------------------------------------------------------


def _args(tmp_path: Path, inputs: dict[str, list[str]], out: str = "out") -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", list(inputs))
    inputs_dir = write_inputs(tmp_path / "inputs", inputs)
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs_dir),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(tmp_path / out),
    ]


def _env(server: IndependentGeminiServer) -> dict[str, str]:
    """The generation command reaches the server through the variables google-genai reads itself."""
    return cli_env(GOOGLE_API_KEY=TEST_KEY, GOOGLE_GEMINI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.05")


def test_generation_command_runs_against_the_server_by_the_sdk_environment(tmp_path: Path) -> None:
    inputs = {"alpha": ["a0", "a1", "a2"], "beta": ["b0", "POISON"]}
    with IndependentGeminiServer(answer=_answer, fail=_poison, turnaround=0.1) as server:
        done = run_generation(_args(tmp_path, inputs), _env(server), timeout=60)
        calls, batches = server.calls, server.batches
    assert done.returncode == 0, done.stderr
    assert calls[0][1].endswith("/models")  # the model name was checked against the list before anything was sent
    batch_calls = [path for _, path in calls[1:] if "/models" not in path or "batchGenerateContent" in path]
    assert batch_calls and all(path.startswith(("/v1beta/", "/upload/v1beta/")) for path in batch_calls)
    assert len(batches) == 1
    records = _results(only_run_dir(tmp_path / "out"))
    assert [r["output_text"] for r in records["alpha"]] == ["answer to a0", "answer to a1", "answer to a2"]
    assert records["beta"][1]["outcome"] == "errored" and records["beta"][1]["error"]["code"] == "INVALID_ARGUMENT"
    _assert_no_key_written(tmp_path / "out")


def test_generation_sigkilled_with_its_job_in_flight_resumes_without_a_second_job(tmp_path: Path) -> None:
    inputs = {"alpha": ["a0", "a1", "a2"]}
    with IndependentGeminiServer(answer=_answer, turnaround=0.6) as server:
        child = start_generation(_args(tmp_path, inputs), _env(server))
        deadline = time.monotonic() + 30
        while not server.batches and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert len(server.batches) == 1 and server.batches[0]["metadata"]["state"] != "BATCH_STATE_SUCCEEDED"
        run_dir = only_run_dir(tmp_path / "out")
        resumed = run_generation(["--resume", str(run_dir)], _env(server), timeout=60)
        batches = server.batches
    assert resumed.returncode == 0, resumed.stderr
    assert len(batches) == 1 and batches[0]["metadata"]["state"] == "BATCH_STATE_SUCCEEDED"
    assert [r["output_text"] for r in _results(run_dir)["alpha"]] == ["answer to a0", "answer to a1", "answer to a2"]
    _assert_no_key_written(tmp_path / "out")


def test_realtime_generation_calls_generate_content_and_types_a_refusal(tmp_path: Path) -> None:
    inputs = {"alpha": ["a0", "a1"], "beta": ["POISON"]}
    with IndependentGeminiServer(answer=_answer, fail=_poison) as server:
        done = run_generation([*_args(tmp_path, inputs), "--realtime"], _env(server), timeout=60)
        live, batches = server.live_requests, server.batches
    assert done.returncode == 0, done.stderr
    assert batches == [] and sorted(request_text_of(body) for body in live) == ["POISON", "a0", "a1"]
    records = _results(only_run_dir(tmp_path / "out"))
    assert [r["output_text"] for r in records["alpha"]] == ["answer to a0", "answer to a1"]
    assert records["beta"][0]["outcome"] == "errored" and records["beta"][0]["output_text"] is None
    assert "Invalid prompt: POISON" in records["beta"][0]["error"]["message"]


def test_realtime_generation_at_flex_asks_for_the_flex_tier_on_every_call(tmp_path: Path) -> None:
    with IndependentGeminiServer(answer=_answer) as server:
        done = run_generation([*_args(tmp_path, {"alpha": ["a0", "a1"]}), "--tier", "flex"], _env(server), timeout=60)
        live = server.live_requests
    assert done.returncode == 0, done.stderr
    assert [body.get("serviceTier") for body in live] == ["flex", "flex"]
    records = _results(only_run_dir(tmp_path / "out"))
    assert [r["output_text"] for r in records["alpha"]] == ["answer to a0", "answer to a1"]


def test_realtime_client_sends_system_instruction_and_schema_where_the_docs_define_them() -> None:
    """generateContent with a system prompt and a JSON schema: both exist in v1beta's GenerateContentRequest only."""
    from speceval.realtime.clients import GeminiGenerateModel

    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}

    def answer(request: dict[str, Any]) -> str:
        return json.dumps({"score": 3}) if "responseJsonSchema" in request["generationConfig"] else _answer(request)

    with IndependentGeminiServer(answer=answer) as server:
        params = GenerationParams(temperature=0.2, system_prompt="Be brief.")
        client = GeminiGenerateModel(MODEL, params, api_key=TEST_KEY, base_url=server.base_url)
        plain = client.complete("hello")
        rated = client.complete(Prompt.user("rate this", response_schema=schema))
        calls, live = server.calls, server.live_requests
    assert plain.error is None and plain.text == "answer to hello"
    assert rated.error is None and json.loads(rated.text or "") == {"score": 3}
    assert [path for _, path in calls] == [f"/v1beta/models/{MODEL}:generateContent"] * 2
    assert all(body["systemInstruction"] == {"parts": [{"text": "Be brief."}]} for body in live)


# ---- an experiment: a Gemini candidate judged by a Gemini judge --------------------------------------------------

JUDGE = "gemini-2.5-pro"
JUDGE_MARK = "speceval judge prompt: compliance_binary_v2"
RESPONSE = re.compile(r"^<<<BEGIN assistant_response (\S+)>>>\n(.*?)\n<<<END assistant_response \1>>>$", re.M | re.S)


def _compliant(answer: str) -> bool:
    return int(hashlib.sha256(answer.encode()).hexdigest()[:8], 16) % 2 == 0


def _candidate_or_judge(request: dict[str, Any]) -> str:
    prompt = request_text(request)
    if JUDGE_MARK not in prompt:
        return "answer to " + prompt
    match = RESPONSE.search(prompt)
    assert match is not None, prompt
    verdict = {"compliant": _compliant(match.group(2)), "confidence": 0.9, "explanation": "decided"}
    return "Brief reasoning.\n" + json.dumps(verdict)


def test_an_experiment_judges_a_gemini_candidate_with_a_gemini_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(tmp_path / "inputs", {s: [f"{s} question {i}" for i in range(5)] for s in ("alpha", "beta")})
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"""experiment_name: gemini
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {MODEL}
judges:
  - model: {JUDGE}
stages: [generation, compliance]
engine:
  poll_interval: 0.05
""")
    with IndependentGeminiServer(answer=_candidate_or_judge) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        code = speceval_main(["run", str(experiment)])
        batches, lines = server.batches, server.lines
    assert code == 0
    models = sorted(b["metadata"]["model"] for b in batches)
    assert models == [f"models/{MODEL}", f"models/{JUDGE}"] and len(lines) == 20
    assert all(b["metadata"]["batchStats"]["failedRequestCount"] == "0" for b in batches)
    answers = [request_text_of(r) for _, _, r in lines if JUDGE_MARK not in request_text_of(r)]
    (summary_path,) = (tmp_path / "out" / "compliance").rglob("summary.json")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    assert (summary["model"], summary["judge"], summary["outcomes"]["judged"]) == (MODEL, JUDGE, 10)
    expected = sum(_compliant("answer to " + a) for a in answers) / len(answers)
    assert summary["compliance_rate"] == pytest.approx(expected) and 0 < expected < 1
    _assert_no_key_written(tmp_path / "out")

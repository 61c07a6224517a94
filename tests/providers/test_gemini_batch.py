"""The Gemini adapter through the real `google-genai` SDK against the emulator over loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from google.genai import errors

from speceval.batch.records import BatchRecord, GeminiHandle, JobState, Outcome, RemoteJob, SubmissionIntent
from speceval.emulator import Emulator, FaultConfig, HttpFault
from speceval.errors import MissingCredentialsError, ProviderError, TransientProviderError
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.anthropic_batch import AnthropicBatchedModel
from speceval.providers.gemini_batch import GeminiBatchedModel, error_headers, job_state, parse_result_line
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.redaction import MARKER
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.key_echo_server import KeyEchoServer
from tests.providers.test_anthropic_batch import (
    LONG_ID,
    PARAMS,
    config_for,
    generate_with,
    load,
    resume,
)

MODEL = "gemini-2.5-flash"


def adapter(emu: Emulator, cls: type[GeminiBatchedModel] = GeminiBatchedModel, **kwargs: Any) -> GeminiBatchedModel:
    return cls(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.gemini_base_url, **kwargs)


def generate(tmp_path: Path, emu: Emulator, statements: dict[str, list[str]], **engine: float):
    return generate_with(tmp_path, adapter(emu), statements, **engine)


def metadata(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (run_dir / "metadata").glob("*.json")]


# -- end to end through the pipeline ------------------------------------------------------------------------


def test_shuffled_results_map_back_to_their_inputs(tmp_path):
    statements = {"be_honest": [f"question {i}" for i in range(12)], LONG_ID: ["x", "y", "z"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1, shuffle_results=True)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
        created = emu.stats.batches_created["gemini"]
        uploaded = emu.stats.files_uploaded
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 15}
    assert created == 1 and uploaded == 1
    for statement_id, texts in statements.items():
        records = load(run_dir, statement_id)
        assert [r["input_text"] for r in records] == texts
        assert [r["original_index"] for r in records] == list(range(len(texts)))
        for record in records:
            assert record["outcome"] == "succeeded" and record["error"] is None
            assert record["output_text"].startswith("[synthetic")
            assert record["usage"]["input_tokens"] > 0 and record["usage"]["output_tokens"] > 0
    answers = [r["output_text"] for r in load(run_dir, "be_honest")]
    assert len(set(answers)) == len(answers)


def test_request_file_is_the_batch_request_shape():
    params = GenerationParams(temperature=0.3, max_tokens=77, system_prompt="Be brief.")
    line = json.loads(GeminiBatchedModel(MODEL, params, api_key=TEST_KEY).format_request("0123456789ab-7", "2+2?"))
    assert line == {
        "key": "0123456789ab-7",
        "request": {
            "contents": [{"role": "user", "parts": [{"text": "2+2?"}]}],
            "generation_config": {"max_output_tokens": 77, "temperature": 0.3},
            "system_instruction": {"parts": [{"text": "Be brief."}]},
        },
    }
    bare = GeminiBatchedModel(MODEL, GenerationParams(temperature=None, max_tokens=5), api_key=TEST_KEY)
    assert json.loads(bare.format_request("k-0", "q"))["request"] == {
        "contents": [{"role": "user", "parts": [{"text": "q"}]}],
        "generation_config": {"max_output_tokens": 5},
    }


def test_errored_request_carries_the_provider_message_and_is_never_output_text(tmp_path):
    statements = {"s": ["fine", "bad one [[emulator:error]]", "also fine"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
        created = emu.stats.batches_created["gemini"]
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.ERRORED: 1}
    bad = load(run_dir, "s")[1]
    assert bad["outcome"] == "errored" and bad["output_text"] is None
    assert bad["error"]["code"] == "INVALID_ARGUMENT" and bad["error"]["status_code"] == 400
    assert "[[emulator:error]]" in bad["error"]["message"] and bad["error"]["retryable"] is False
    assert created == 1


def test_server_errored_requests_are_resubmitted_until_attempts_run_out(tmp_path):
    statements = {"s": [f"q{i}" for i in range(3)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, error_rate=1.0)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, max_attempts=2)
        created = emu.stats.batches_created["gemini"]
    assert summary.finished and summary.outcome_counts == {Outcome.ERRORED: 3}
    assert created == 2
    record = load(run_dir, "s")[0]
    assert record["error"]["status_code"] == 500 and record["error"]["retryable"] and record["attempts"] == 2


def test_batch_size_and_one_metadata_file_per_job(tmp_path):
    statements = {"s": [f"q{i}" for i in range(7)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, batch_size=3)
        jobs = emu.list_jobs("gemini")
    assert summary.finished and summary.jobs == 3 == len(jobs)
    records = metadata(run_dir)
    assert sorted(r["request_count"] for r in records) == [1, 3, 3]
    for record in records:
        # Batch names contain a slash; the record keeps the name as the provider spells it.
        assert record["batch_id"].startswith("batches/") and record["raw_state"] == "JOB_STATE_SUCCEEDED"
        assert record["state"] == "completed"
        assert record["handle"]["input_file_name"].startswith("files/")
        assert record["handle"]["responses_file_name"].startswith("files/")


# -- crash safety and reconciliation -------------------------------------------------------------------------


class CrashAfterCreate(GeminiBatchedModel):
    """Dies (as a SIGKILL would) right after the provider created the job, before we record it."""

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        super().generate_batch(intent, request_file)
        raise SystemExit("killed in the window")


def test_crash_between_create_and_record_adopts_the_job_without_paying_twice(tmp_path):
    statements = {"s": [f"q{i}" for i in range(4)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.2)) as emu:
        pipeline = BatchedGenerationPipeline(config_for(tmp_path, MODEL, statements, batch_size=2))
        with pytest.raises(SystemExit):
            pipeline.run(adapter(emu, CrashAfterCreate))
        assert emu.stats.batches_created["gemini"] == 1
        summary = resume(pipeline.run_dir, adapter(emu))
        created = emu.stats.batches_created["gemini"]
        uploaded = emu.stats.files_uploaded
        jobs = {job.id for job in emu.list_jobs("gemini")}
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    assert created == 2 and uploaded == 2  # one job and one upload per chunk: nothing paid twice
    assert {r["batch_id"] for r in metadata(pipeline.run_dir)} == jobs
    assert not list((pipeline.run_dir / "intents").glob("*.json"))


def test_lost_create_response_is_found_by_display_name(tmp_path):
    statements = {"s": [f"q{i}" for i in range(3)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1, create_delay_seconds=1.0)) as emu:
        summary, run_dir = generate_with(tmp_path, adapter(emu, timeout=0.3), statements)
        created = emu.stats.batches_created["gemini"]
        listed = emu.stats.requests.get("GET /gemini/{ver:v1beta}/batches", 0)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert created == 1 and listed >= 1  # the lost job was looked up, then adopted
    assert len(list((run_dir / "metadata").glob("*.json"))) == 1


def test_find_submitted_matches_only_its_own_display_name(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        model = adapter(emu)
        request_file = tmp_path / "r.jsonl"
        key = "feedfacecafe" + "0" * 20
        request_file.write_bytes(b"".join(model.format_request(f"{key[:12]}-{i}", f"q{i}") for i in range(2)))
        intent = SubmissionIntent(
            idempotency_key=key,
            provider="gemini",
            model=MODEL,
            request_file="r.jsonl",
            request_bytes=request_file.stat().st_size,
            requests={f"{key[:12]}-{i}": {"statement_id": "s", "original_index": i} for i in range(2)},
        )
        assert model.find_submitted(intent) is None
        intent.handle = model.prepare(intent, request_file)
        job = model.generate_batch(intent, request_file)
        found = adapter(emu).find_submitted(intent)
        assert found is not None and found.batch_id == job.batch_id
        assert found.handle.input_file_name == intent.handle.input_file_name
        other = intent.model_copy(update={"idempotency_key": "0" * 32})
        assert adapter(emu).find_submitted(other) is None


def test_cancel_ends_the_job_without_results(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=30)) as emu:
        model = adapter(emu)
        request_file = tmp_path / "r.jsonl"
        request_file.write_bytes(model.format_request("abc-0", "q"))
        intent = SubmissionIntent(
            idempotency_key="a" * 32,
            provider="gemini",
            model=MODEL,
            request_file="r.jsonl",
            request_bytes=1,
            requests={"abc-0": {"statement_id": "s", "original_index": 0}},
        )
        job = model.generate_batch(intent, request_file)
        record = BatchRecord(
            batch_id=job.batch_id,
            provider="gemini",
            model=MODEL,
            idempotency_key=intent.idempotency_key,
            state=job.state,
            raw_state=job.raw_state,
            handle=job.handle,
            request_file="r.jsonl",
            request_count=1,
            requests=intent.requests,
        )
        after = model.cancel_batch(record)
        assert not after.state.is_terminal or after.state is JobState.CANCELLED
        deadline = time.monotonic() + 10
        while not after.state.is_terminal and time.monotonic() < deadline:
            time.sleep(0.05)
            after = model.check_batch_progress(record)
        assert after.state is JobState.CANCELLED and after.raw_state == "JOB_STATE_CANCELLED"
        record.state, record.handle = after.state, after.handle
        assert list(model.get_batch_results(record)) == []


def test_keys_and_base_url_come_from_the_environment(tmp_path, monkeypatch):
    with pytest.raises(MissingCredentialsError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        GeminiBatchedModel(MODEL)
    monkeypatch.setenv("GEMINI_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")  # must not switch this adapter to Vertex
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", emu.gemini_base_url)
        summary, _ = generate_with(tmp_path, GeminiBatchedModel(MODEL, PARAMS), {"s": ["q"]})
        assert emu.stats.batches_created["gemini"] == 1
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 1}


def test_provider_errors_are_translated_and_never_leak_the_key(tmp_path):
    faults = FaultConfig(http_faults=[HttpFault(provider="gemini", method="GET", status=403, count=1)])
    with Emulator(faults=faults) as emu:
        model = adapter(emu)
        record = BatchRecord(
            batch_id="batches/nope",
            provider="gemini",
            model=MODEL,
            idempotency_key="k",
            state=JobState.IN_PROGRESS,
            raw_state="JOB_STATE_RUNNING",
            handle=GeminiHandle(),
            request_file="r",
            request_count=0,
            requests={},
        )
        with pytest.raises(ProviderError) as info:
            model.check_batch_progress(record)
        assert info.value.status_code == 403 and not isinstance(info.value, TransientProviderError)
        with pytest.raises(ProviderError) as info:
            model.check_batch_progress(record)  # the emulator's own 404 for an unknown batch
        assert info.value.status_code == 404 and "NOT_FOUND" in str(info.value)
    with pytest.raises(TransientProviderError) as lost:  # nothing listens there any more
        model.check_batch_progress(record)
    assert lost.value.status_code is None

    def refuse(method: str, path: str) -> tuple[int, dict]:  # a server that quotes the key it was sent
        return 400, {"error": {"code": 400, "message": "API key not valid: {key}", "status": "INVALID_ARGUMENT"}}

    with KeyEchoServer(refuse) as server:
        with pytest.raises(ProviderError) as info:
            GeminiBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=server.base_url).check_batch_progress(record)
        assert server.requests and server.requests[0][1].endswith("/batches/nope")
    assert info.value.status_code == 400 and f"API key not valid: {MARKER}" in str(info.value)
    assert TEST_KEY not in str(info.value)


# -- the same run through every provider ----------------------------------------------------------------------


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys in order and value types, null included."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def record_shape(record: dict[str, Any]) -> Any:
    """`shape` of a results record, where the one field that may differ in type across providers is widened."""
    found = shape(record)
    if isinstance(found["error"], dict):
        # An error line carries an HTTP status for OpenAI (per-line `status_code`) but none for Anthropic's errored
        # results: int or null, nothing else.
        assert found["error"]["status_code"] in ("int", "NoneType"), record
        found["error"]["status_code"] = "int or null"
    return found


def test_results_files_have_the_same_structure_for_every_provider(tmp_path):
    statements = {"be_honest": ["q0", "q1 [[emulator:error]]", "q2"], LONG_ID: ["x", "y"]}
    results: dict[str, dict[str, list[dict]]] = {}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        models = {
            "openai": OpenAIBatchedModel("gpt-4.1-mini", PARAMS, api_key=TEST_KEY, base_url=emu.openai_base_url),
            "anthropic": AnthropicBatchedModel(
                MODEL.replace("gemini", "claude"), PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url
            ),
            "gemini": adapter(emu),
        }
        for name, model in models.items():
            summary, run_dir = generate_with(tmp_path / name, model, statements)
            assert summary.outcome_counts == {Outcome.SUCCEEDED: 4, Outcome.ERRORED: 1}, name
            results[name] = {sid: load(run_dir, sid) for sid in statements}
    reference = results["openai"]
    for name, files in results.items():
        assert files.keys() == reference.keys()
        for sid, records in files.items():
            expected = reference[sid]
            assert [r["original_index"] for r in records] == [r["original_index"] for r in expected]
            assert [r["input_text"] for r in records] == [r["input_text"] for r in expected]
            assert [r["outcome"] for r in records] == [r["outcome"] for r in expected], name
            for record, other in zip(records, expected, strict=True):
                assert list(record) == list(other), name
                if record["error"] is not None:
                    assert list(record["error"]) == list(other["error"]) and record["error"]["message"]
                assert record_shape(record) == record_shape(other), (name, record, other)


# -- pure parsing ---------------------------------------------------------------------------------------------


def response_line(key: str, response: dict, *, in_metadata: bool = False) -> str:
    head = {"metadata": {"key": key}} if in_metadata else {"key": key}
    return json.dumps({**head, "response": response})


def test_parse_success_joins_parts_skips_thoughts_and_reads_usage():
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "thinking...", "thought": True}, {"text": "Hello, "}, {"text": "you"}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "thoughtsTokenCount": 5},
    }
    outcome = parse_result_line(response_line("k-0", response), "files/x")
    assert outcome.outcome is Outcome.SUCCEEDED and outcome.output_text == "Hello, you"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (7, 8)


def test_parse_accepts_snake_case_and_the_key_in_metadata():
    response = {
        "candidates": [{"content": {"parts": [{"text": "ok"}]}}],
        "usage_metadata": {"prompt_token_count": 2, "candidates_token_count": 1},
    }
    outcome = parse_result_line(response_line("k-1", response, in_metadata=True), "files/x")
    assert outcome.custom_id == "k-1" and outcome.output_text == "ok"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (2, 1)


def test_parse_blocked_prompt_is_an_error_with_the_reason():
    response = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}}
    outcome = parse_result_line(response_line("k-2", response), "files/x")
    assert outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert outcome.error.code == "prompt_blocked" and "SAFETY" in outcome.error.message


def test_parse_candidate_without_text_is_an_error_with_the_finish_reason():
    response = {"candidates": [{"finishReason": "RECITATION", "content": {"parts": []}}]}
    outcome = parse_result_line(response_line("k-3", response), "files/x")
    assert outcome.outcome is Outcome.ERRORED and "RECITATION" in outcome.error.message


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [(400, "INVALID_ARGUMENT", False), (500, "INTERNAL", True), (429, "RESOURCE_EXHAUSTED", True)],
)
def test_parse_error_lines(code, status, retryable):
    line = json.dumps({"key": "k-4", "error": {"code": code, "message": "went wrong", "status": status}})
    outcome = parse_result_line(line, "files/x")
    assert outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert (outcome.error.code, outcome.error.status_code, outcome.error.retryable) == (status, code, retryable)
    assert outcome.error.message == "went wrong"


@pytest.mark.parametrize("response", [{}, {"response": None}, {"response": "text"}])
def test_a_line_with_neither_a_response_nor_an_error_is_a_malformed_answer_not_a_success(response):
    outcome = parse_result_line(json.dumps({"key": "k-5", **response}), "files/x")
    assert outcome.custom_id == "k-5" and outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert (outcome.error.code, outcome.error.retryable) == ("malformed_response", False)
    assert outcome.error.message == "the result line has neither a response nor an error"


@pytest.mark.parametrize("bad", ['{"key": "k-0", "response": {"candi', "nonsense", "[1, 2]"])
def test_unreadable_line_is_transient(bad):
    with pytest.raises(TransientProviderError):
        parse_result_line(bad, "files/x")


def test_line_without_a_key_is_skipped():
    assert parse_result_line(json.dumps({"response": {"candidates": []}}), "files/x") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("JOB_STATE_PENDING", JobState.IN_PROGRESS),
        ("JOB_STATE_RUNNING", JobState.IN_PROGRESS),
        ("JOB_STATE_SUCCEEDED", JobState.COMPLETED),
        ("BATCH_STATE_SUCCEEDED", JobState.COMPLETED),
        ("JOB_STATE_FAILED", JobState.FAILED),
        ("JOB_STATE_CANCELLED", JobState.CANCELLED),
        ("JOB_STATE_CANCELLING", JobState.CANCELLING),
        ("JOB_STATE_EXPIRED", JobState.EXPIRED),
        ("JOB_STATE_SOMETHING_NEW", JobState.IN_PROGRESS),
    ],
)
def test_job_state(raw, expected):
    assert job_state(raw) is expected


def test_retry_info_in_the_body_becomes_retry_after():
    body = {
        "error": {
            "code": 429,
            "message": "quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "22s"},
            ],
        }
    }
    assert error_headers(errors.ClientError(429, body))["retry-after"] == "22"
    assert "retry-after" not in error_headers(errors.ClientError(400, {"error": {"code": 400, "message": "no"}}))

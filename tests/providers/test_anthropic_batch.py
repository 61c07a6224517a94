"""The Anthropic adapter through the real `anthropic` SDK against the emulator over loopback."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from speceval.batch.engine import EngineOptions
from speceval.batch.model import BatchedModel
from speceval.batch.records import AnthropicHandle, BatchRecord, JobState, Outcome, RemoteJob, SubmissionIntent
from speceval.emulator import Emulator, FaultConfig
from speceval.errors import MissingCredentialsError, ProviderError, TransientProviderError
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.providers.anthropic_batch import AnthropicBatchedModel, job_state, parse_result_line
from speceval.redaction import MARKER
from speceval.wire.anthropic import SAMPLING_REFUSED_FROM, sampling_fields, sdk_api_version
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY, write_inputs, write_spec
from tests.key_echo_server import KeyEchoServer

MODEL = "claude-sonnet-4-6"
PARAMS = GenerationParams(temperature=0.0, max_tokens=64)
LONG_ID = "a" * 40 + ".b c." + "d" * 35  # 80 characters, with dots and spaces


def config_for(
    tmp_path: Path, model_name: str, statements: dict[str, list[str]], *, org: str | None = None, **engine: float
) -> GenerationConfig:
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    return GenerationConfig(
        spec_path=spec,
        inputs_dir=inputs,
        model_name=model_name,
        org=org,
        output_base_dir=tmp_path / "out",
        params=PARAMS,
        engine=EngineOptions(
            batch_size=int(engine.get("batch_size", 50)),
            poll_interval=0.05,
            timeout_hours=0.05,
            max_attempts=int(engine.get("max_attempts", 3)),
        ),
    )


def generate_with(
    tmp_path: Path, model: BatchedModel, statements: dict[str, list[str]], **engine: float
) -> tuple[object, Path]:
    """Run the generation pipeline end to end with `model`; returns (summary, run directory)."""
    # The config names the provider the adapter is (Gemini's adapter calls itself 'gemini'; its org is 'google'),
    # as a pipeline refuses a model of another provider than its config's.
    org = {"gemini": "google"}.get(model.provider, model.provider)
    pipeline = BatchedGenerationPipeline(config_for(tmp_path, model.model_name, statements, org=org, **engine))
    return pipeline.run(model), pipeline.run_dir


def adapter(emu: Emulator, cls: type[AnthropicBatchedModel] = AnthropicBatchedModel, **kwargs: object):
    return cls(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url, **kwargs)


def generate(tmp_path: Path, emu: Emulator, statements: dict[str, list[str]], **engine: float):
    return generate_with(tmp_path, adapter(emu), statements, **engine)


def load(run_dir: Path, statement_id: str) -> list[dict]:
    return json.loads((run_dir / "results" / f"{statement_id}.json").read_text())


def switch_faults_after_first_create(emu: Emulator, provider: str, then: FaultConfig) -> threading.Thread:
    """Replace the emulator's faults once the first job of `provider` exists (its faults stay frozen in it)."""

    def switch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and emu.stats.batches_created.get(provider, 0) < 1:
            time.sleep(0.005)
        emu.faults = then

    thread = threading.Thread(target=switch)
    thread.start()
    return thread


# -- end to end through the pipeline ------------------------------------------------------------------------


def test_shuffled_results_map_back_to_their_inputs(tmp_path):
    statements = {"be_honest": [f"question {i}" for i in range(12)], LONG_ID: ["x", "y", "z"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1, shuffle_results=True)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
        created = emu.stats.batches_created["anthropic"]
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 15}
    assert created == 1
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


def test_request_file_is_the_message_batches_request_shape(caplog):
    params = GenerationParams(temperature=0.3, max_tokens=77, system_prompt="Be brief.")
    with caplog.at_level(logging.WARNING):
        model = AnthropicBatchedModel(MODEL, params, api_key=TEST_KEY)
    line = json.loads(model.format_request("0123456789ab-7", "What is 2+2?"))
    # The installed SDK speaks API version 2026-10-21, which refuses `temperature` at any value (400 per request,
    # a day later in a batch): it is left out, and the user is told.
    assert sdk_api_version() >= SAMPLING_REFUSED_FROM
    assert line == {
        "custom_id": "0123456789ab-7",
        "params": {
            "model": MODEL,
            "max_tokens": 77,
            "messages": [{"role": "user", "content": "What is 2+2?"}],
            "system": "Be brief.",
        },
    }
    assert "temperature 0.3 is not sent" in caplog.text
    # Under the older API version (older SDKs) the temperature is part of the request.
    assert sampling_fields(params, MODEL, api_version="2023-06-01") == {"temperature": 0.3}
    bare = AnthropicBatchedModel(MODEL, GenerationParams(temperature=None), api_key=TEST_KEY)
    assert set(json.loads(bare.format_request("k-0", "q"))["params"]) == {"model", "max_tokens", "messages"}


def test_errored_request_carries_the_provider_message_and_is_never_output_text(tmp_path):
    statements = {"s": ["fine", "bad one [[emulator:error]]", "also fine"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements)
        created = emu.stats.batches_created["anthropic"]
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.ERRORED: 1}
    bad = load(run_dir, "s")[1]
    assert bad["outcome"] == "errored" and bad["output_text"] is None
    assert bad["error"]["code"] == "invalid_request_error"
    assert "[[emulator:error]]" in bad["error"]["message"] and bad["error"]["retryable"] is False
    assert created == 1  # the request's own fault: not resubmitted


def test_server_errored_requests_are_resubmitted_until_attempts_run_out(tmp_path):
    statements = {"s": [f"q{i}" for i in range(4)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, error_rate=1.0)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, max_attempts=2)
        created = emu.stats.batches_created["anthropic"]
    assert summary.finished and summary.outcome_counts == {Outcome.ERRORED: 4}
    assert created == 2
    record = load(run_dir, "s")[0]
    assert record["error"]["code"] == "api_error" and record["error"]["retryable"] and record["attempts"] == 2


def test_batch_size_and_one_metadata_file_per_job(tmp_path):
    statements = {"s": [f"q{i}" for i in range(7)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, batch_size=3)
        jobs = emu.list_jobs("anthropic")
    assert summary.finished and summary.jobs == 3 == len(jobs)
    records = [json.loads(p.read_text()) for p in (run_dir / "metadata").glob("*.json")]
    assert sorted(r["request_count"] for r in records) == [1, 3, 3]
    for record in records:
        assert record["batch_id"].startswith("msgbatch_") and record["raw_state"] == "ended"
        assert record["state"] == "completed" and record["handle"]["results_url"]


# -- crash safety and reconciliation -------------------------------------------------------------------------


class CrashOnCreate(AnthropicBatchedModel):
    """Dies (as a SIGKILL would) right after the provider created job number `crash_at`, before we record it."""

    crash_at = 1

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        job = super().generate_batch(intent, request_file)
        if len(self._created) >= self.crash_at:
            raise SystemExit("killed in the window")
        return job


class CrashOnSecondCreate(CrashOnCreate):
    crash_at = 2


def resume(run_dir: Path, model: BatchedModel):
    pipeline = BatchedGenerationPipeline.resume(
        run_dir, engine=EngineOptions(batch_size=2, poll_interval=0.05, timeout_hours=0.05)
    )
    return pipeline.run(model)


@pytest.mark.parametrize(
    ("crash", "turnaround"),
    [(CrashOnCreate, 0.2), (CrashOnSecondCreate, 0.05), (CrashOnSecondCreate, 1.0)],
    ids=["first-job", "sibling-ended", "sibling-in-progress"],
)
def test_crash_between_create_and_record_adopts_the_job_without_paying_twice(tmp_path, crash, turnaround):
    # Every chunk has the same size, so the batch found on resume must be told apart from its sibling: by its
    # custom ids once the sibling has ended, by creation time while both are in progress.
    statements = {"s": [f"q{i}" for i in range(4)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=turnaround)) as emu:
        pipeline = BatchedGenerationPipeline(config_for(tmp_path, MODEL, statements, batch_size=2))
        with pytest.raises(SystemExit):
            pipeline.run(adapter(emu, crash))
        assert emu.stats.batches_created["anthropic"] == crash.crash_at
        if turnaround < 0.5:
            time.sleep(2 * turnaround)
        summary = resume(pipeline.run_dir, adapter(emu))
        created = emu.stats.batches_created["anthropic"]
        jobs = {job.id for job in emu.list_jobs("anthropic")}
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    assert created == 2  # one batch per chunk: the one created before the crash was adopted, not recreated
    records = [json.loads(p.read_text()) for p in (pipeline.run_dir / "metadata").glob("*.json")]
    assert {r["batch_id"] for r in records} == jobs and len(records) == 2
    assert not list((pipeline.run_dir / "intents").glob("*.json"))
    for record in load(pipeline.run_dir, "s"):
        assert record["attempts"] == 1 and record["custom_id"].split("-")[0] in {
            r["idempotency_key"][:12] for r in records
        }


def test_lost_create_responses_are_found_instead_of_created_again(tmp_path):
    # Every create is stored but its response never arrives in time. The second chunk has the same size as the
    # first, whose batch was adopted moments before: it must find its own batch, not adopt the first again.
    statements = {"s": [f"q{i}" for i in range(4)]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1, create_delay_seconds=1.0)) as emu:
        model = AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url, timeout=0.3)
        summary, run_dir = generate_with(tmp_path, model, statements, batch_size=2)
        created = emu.stats.batches_created["anthropic"]
        listed = emu.stats.requests.get("GET /anthropic/v1/messages/batches", 0)
        jobs = {job.id for job in emu.list_jobs("anthropic")}
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    assert created == 2 and listed >= 2  # each lost batch was looked up, then adopted
    records = [json.loads(p.read_text()) for p in (run_dir / "metadata").glob("*.json")]
    assert {r["batch_id"] for r in records} == jobs and len(records) == 2


def test_find_submitted_ignores_batches_of_another_size_or_time(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        model = adapter(emu)
        request_file = tmp_path / "r.jsonl"
        key = "feedfacecafe" + "0" * 20
        request_file.write_bytes(b"".join(model.format_request(f"{key[:12]}-{i}", f"q{i}") for i in range(3)))
        intent = SubmissionIntent(
            idempotency_key=key,
            provider="anthropic",
            model=MODEL,
            request_file="r.jsonl",
            request_bytes=request_file.stat().st_size,
            requests={f"{key[:12]}-{i}": {"statement_id": "s", "original_index": i} for i in range(3)},
        )
        assert adapter(emu).find_submitted(intent) is None
        job = model.generate_batch(intent, request_file)
        fresh = adapter(emu)  # a new process: knows nothing of what was created before
        assert fresh.find_submitted(intent).batch_id == job.batch_id
        time.sleep(0.2)  # ended now: confirmed through the custom ids of its results
        assert adapter(emu).find_submitted(intent).batch_id == job.batch_id
        other = intent.model_copy(update={"idempotency_key": "0123456789ab" + "0" * 20})
        assert adapter(emu).find_submitted(other) is None  # same size and time, but not our custom ids
        smaller = intent.model_copy(update={"refs": [("s", 0, 2)]})
        assert adapter(emu).find_submitted(smaller) is None


def test_missing_key_names_the_variable(monkeypatch):
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        AnthropicBatchedModel(MODEL)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    assert AnthropicBatchedModel(MODEL).model_name == MODEL


def test_base_url_from_the_environment_is_honoured(tmp_path, monkeypatch):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.anthropic_base_url)
        summary, _ = generate_with(tmp_path, AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY), {"s": ["q"]})
        assert emu.stats.batches_created["anthropic"] == 1
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 1}


def test_provider_errors_never_leak_the_key(tmp_path):
    def refuse(method: str, path: str) -> tuple[int, dict]:  # a server that quotes the key it was sent
        return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key {key}"}}

    with KeyEchoServer(refuse) as server:
        model = AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=server.base_url)
        record = BatchRecord(
            batch_id="msgbatch_nope",
            provider="anthropic",
            model=MODEL,
            idempotency_key="k",
            state=JobState.IN_PROGRESS,
            raw_state="in_progress",
            handle=AnthropicHandle(),
            request_file="r",
            request_count=0,
            requests={},
        )
        with pytest.raises(ProviderError) as info:
            model.check_batch_progress(record)
        assert server.requests == [("GET", "/v1/messages/batches/msgbatch_nope")]
    assert info.value.status_code == 401 and not isinstance(info.value, TransientProviderError)
    assert f"invalid x-api-key {MARKER}" in str(info.value)  # the key reached us, and was redacted
    assert TEST_KEY not in str(info.value)


# -- pure parsing ---------------------------------------------------------------------------------------------


def line(custom_id: str, result: dict) -> str:
    return json.dumps({"custom_id": custom_id, "result": result})


def test_parse_succeeded_joins_text_blocks_and_reads_usage():
    message = {
        "content": [
            {"type": "text", "text": "Hello, "},
            {"type": "tool_use", "id": "t"},
            {"type": "text", "text": "you"},
        ],
        "usage": {"input_tokens": 11, "output_tokens": 3, "cache_read_input_tokens": 0},
        "stop_reason": "end_turn",
    }
    outcome = parse_result_line(line("k-0", {"type": "succeeded", "message": message}), "b")
    assert outcome.outcome is Outcome.SUCCEEDED and outcome.output_text == "Hello, you"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (11, 3)


def test_parse_succeeded_without_text_is_an_error_not_an_empty_answer():
    message = {"content": [], "usage": {"input_tokens": 5, "output_tokens": 0}, "stop_reason": "refusal"}
    outcome = parse_result_line(line("k-0", {"type": "succeeded", "message": message}), "b")
    assert outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert outcome.error.code == "empty_response" and "refusal" in outcome.error.message


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        ("invalid_request_error", False),
        ("api_error", True),
        ("overloaded_error", True),
        ("rate_limit_error", True),
        ("authentication_error", False),
    ],
)
def test_parse_errored(kind, retryable):
    error = {"type": "error", "error": {"type": kind, "message": f"{kind} happened"}, "request_id": "req_1"}
    outcome = parse_result_line(line("k-1", {"type": "errored", "error": error}), "b")
    assert outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert outcome.error.code == kind and outcome.error.message == f"{kind} happened"
    assert outcome.error.retryable is retryable


def test_parse_expired_canceled_and_unknown_types():
    expired = parse_result_line(line("k-2", {"type": "expired"}), "b")
    assert expired.outcome is Outcome.EXPIRED and expired.error.retryable
    canceled = parse_result_line(line("k-3", {"type": "canceled"}), "b")
    assert canceled.outcome is Outcome.CANCELLED
    weird = parse_result_line(
        line("k-4", {"type": "weird", "message": {"content": [{"type": "text", "text": "x"}]}}), "b"
    )
    assert weird.outcome is Outcome.ERRORED and "weird" in weird.error.message and weird.output_text is None


@pytest.mark.parametrize("bad", ['{"custom_id": "k-0", "result": {"type": "succ', "not json", '{"result": {}}', "[]"])
def test_unreadable_line_is_transient(bad):
    with pytest.raises(TransientProviderError):
        parse_result_line(bad, "b")


def counts(**values: int) -> SimpleNamespace:
    base = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    return SimpleNamespace(**{**base, **values})


@pytest.mark.parametrize(
    ("status", "request_counts", "cancel", "expected"),
    [
        ("in_progress", counts(processing=3), False, JobState.IN_PROGRESS),
        ("canceling", counts(processing=3), True, JobState.CANCELLING),
        ("ended", counts(succeeded=2, errored=1), False, JobState.COMPLETED),
        ("ended", counts(succeeded=1, canceled=2), True, JobState.CANCELLED),
        ("ended", counts(succeeded=1, expired=2), False, JobState.EXPIRED),
        ("something_new", counts(processing=1), False, JobState.IN_PROGRESS),
    ],
)
def test_job_state(status, request_counts, cancel, expected):
    assert job_state(status, request_counts, cancel_initiated=cancel) is expected

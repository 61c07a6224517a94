"""Fault-injection suite: each named scenario runs a generation job through a real SDK against a misbehaving
emulator, for every provider where the fault exists, and checks that the run ends with every request in a final,
correct outcome, that nothing was paid for twice, and that nothing was lost."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from speceval.batch.engine import EngineOptions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineSummary
from speceval.emulator import Emulator, FaultConfig, HttpFault
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.providers.anthropic_batch import AnthropicBatchedModel
from speceval.providers.gemini_batch import GeminiBatchedModel
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY, write_inputs, write_spec

PROVIDERS = ("openai", "anthropic", "gemini")
STATEMENTS = {"be_honest": [f"honest question {i}" for i in range(6)], "avoid.errors now": ["x", "y", "z", "w"]}
TOTAL = 10
PARAMS = GenerationParams(temperature=0.0, max_tokens=64)


def make_model(provider: str, emu: Emulator) -> BatchedModel:
    if provider == "openai":
        return OpenAIBatchedModel("gpt-4.1-mini", PARAMS, api_key=TEST_KEY, base_url=emu.openai_base_url)
    if provider == "anthropic":
        return AnthropicBatchedModel(
            "claude-haiku-4-5-20251001", PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url
        )
    return GeminiBatchedModel(
        "gemini-2.0-flash-001", PARAMS, api_key=TEST_KEY, base_url=emu.gemini_base_url, timeout=10.0
    )


@dataclass
class Outcome:
    summary: EngineSummary
    run_dir: Path
    jobs: list = field(default_factory=list)

    def records(self) -> list[dict]:
        return [r for path in sorted((self.run_dir / "results").glob("*.json")) for r in json.loads(path.read_text())]


def run_scenario(
    tmp_path: Path,
    provider: str,
    faults: FaultConfig,
    *,
    max_attempts: int = 3,
    batch_size: int = 50,
    during: Callable[[Emulator, BatchedModel], None] | None = None,
) -> Outcome:
    spec = write_spec(tmp_path / "spec.jsonl", list(STATEMENTS))
    inputs = write_inputs(tmp_path / "inputs", STATEMENTS)
    with Emulator(faults=faults) as emu:
        model = make_model(provider, emu)
        config = GenerationConfig(
            spec_path=spec,
            inputs_dir=inputs,
            model_name=model.model_name,
            output_base_dir=tmp_path / "out",
            params=PARAMS,
            engine=EngineOptions(
                batch_size=batch_size, poll_interval=0.05, timeout_hours=0.02, max_attempts=max_attempts
            ),
        )
        pipeline = BatchedGenerationPipeline(config)
        helper = threading.Thread(target=during, args=(emu, model), daemon=True) if during else None
        if helper:
            helper.start()
        summary = pipeline.run(model)
        if helper:
            helper.join(timeout=30)
        jobs = emu.list_jobs(provider)
    return Outcome(summary, pipeline.run_dir, jobs)


def assert_all_succeeded_once(result: Outcome, *, jobs: int = 1) -> None:
    assert result.summary.finished
    assert result.summary.outcome_counts == {"succeeded": TOTAL}
    records = result.records()
    assert len(records) == TOTAL and all(r["outcome"] == "succeeded" and r["output_text"] for r in records)
    assert len(result.jobs) == jobs, [job.id for job in result.jobs]


def route(provider: str, kind: str) -> tuple[str, str]:
    """(method, path regex) of one endpoint kind for a provider."""
    table = {
        ("openai", "create"): ("POST", r"/openai/v1/batches$"),
        ("openai", "poll"): ("GET", r"/openai/v1/batches/[^/]+$"),
        ("openai", "upload"): ("POST", r"/openai/v1/files$"),
        ("openai", "download"): ("GET", r"/files/[^/]+/content$"),
        ("anthropic", "create"): ("POST", r"/v1/messages/batches$"),
        ("anthropic", "poll"): ("GET", r"/v1/messages/batches/[^/]+$"),
        ("anthropic", "download"): ("GET", r"/results$"),
        ("gemini", "create"): ("POST", r":batchGenerateContent$"),
        ("gemini", "poll"): ("GET", r"/batches/[^/:]+$"),
        ("gemini", "upload"): ("POST", r"/upload/"),
        ("gemini", "download"): ("GET", r":download$"),
    }
    return table[(provider, kind)]


ENDPOINT_KINDS = [
    (p, k)
    for p in PROVIDERS
    for k in ("create", "poll", "upload", "download")
    if not (p == "anthropic" and k == "upload")
]


@pytest.mark.parametrize(("provider", "kind"), ENDPOINT_KINDS)
@pytest.mark.parametrize("status", [500, 429])
def test_server_errors_and_rate_limits_on_every_endpoint_kind(tmp_path, provider, kind, status):
    method, path = route(provider, kind)
    fault = HttpFault(provider=provider, method=method, path_regex=path, status=status, count=2, retry_after_ms=20)
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, http_faults=[fault]))
    assert_all_succeeded_once(result)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_create_response_is_waited_for_not_duplicated(tmp_path, provider):
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, create_delay_seconds=1.0))
    assert_all_succeeded_once(result)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_truncated_download_is_fetched_again(tmp_path, provider):
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, truncate_downloads=True))
    assert_all_succeeded_once(result)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_result_file_missing_lines_resubmits_only_those(tmp_path, provider):
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, drop_rate=0.3), max_attempts=8)
    assert result.summary.finished and result.summary.outcome_counts == {"succeeded": TOTAL}
    first_job_requests = max(job.request_count for job in result.jobs)
    assert first_job_requests == TOTAL and len(result.jobs) >= 2
    assert sum(job.request_count for job in result.jobs) < TOTAL * len(result.jobs)  # later jobs: only the missing


@pytest.mark.parametrize("provider", PROVIDERS)
def test_duplicate_result_lines_count_once(tmp_path, provider):
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, duplicate_rate=0.5))
    assert_all_succeeded_once(result)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_job_that_fails_validation_is_reported_per_request(tmp_path, provider):
    result = run_scenario(
        tmp_path, provider, FaultConfig(turnaround_seconds=0.05, fail_validation=True), max_attempts=2
    )
    assert result.summary.finished and result.summary.outcome_counts == {"errored": TOTAL}
    assert len(result.jobs) == 2
    for record in result.records():
        assert record["error"]["code"] == "batch_failed" and record["error"]["message"] and record["attempts"] == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_expiry_keeps_finished_results_and_resubmits_the_rest(tmp_path, provider):
    def stop_expiring(emu: Emulator, model: BatchedModel) -> None:
        deadline = time.monotonic() + 20
        while emu.stats.batches_created.get(provider, 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        emu.faults = FaultConfig(turnaround_seconds=0.05)

    faults = FaultConfig(turnaround_seconds=0.05, expire_jobs=True, complete_fraction_on_expiry=0.5)
    result = run_scenario(tmp_path, provider, faults, during=stop_expiring)
    assert_all_succeeded_once(result, jobs=2)
    second = min(job.request_count for job in result.jobs)
    # Gemini's expired jobs return nothing (documented); the others keep the half that finished.
    assert second == (TOTAL if provider == "gemini" else TOTAL - TOTAL // 2)
    attempts = sorted(r["attempts"] for r in result.records())
    assert attempts == ([2] * TOTAL if provider == "gemini" else [1] * (TOTAL // 2) + [2] * (TOTAL - TOTAL // 2))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancellation_by_someone_else_is_final_and_not_resubmitted(tmp_path, provider):
    def cancel_first_job(emu: Emulator, model: BatchedModel) -> None:
        deadline = time.monotonic() + 20
        while not emu.list_jobs(provider) and time.monotonic() < deadline:
            time.sleep(0.005)
        job_id = emu.list_jobs(provider)[0].id
        if provider == "openai":
            model._client.batches.cancel(job_id)  # type: ignore[attr-defined]
        elif provider == "anthropic":
            model._client.messages.batches.cancel(job_id)  # type: ignore[attr-defined]
        else:
            model._client.batches.cancel(name=job_id)  # type: ignore[attr-defined]

    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=2.0), during=cancel_first_job)
    assert result.summary.finished and len(result.jobs) == 1
    outcomes = {r["outcome"] for r in result.records()}
    assert outcomes <= {"cancelled", "succeeded"} and "cancelled" in outcomes
    assert all(r["output_text"] is None for r in result.records() if r["outcome"] == "cancelled")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_results_archived_after_completion_are_reported_not_silently_dropped(tmp_path, provider):
    result = run_scenario(
        tmp_path, provider, FaultConfig(turnaround_seconds=0.05, archive_results=True), max_attempts=2
    )
    assert result.summary.finished and result.summary.outcome_counts == {"missing": TOTAL}
    assert len(result.jobs) == 2
    for record in result.records():
        assert record["error"]["code"] == "results_unavailable" and "404" in record["error"]["message"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batch_creation_limit_error_is_waited_out(tmp_path, provider):
    result = run_scenario(tmp_path, provider, FaultConfig(turnaround_seconds=0.05, create_limit_error_count=1))
    assert result.summary.finished and result.summary.outcome_counts == {"succeeded": TOTAL}
    # OpenAI reports the enqueued-token cap as a failed job (nothing billed); the others refuse the create.
    assert len(result.jobs) == (2 if provider == "openai" else 1)

"""What the conformance tests share: driving an adapter through a recording proxy, and collecting problems."""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from speceval.batch.model import BatchedModel
from speceval.batch.records import (
    AnthropicHandle,
    BatchRecord,
    GeminiHandle,
    JobState,
    OpenAIHandle,
    SubmissionIntent,
    VertexHandle,
)
from speceval.emulator import ERROR_MARKER, Emulator, FaultConfig
from speceval.errors import ProviderError
from speceval.pipelines.generation import BatchedGenerationPipeline
from tests.conformance.recorder import Exchange, RecordingProxy
from tests.providers.test_anthropic_batch import PARAMS, config_for

__all__ = ["PARAMS"]

FIXTURES = Path(__file__).parent / "fixtures"
PROMPTS = [f"question {i}" for i in range(6)] + [f"an invalid one {ERROR_MARKER}"]

# The emulator behaviours whose shapes are checked: answers and per-request errors (invalid and server-side), an
# expired job with part of its requests done, a job that fails validation, and a cancelled job.
SCENARIOS = {
    "answers-and-errors": FaultConfig(turnaround_seconds=0.05, error_rate=0.3),
    "expired": FaultConfig(turnaround_seconds=0.05, expire_jobs=True, complete_fraction_on_expiry=0.5),
    "failed": FaultConfig(turnaround_seconds=0.05, fail_validation=True),
}


@contextmanager
def proxied_emulator() -> Iterator[tuple[Emulator, RecordingProxy]]:
    """An emulator and a recording proxy in front of it."""
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, RecordingProxy(emu.base_url) as proxy:
        yield emu, proxy


def run_scenarios(tmp_path: Path, emu: Emulator, model: BatchedModel, org: str | None = None) -> None:
    """Run a small generation under each scenario (one attempt each: shapes, not retries, are the point)."""
    for name, faults in SCENARIOS.items():
        emu.faults = faults
        config = replace(config_for(tmp_path / name, model.model_name, {"s": PROMPTS}, max_attempts=1), org=org)
        BatchedGenerationPipeline(config).run(model)


class CancelOnFirstPoll:
    """Mixed into an adapter class: the first poll of a running job cancels it (as `speceval cancel` would)."""

    cancelled = False

    def check_batch_progress(self, record: Any) -> Any:
        job = super().check_batch_progress(record)  # type: ignore[misc]
        if not job.state.is_terminal and not self.cancelled:
            self.cancelled = True
            return self.cancel_batch(record)  # type: ignore[attr-defined]
        return job


def cancelling(cls: type[BatchedModel]) -> type[BatchedModel]:
    """The adapter class `cls` with `CancelOnFirstPoll` mixed in."""
    return type(f"Cancelling{cls.__name__}", (CancelOnFirstPoll, cls), {})


def run_cancelled(tmp_path: Path, emu: Emulator, model: BatchedModel, org: str | None = None) -> None:
    """A job cancelled while it runs, then collected; `model` is an instance of a `cancelling(...)` class."""
    emu.faults = FaultConfig(turnaround_seconds=30.0)
    config = replace(config_for(tmp_path / "cancelled", model.model_name, {"s": PROMPTS}, max_attempts=1), org=org)
    BatchedGenerationPipeline(config).run(model)


_HANDLES = {"openai": OpenAIHandle, "anthropic": AnthropicHandle, "gemini": GeminiHandle, "vertex": VertexHandle}


def look_up_a_lost_job(model: BatchedModel) -> None:
    """Ask the provider for a job created for a submission it never saw (lists its jobs; finds nothing)."""
    intent = SubmissionIntent(
        idempotency_key="0" * 32,
        provider=model.provider,
        model=model.model_name,
        request_file="r.jsonl",
        request_bytes=1,
        requests={"000000000000-0": ("s", 0)},
    )
    assert model.find_submitted(intent) is None


def poll_unknown_job(model: BatchedModel, batch_id: str) -> None:
    """Poll a job the provider does not know: its 404 error body is recorded."""
    record = BatchRecord(
        batch_id=batch_id,
        provider=model.provider,
        model=model.model_name,
        idempotency_key="k",
        state=JobState.IN_PROGRESS,
        raw_state="in_progress",
        handle=_HANDLES[model.provider](),
        request_file="r.jsonl",
        request_count=1,
        requests={},
    )
    with pytest.raises(ProviderError) as refused:
        model.check_batch_progress(record)
    assert refused.value.status_code == 404


def multipart_fields(exchange: Exchange) -> dict[str, bytes]:
    """The fields of a multipart/form-data request body, by name."""
    content_type = exchange.request_headers.get("Content-Type") or exchange.request_headers.get("content-type", "")
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + exchange.request_body)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[str(name)] = part.get_payload(decode=True) or b""
    return fields


def jsonl(content: bytes) -> list[Any]:
    """The JSON values of a JSONL body."""
    return [json.loads(line) for line in content.decode("utf-8").splitlines() if line.strip()]


def is_json(exchange: Exchange) -> bool:
    """Whether the emulator answered with a JSON document."""
    kind = {k.lower(): v for k, v in exchange.response_headers.items()}.get("content-type", "")
    return "json" in kind and "jsonl" not in kind


def refused(proxy: RecordingProxy) -> list[Exchange]:
    """The exchanges the emulator refused (status >= 400); there must be some, and each must be JSON."""
    found = [e for e in proxy.exchanges if e.status >= 400]
    assert found, "no error response was recorded"
    for exchange in found:
        assert is_json(exchange), exchange
    return found

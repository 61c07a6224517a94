"""Anthropic Message Batches adapter: requests sent inline → one batch → a JSONL results stream.

Wire format (Anthropic, "Batch processing"): each request is `{custom_id, params}` where `params` are Messages API
parameters; each result line is `{custom_id, result}` whose `result.type` is `succeeded` (with a `message`),
`errored` (with `error.error.{type, message}`), `canceled` or `expired`, in any order. A batch's
`processing_status` is `in_progress`, `canceling` or `ended`; `ended` covers completed, cancelled and expired
batches alike, and the per-request results carry the truth.

Reconciliation after a crash (`find_submitted`) is weaker than for OpenAI and Gemini: a Message Batch has no
metadata, name or description, so nothing on the batch itself says which submission created it. We match on
what we know before creating — the creation time (a window from 10 minutes before the intent to now) and the
number of requests — and, when the candidate has already ended, confirm it by reading the first custom id of its
results (every custom id starts with the first 12 hex digits of the intent's idempotency key). For a candidate
still in progress that confirmation is impossible until it ends. Residual risk: two runs on the same
workspace that each create a batch of the same size within a few minutes of each other, one of which crashes
between create and record, may adopt the other's in-progress batch. The engine then sees no custom id of its own
in the results, records those requests as missing and resubmits them: the cost is a delay and a second
batch, never a result attached to the wrong input.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from speceval.batch.answers import Answer, failed, succeeded
from speceval.batch.chunking import CUSTOM_ID_KEY_CHARS
from speceval.batch.model import ProviderLimits
from speceval.batch.records import (
    AnthropicHandle,
    BatchRecord,
    JobState,
    Outcome,
    RemoteJob,
    RequestOutcome,
    SubmissionIntent,
)
from speceval.errors import ProviderError, TransientProviderError
from speceval.providers.http_errors import http_error, transport_errors
from speceval.providers.keyed import KeyedBatchedModel
from speceval.redaction import redact
from speceval.wire.anthropic import message_params, parse_message, sampling_fields
from speceval.wire.lines import encode_line
from speceval.wire.prompt import PromptLike
from speceval.wire.tls import sdk_client

logger = logging.getLogger(__name__)

# How long before its intent a batch may have been created and still be ours (server vs local clock skew).
_RECONCILE_SLACK = timedelta(minutes=10)
# Error types Anthropic documents as "try again": server-side trouble, not the request's fault.
# `timeout_error` (HTTP 504) is the server giving up on a slow request: nothing is wrong with the request itself.
RETRYABLE_ERROR_TYPES = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
# Results can be downloaded for 29 days after a batch is created; then `archived_at` is set and they are gone.
RESULTS_RETENTION = timedelta(days=29)
# 256 MB is the documented ceiling of one create request; keep room for the `{"requests":[…]}` wrapper and for
# "MB" meaning 10^6 bytes. Request lines are encoded exactly as the SDK encodes the body (compact, UTF-8).
_MAX_BYTES = 256_000_000 - 1_000_000


class AnthropicBatchedModel(KeyedBatchedModel):
    """A Claude model reached through the Anthropic Message Batches API (or a server at `ANTHROPIC_BASE_URL`)."""

    provider: ClassVar[str] = "anthropic"
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=100_000, max_bytes=_MAX_BYTES)
    key_label: ClassVar[str] = "Anthropic"
    key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)

    def _connect(self, key: str, base_url: str | None, timeout: float) -> None:
        import anthropic  # lazy: `import speceval` must work without every vendor SDK

        self._anthropic = anthropic
        # The key is always passed explicitly: without one the SDK would fall back to profile files and
        # workload-identity variables. base_url None lets the SDK honour ANTHROPIC_BASE_URL itself.
        self._client = sdk_client(
            anthropic.Anthropic,
            anthropic.DefaultHttpxClient,
            api_key=key,
            base_url=base_url,
            timeout=timeout,
            max_retries=2,
        )
        self.endpoint = str(self._client.base_url)  # as the SDK resolved it (the argument, else ANTHROPIC_BASE_URL)
        self._sampling = sampling_fields(self.params, self.model_name)
        # Batches this instance created: never adopted again for another intent (same-size chunks of one run
        # would otherwise look alike to `find_submitted`).
        self._created: set[str] = set()

    # -- request file -------------------------------------------------------------------------------------

    def format_request(self, custom_id: str, prompt: PromptLike) -> bytes:
        params = message_params(self.model_name, self.params, prompt, self._sampling)
        return encode_line({"custom_id": custom_id, "params": params})

    # -- submission ---------------------------------------------------------------------------------------

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        with request_file.open("rb") as lines:
            requests = [json.loads(line) for line in lines if line.strip()]
        # No SDK retries here: a retried create after a lost response would create (and bill) a second batch.
        client = self._client.with_options(max_retries=0)
        batch = self._call("create batch", lambda: client.messages.batches.create(requests=requests))
        self._created.add(batch.id)
        return self._job(batch)

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        oldest = intent.created_at - _RECONCILE_SLACK

        def recent_of_same_size() -> list[Any]:
            found = []
            # Iterated inside `_call`: the pager fetches later pages while being iterated.
            for batch in self._client.messages.batches.list(limit=100):
                created = _aware(batch.created_at)
                if created is not None and created < oldest:
                    break  # newest first: nothing older can be ours
                if batch.id not in self._created and _total(batch.request_counts) == intent.request_count:
                    found.append(batch)
            return found

        candidates = [
            batch
            for batch in self._call("list batches", recent_of_same_size)
            if batch.processing_status != "ended" or self._confirmed(batch.id, intent.idempotency_key)
        ]
        if not candidates:
            return None

        def distance(batch: Any) -> tuple[bool, float]:
            # Ours was created after its intent was written; prefer those, then the closest in time.
            created = _aware(batch.created_at) or intent.created_at
            return created < intent.created_at, abs((created - intent.created_at).total_seconds())

        best = min(candidates, key=distance)
        logger.warning(
            "adopting message batch %s for submission %s (matched on creation time and %d requests; Anthropic "
            "batches carry no tag, so this is confirmed by custom ids when its results arrive)",
            best.id,
            intent.idempotency_key[:CUSTOM_ID_KEY_CHARS],
            intent.request_count,
        )
        self._created.add(best.id)
        return self._job(best)

    def _confirmed(self, batch_id: str, key: str) -> bool:
        """Whether an ended batch's first result carries this submission's custom-id prefix."""
        prefix = key[:CUSTOM_ID_KEY_CHARS] + "-"
        try:
            for line in self._lines(batch_id):
                custom_id = json.loads(line).get("custom_id", "")
                return isinstance(custom_id, str) and custom_id.startswith(prefix)
        except TransientProviderError:
            raise  # ask again later rather than risk creating a duplicate
        except (ProviderError, json.JSONDecodeError, AttributeError):
            return False  # results gone (archived) or unreadable: cannot confirm, so do not adopt
        return False

    # -- tracking -----------------------------------------------------------------------------------------

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        return self._job(self._call("retrieve batch", lambda: self._client.messages.batches.retrieve(record.batch_id)))

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        return self._job(self._call("cancel batch", lambda: self._client.messages.batches.cancel(record.batch_id)))

    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        submitted = _aware(record.submitted_at) or datetime.now(UTC)
        if datetime.now(UTC) - submitted > RESULTS_RETENTION:
            logger.warning(
                "message batch %s was created on %s, more than 29 days ago: Anthropic may have archived its results; "
                "if so, its %d request(s) will be resubmitted",
                record.batch_id,
                record.submitted_at.date(),
                record.request_count,
            )
        try:
            for line in self._lines(record.batch_id):
                yield parse_answer(line, record.batch_id)
        except ProviderError as exc:
            archived = self._archived_at(record.batch_id)
            if archived is None:
                raise
            message = (
                f"message batch {record.batch_id}: its results were archived at {archived.isoformat()} (Anthropic "
                f"keeps batch results 29 days after creation); its {record.request_count} request(s) will be "
                "resubmitted, and paid for again"
            )
            logger.warning("%s", message)
            operation = f"download results of {record.batch_id}"
            raise ProviderError(self.provider, operation, message, status_code=exc.status_code) from exc

    def _archived_at(self, batch_id: str) -> datetime | None:
        """When the batch's results were archived, or None while they are kept."""
        batch = self._call("retrieve batch", lambda: self._client.messages.batches.retrieve(batch_id))
        return _aware(getattr(batch, "archived_at", None))

    # -- helpers ------------------------------------------------------------------------------------------

    def _lines(self, batch_id: str) -> Iterator[str]:
        """Stream the results JSONL line by line (raw, so that blank lines and unknown types cannot trip the
        SDK's decoder, and a 256 MB stream is never held in memory whole)."""
        operation = f"download results of {batch_id}"
        # A connection lost while iterating the body surfaces as the HTTP library's own error, not the SDK's.
        lost: tuple[type[BaseException], ...] = (self._anthropic.APIConnectionError, *transport_errors())
        try:
            with self._client.messages.batches.with_streaming_response.results(batch_id) as response:
                for line in response.iter_lines():
                    if line.strip():
                        yield line
        except self._anthropic.APIStatusError as exc:
            raise http_error(self.provider, operation, exc.status_code, _message(exc), exc.response.headers) from None
        except lost as exc:
            raise http_error(self.provider, operation, None, f"{type(exc).__name__}: {exc}") from None
        except self._anthropic.AnthropicError as exc:
            # `results` found no results_url: the batch has not ended after all; try again later.
            raise TransientProviderError(self.provider, operation, redact(str(exc))) from None

    def _call(self, operation: str, fn: Any) -> Any:
        try:
            return fn()
        except self._anthropic.APIStatusError as exc:
            raise http_error(self.provider, operation, exc.status_code, _message(exc), exc.response.headers) from None
        except self._anthropic.APIConnectionError as exc:
            # Includes timeouts: the request may or may not have reached the provider.
            raise http_error(self.provider, operation, None, f"{type(exc).__name__}: {exc}") from None

    def _job(self, batch: Any) -> RemoteJob:
        raw = str(batch.processing_status)
        return RemoteJob(
            batch_id=batch.id,
            state=job_state(raw, batch.request_counts, cancel_initiated=batch.cancel_initiated_at is not None),
            raw_state=raw,
            handle=AnthropicHandle(results_url=batch.results_url),
            created_at=_aware(batch.created_at),
            request_count=_total(batch.request_counts),
        )


def job_state(processing_status: str, counts: Any, *, cancel_initiated: bool) -> JobState:
    """Normalise a batch's `processing_status` (plus what `ended` hides: a cancel, or expiry).

    An ended batch whose cancel was initiated is CANCELLED, one with expired requests is EXPIRED, any other
    ended batch COMPLETED. The distinction only decides how requests with no result line are recorded; the
    requests that do have one are recorded by their own result type.
    """
    if processing_status == "in_progress":
        return JobState.IN_PROGRESS
    if processing_status == "canceling":
        return JobState.CANCELLING
    if processing_status == "ended":
        if cancel_initiated:
            return JobState.CANCELLED
        if counts is not None and (getattr(counts, "expired", 0) or 0) > 0:
            return JobState.EXPIRED
        return JobState.COMPLETED
    return JobState.IN_PROGRESS  # a status this version does not know: keep polling, raw state is kept


def parse_result_line(line: str, batch_id: str) -> RequestOutcome:
    """Turn one line of a batch's results stream into a typed outcome (see `parse_answer`)."""
    return parse_answer(line, batch_id).typed()


def parse_answer(line: str | bytes, batch_id: str) -> Answer:
    """Turn one line of a batch's results stream into an answer.

    Branches on the `type` string (the SDK coerces unknown types into the first union member, so isinstance
    would misread them). Raises TransientProviderError for a line that is not JSON: a stream cut short must be
    fetched again, not read as 'fewer results'.
    """
    try:
        data = json.loads(line)
        custom_id = data["custom_id"]
        result = data["result"]
        kind = result["type"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise TransientProviderError(
            "anthropic", f"read results of {batch_id}", f"result line is not valid (truncated download?): {line[:80]!r}"
        ) from None
    if kind == "succeeded":
        return _succeeded(custom_id, result.get("message") or {})
    if kind == "errored":
        envelope = result.get("error") or {}
        inner = envelope.get("error")
        details: dict[str, Any] = inner if isinstance(inner, dict) else envelope
        code = details.get("type")
        message = str(details.get("message") or "the request errored with no message")
        return failed(custom_id, Outcome.ERRORED, code, message, retryable=code in RETRYABLE_ERROR_TYPES)
    if kind == "expired":
        message = "the batch expired before this request ran"
        return failed(custom_id, Outcome.EXPIRED, "expired", message, retryable=True)
    if kind == "canceled":
        return failed(custom_id, Outcome.CANCELLED, "canceled", "the batch was cancelled before this request ran")
    message = f"the provider returned a result of unknown type {str(kind)!r}; this speceval version cannot read it"
    return failed(custom_id, Outcome.ERRORED, "unknown_result_type", message)


def _succeeded(custom_id: str, message: dict[str, Any]) -> Answer:
    reply = parse_message(message)
    if reply.text is None:
        return failed(custom_id, Outcome.ERRORED, reply.code, reply.message or "", usage=reply.usage)
    return succeeded(custom_id, reply.text, reply.usage)


def _message(exc: Any) -> str:
    """The provider's own message of an API error (`{"type":"error","error":{"type","message"}}`)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f"{error.get('type') or 'error'}: {error['message']}"
    return str(exc.message)


def _total(counts: Any) -> int | None:
    if counts is None:
        return None
    names = ("processing", "succeeded", "errored", "canceled", "expired")
    return sum(int(getattr(counts, name, 0) or 0) for name in names)


def _aware(value: Any) -> datetime | None:
    """The SDK parses RFC 3339 into datetimes when it can; make sure they are timezone-aware (UTC)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

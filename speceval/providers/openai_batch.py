"""OpenAI Batch API adapter: JSONL request file → upload → batch → output and error files.

Wire format (OpenAI, "Batch API"): request lines `{custom_id, method, url, body}`; result lines
`{custom_id, response: {status_code, body}, error}` in two files (successes in the output file, failures in the
error file), in any order. The error file's HTTP failures carry the real message in `response.body.error`;
requests that never ran (expiry, cancellation) have `response: null` and a top-level `error`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from pydantic_core import from_json

from speceval.batch.answers import Answer, failed, succeeded
from speceval.batch.model import ProviderLimits
from speceval.batch.records import (
    BatchRecord,
    JobState,
    OpenAIHandle,
    Outcome,
    RemoteJob,
    RequestOutcome,
    SubmissionIntent,
)
from speceval.errors import TransientProviderError
from speceval.providers.http_errors import http_error, is_transient_status, transport_errors
from speceval.providers.keyed import KeyedBatchedModel, find_tagged
from speceval.redaction import redact
from speceval.wire.lines import encode_line
from speceval.wire.openai import ENDPOINT, chat_body, chat_tokens, parse_completion
from speceval.wire.prompt import PromptLike
from speceval.wire.tls import sdk_client

TAG_KEY = "speceval_key"
# "The Batch API only supports `.jsonl` files up to 200 MB in size" (OpenAPI spec, POST /files). Whether that MB
# is 10^6 or 2^20 bytes is not said; the smaller reading is accepted under both.
MAX_FILE_BYTES = 200_000_000

_STATES = {
    "validating": JobState.VALIDATING,
    "in_progress": JobState.IN_PROGRESS,
    "finalizing": JobState.FINALIZING,
    "completed": JobState.COMPLETED,
    "failed": JobState.FAILED,
    "expired": JobState.EXPIRED,
    "cancelling": JobState.CANCELLING,
    "cancelled": JobState.CANCELLED,
}
# A line with no HTTP response is a request the batch never ran; the spec lists no codes for those, so the batch's
# own terminal state says why (these two codes are the ones observed).
_NOT_RUN = {"batch_expired": Outcome.EXPIRED, "batch_cancelled": Outcome.CANCELLED}
_NOT_RUN_BY_STATE = {JobState.EXPIRED: Outcome.EXPIRED, JobState.CANCELLED: Outcome.CANCELLED}


class OpenAIBatchedModel(KeyedBatchedModel):
    """A chat model reached through the OpenAI Batch API (or any server speaking it at `OPENAI_BASE_URL`)."""

    provider: ClassVar[str] = "openai"
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=50_000, max_bytes=MAX_FILE_BYTES)
    key_label: ClassVar[str] = "OpenAI"
    key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    def _connect(self, key: str, base_url: str | None, timeout: float) -> None:
        import openai  # lazy: `import speceval` must work without every vendor SDK

        self._openai = openai
        # A connection lost while iterating a streamed download surfaces as the HTTP library's own error.
        self._stream_errors: tuple[type[BaseException], ...] = (openai.APIConnectionError, *transport_errors())
        # base_url None lets the SDK honour OPENAI_BASE_URL exactly as it documents.
        self._client = sdk_client(
            openai.OpenAI, openai.DefaultHttpxClient, api_key=key, base_url=base_url, timeout=timeout, max_retries=2
        )
        self.endpoint = str(self._client.base_url)  # as the SDK resolved it (the argument, else OPENAI_BASE_URL)

    # -- request file -------------------------------------------------------------------------------------

    def format_request(self, custom_id: str, prompt: PromptLike) -> bytes:
        body = chat_body(self.model_name, self.params, prompt)
        return encode_line({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body})

    # -- submission ---------------------------------------------------------------------------------------

    def prepare(self, intent: SubmissionIntent, request_file: Path) -> OpenAIHandle:
        with request_file.open("rb") as handle:
            uploaded = self._call(
                "upload request file",
                lambda: self._client.files.create(
                    file=(f"speceval-{intent.idempotency_key}.jsonl", handle), purpose="batch"
                ),
            )
        return OpenAIHandle(input_file_id=uploaded.id)

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        handle = intent.handle if isinstance(intent.handle, OpenAIHandle) else self.prepare(intent, request_file)
        # No SDK retries here: a retried create after a lost response would create (and bill) a second batch.
        client = self._client.with_options(max_retries=0)
        batch = self._call(
            "create batch",
            lambda: client.batches.create(
                input_file_id=handle.input_file_id or "",
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={TAG_KEY: intent.idempotency_key, "speceval_requests": str(intent.request_count)},
            ),
        )
        return self._job(batch)

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        return find_tagged(
            self._call,
            lambda: self._client.batches.list(limit=100),
            lambda batch: (batch.metadata or {}).get(TAG_KEY),
            intent.idempotency_key,
            self._job,
        )

    # -- tracking -----------------------------------------------------------------------------------------

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        return self._job(self._call("retrieve batch", lambda: self._client.batches.retrieve(record.batch_id)))

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        return self._job(self._call("cancel batch", lambda: self._client.batches.cancel(record.batch_id)))

    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        handle = record.handle
        if not isinstance(handle, OpenAIHandle):
            raise TypeError(f"batch {record.batch_id} has no OpenAI handle")
        for file_id in (handle.output_file_id, handle.error_file_id):
            if file_id:
                for line in self._lines(file_id):
                    yield parse_answer(line, file_id, record.state)

    # -- helpers ------------------------------------------------------------------------------------------

    def _lines(self, file_id: str) -> Iterator[str]:
        """Stream a result file line by line, so a 200 MB output file is never held in memory whole."""
        try:
            with self._client.files.with_streaming_response.content(file_id) as response:
                for line in response.iter_lines():
                    if line.strip():
                        yield line
        except self._openai.APIStatusError as exc:
            raise http_error(
                self.provider, f"download {file_id}", exc.status_code, exc.message, exc.response.headers
            ) from None
        except self._stream_errors as exc:
            raise http_error(self.provider, f"download {file_id}", None, f"{type(exc).__name__}: {exc}") from None

    def _call(self, operation: str, fn: Any) -> Any:
        try:
            return fn()
        except self._openai.APIStatusError as exc:
            raise http_error(self.provider, operation, exc.status_code, exc.message, exc.response.headers) from None
        except self._openai.APIConnectionError as exc:
            # Includes timeouts: the request may or may not have reached the provider.
            raise http_error(self.provider, operation, None, f"{type(exc).__name__}: {exc}") from None

    def _job(self, batch: Any) -> RemoteJob:
        raw = str(batch.status)
        error = None
        if batch.errors and batch.errors.data:
            first = batch.errors.data[0]
            line = f" (request file line {first.line})" if getattr(first, "line", None) else ""
            error = redact(f"{first.code}: {first.message}{line}")
        return RemoteJob(
            batch_id=batch.id,
            state=_STATES.get(raw, JobState.IN_PROGRESS),
            raw_state=raw,
            handle=OpenAIHandle(
                input_file_id=batch.input_file_id,
                output_file_id=batch.output_file_id,
                error_file_id=batch.error_file_id,
            ),
            created_at=datetime.fromtimestamp(batch.created_at, UTC) if batch.created_at else None,
            request_count=batch.request_counts.total if batch.request_counts else None,
            error=error,
        )


def parse_result_line(line: str, file_id: str, job_state: JobState = JobState.COMPLETED) -> RequestOutcome:
    """Turn one line of an output or error file into a typed outcome (see `parse_answer`)."""
    return parse_answer(line, file_id, job_state).typed()


def parse_answer(line: str | bytes, file_id: str, job_state: JobState = JobState.COMPLETED) -> Answer:
    """Turn one line of an output or error file into an answer.

    A line without an HTTP response is a request the batch never ran: cancelled or expired when the batch was
    (`job_state`, its terminal state), whatever code the line carries; errored otherwise.

    Raises TransientProviderError for a line that is not JSON: a download cut short must be fetched again,
    not read as 'fewer results'.
    """
    try:
        data = from_json(line)  # pydantic's parser (Rust): a fifth faster than json.loads per result line
        custom_id = data["custom_id"]
    except (ValueError, KeyError, TypeError):  # ValueError: not JSON
        raise TransientProviderError(
            "openai", f"read {file_id}", f"result line is not valid JSON (truncated download?): {line[:80]!r}"
        ) from None
    response = data.get("response")
    if response is None:
        # Never executed: expiry, cancellation, or a request the batch rejected.
        error = data.get("error") or {}
        code = str(error["code"]) if error.get("code") else None
        outcome = _NOT_RUN_BY_STATE.get(job_state) or _NOT_RUN.get(code or "", Outcome.ERRORED)
        message = str(error.get("message") or "the request was not executed")
        return failed(custom_id, outcome, code, message, retryable=outcome is not Outcome.ERRORED)
    status = int(response.get("status_code") or 0)
    body = response.get("body") or {}
    if status == 200:
        # Most lines of a job: a string answer in the first choice. Built here in one step (a line's parse was
        # twice its json.loads: five calls and two tuples more); anything else goes through `parse_completion`,
        # which says why there is no text.
        try:
            text = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        if type(text) is str and type(custom_id) is str:
            return Answer(custom_id, Outcome.SUCCEEDED, text, None, chat_tokens(body.get("usage")))
        return _succeeded(custom_id, body)
    error = (body.get("error") if isinstance(body, dict) else None) or data.get("error") or {}
    message = str(error.get("message") or f"HTTP {status} with no message")
    code = error.get("code") or error.get("type")
    return failed(custom_id, Outcome.ERRORED, code, message, status_code=status, retryable=is_transient_status(status))


def _succeeded(custom_id: str, body: dict[str, Any]) -> Answer:
    reply = parse_completion(body)
    if not isinstance(custom_id, str):
        return failed(
            str(custom_id), Outcome.ERRORED, "malformed_response", "custom_id is not a string", usage=reply.usage
        )
    if reply.text is None:
        return failed(custom_id, Outcome.ERRORED, reply.code, reply.message or "", usage=reply.usage)
    return succeeded(custom_id, reply.text, reply.usage)

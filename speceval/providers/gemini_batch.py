"""Gemini Batch API adapter (Gemini Developer API, API key): JSONL upload → batch job → responses file.

Wire format (Gemini API, "Batch Mode"): request lines `{key, request: GenerateContentRequest}` uploaded
through the Files API; the job is a long-running operation tagged with our idempotency key as its
`display_name`; a succeeded job names a generated responses file whose lines are `{key, response}` or
`{key, error}`. Failed, cancelled and expired jobs have no results: every request of such a job is recorded by
the job's state (and resubmitted where that makes sense) by the engine.

Batch creation is not idempotent and google-genai does not retry unless told to; this adapter never enables
SDK retries, so a create is sent once and a lost response is reconciled through `display_name`.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from speceval.batch.answers import Answer, failed, succeeded
from speceval.batch.model import ProviderLimits
from speceval.batch.records import (
    BatchRecord,
    GeminiHandle,
    JobState,
    Outcome,
    RemoteJob,
    RequestOutcome,
    SubmissionIntent,
)
from speceval.errors import ProviderError
from speceval.providers.google_calls import call_google, error_headers, json_line, raw_get, status_text
from speceval.providers.http_errors import is_transient_status
from speceval.providers.keyed import KeyedBatchedModel, find_tagged
from speceval.redaction import redact
from speceval.wire.gemini import API_VERSION, generate_content_request, parse_response
from speceval.wire.lines import encode_line
from speceval.wire.prompt import PromptLike
from speceval.wire.tls import genai_tls_options

logger = logging.getLogger(__name__)

# Shared with the Vertex adapter and kept importable from here.
__all__ = ["GeminiBatchedModel", "call_google", "error_headers", "json_line", "raw_get", "status_text"]

# The Gemini batch docs upload request files as "jsonl". The service has at times refused it (and at times
# "application/jsonl") with 400 "Unsupported MIME type" (python-genai #1547, gemini cookbook #1008). A refused
# upload creates nothing, so the other spelling is tried once before giving up.
MIME_TYPES = ("jsonl", "application/jsonl")

# The SDK reports `JOB_STATE_*` (it translates the wire's `BATCH_STATE_*`); both are accepted.
_STATES = {
    "PENDING": JobState.IN_PROGRESS,
    "QUEUED": JobState.IN_PROGRESS,
    "RUNNING": JobState.IN_PROGRESS,
    "UPDATING": JobState.IN_PROGRESS,
    "PAUSED": JobState.IN_PROGRESS,
    "SUCCEEDED": JobState.COMPLETED,
    "PARTIALLY_SUCCEEDED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "CANCELLING": JobState.CANCELLING,
    "CANCELLED": JobState.CANCELLED,
    "EXPIRED": JobState.EXPIRED,
}


class GeminiBatchedModel(KeyedBatchedModel):
    """A Gemini model reached through the Gemini Batch API (or a server at `GOOGLE_GEMINI_BASE_URL`).

    Limits: a file-mode job may be 2 GB, but one job is capped at 50,000 requests so that a job (and its
    responses file, downloaded and read in one go) stays of a size that completes within the 24-hour target
    and can be retried without redoing a huge amount of work.
    """

    provider: ClassVar[str] = "gemini"
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=50_000, max_bytes=2_000_000_000)
    key_label: ClassVar[str] = "Google Gemini"
    # GOOGLE_API_KEY wins over GEMINI_API_KEY, as in the SDK.
    key_env: ClassVar[tuple[str, ...]] = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

    def _connect(self, key: str, base_url: str | None, timeout: float) -> None:
        from google import genai  # lazy: `import speceval` must work without every vendor SDK
        from google.genai import types

        # One client, kept for the adapter's lifetime (a temporary client can be finalised mid-call). No
        # retry_options: the SDK then sends every call once, which is what a non-idempotent create needs.
        # A timeout is essential: the SDK has none by default. base_url None lets the SDK read
        # GOOGLE_GEMINI_BASE_URL; vertexai=False keeps GOOGLE_GENAI_USE_VERTEXAI from switching APIs; API_VERSION
        # (v1beta) because batch mode and the Files API exist there only.
        self._client = genai.Client(
            vertexai=False,
            api_key=key,
            http_options=types.HttpOptions(
                timeout=int(timeout * 1000), base_url=base_url, api_version=API_VERSION, **genai_tls_options()
            ),
        )
        # what the SDK reads when no base_url is given (its resolved URL is private)
        self.endpoint = base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL")

    # -- request file -------------------------------------------------------------------------------------

    def format_request(self, custom_id: str, prompt: PromptLike) -> bytes:
        return encode_line({"key": custom_id, "request": generate_content_request(self.params, prompt)})

    # -- submission ---------------------------------------------------------------------------------------

    def prepare(self, intent: SubmissionIntent, request_file: Path) -> GeminiHandle:
        first, other = MIME_TYPES
        try:
            name = self._upload(request_file, first, intent.idempotency_key)
        except ProviderError as exc:
            if exc.status_code != 400 or "mime type" not in exc.provider_message.lower():
                raise
            logger.warning("Gemini refused the upload as %r (%s); trying %r", first, exc, other)
            name = self._upload(request_file, other, intent.idempotency_key)
        return GeminiHandle(input_file_name=name)

    def _upload(self, request_file: Path, mime_type: str, display_name: str) -> str:
        uploaded = self._call(
            "upload request file",
            lambda: self._client.files.upload(
                file=str(request_file), config={"mime_type": mime_type, "display_name": display_name}
            ),
        )
        return str(uploaded.name)

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        handle = intent.handle if isinstance(intent.handle, GeminiHandle) else None
        if handle is None or not handle.input_file_name:
            handle = self.prepare(intent, request_file)
        try:
            job = self._create(intent, handle)
        except ProviderError as exc:
            if exc.status_code != 404:
                raise
            # Uploaded files live 48 hours: a resume after that finds the input gone. Nothing was created (the
            # call was refused), so uploading again and creating once more cannot pay twice.
            logger.info("input file %s is gone (%s); uploading the request file again", handle.input_file_name, exc)
            handle = self.prepare(intent, request_file)
            job = self._create(intent, handle)
        return self._job(job, handle.input_file_name)

    def _create(self, intent: SubmissionIntent, handle: GeminiHandle) -> Any:
        return self._call(
            "create batch",
            lambda: self._client.batches.create(
                model=self.model_name,
                src=handle.input_file_name or "",
                config={"display_name": intent.idempotency_key},
            ),
        )

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        handle = intent.handle if isinstance(intent.handle, GeminiHandle) else None
        return find_tagged(
            self._call,
            lambda: self._client.batches.list(config={"page_size": 100}),
            lambda job: job.display_name,
            intent.idempotency_key,
            lambda job: self._job(job, handle.input_file_name if handle else None),
        )

    # -- tracking -----------------------------------------------------------------------------------------

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        job = self._job(
            self._call("get batch", lambda: self._client.batches.get(name=record.batch_id)), _input_file(record)
        )
        if job.state is JobState.FAILED and job.error is None:
            # The SDK's Gemini path never copies the operation's `error` onto the job: read it off the wire.
            operation = raw_get(self._client, self.provider, "get batch", record.batch_id)
            metadata = operation.get("metadata")
            job.error = status_text(operation.get("error") or (metadata or {}).get("error"))
        return job

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        self._call("cancel batch", lambda: self._client.batches.cancel(name=record.batch_id))
        return self.check_batch_progress(record)

    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        handle = record.handle
        if not isinstance(handle, GeminiHandle):
            raise TypeError(f"batch {record.batch_id} has no Gemini handle")
        name = handle.responses_file_name
        if not name:
            if record.state is JobState.COMPLETED:
                raise ProviderError(
                    self.provider, f"read results of {record.batch_id}", "the job succeeded but named no responses file"
                )
            return  # failed, cancelled or expired jobs have no results: the engine records them by state
        with tempfile.TemporaryDirectory(prefix="speceval-gemini-") as tmp:
            # Streamed to disk by the SDK, then read line by line: a responses file can be gigabytes.
            path = Path(tmp) / "responses.jsonl"
            self._call(f"download {name}", lambda: self._client.files.download(file=name, destination=str(path)))
            with path.open("r", encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if not line.strip():
                        continue
                    outcome = parse_answer(line, name)
                    if outcome is None:
                        logger.warning("responses file %s has a line without a key: %r", name, line[:80])
                        continue
                    yield outcome

    # -- helpers ------------------------------------------------------------------------------------------

    def _call(self, operation: str, fn: Any) -> Any:
        return call_google(self.provider, operation, fn)

    def _job(self, job: Any, input_file_name: str | None) -> RemoteJob:
        state = getattr(job.state, "value", job.state)
        raw = str(state) if state is not None else "JOB_STATE_UNSPECIFIED"
        error = None
        if getattr(job, "error", None) is not None and (job.error.message or job.error.code):
            error = redact(f"{job.error.code}: {job.error.message}")
        dest = getattr(job, "dest", None)
        return RemoteJob(
            batch_id=job.name,
            state=job_state(raw),
            raw_state=raw,
            handle=GeminiHandle(
                input_file_name=input_file_name,
                responses_file_name=getattr(dest, "file_name", None) if dest is not None else None,
            ),
            created_at=_aware(job.create_time),
            error=error,
        )


def job_state(raw: str) -> JobState:
    """Normalise a Gemini job state (`JOB_STATE_*` or `BATCH_STATE_*`); unknown states keep the job polled."""
    name = raw.removeprefix("JOB_STATE_").removeprefix("BATCH_STATE_")
    return _STATES.get(name, JobState.IN_PROGRESS)


def parse_result_line(line: str, file_name: str) -> RequestOutcome | None:
    """Turn one line of a responses file into a typed outcome (see `parse_answer`)."""
    answer = parse_answer(line, file_name)
    return answer.typed() if answer is not None else None


def parse_answer(line: str, file_name: str) -> Answer | None:
    """Turn one line of a responses file into an answer (None for a line that names no request).

    The key is read at the top level (file mode) or from `metadata.key` (inline mode); camelCase and snake_case
    field names are both accepted. Raises TransientProviderError for a line that is not JSON: a download cut
    short must be fetched again, not read as 'fewer results'.
    """
    data = json_line("gemini", file_name, line)
    metadata = data.get("metadata")
    key = data.get("key") or (metadata.get("key") if isinstance(metadata, dict) else None)
    if not isinstance(key, str) or not key:
        return None
    error = data.get("error")
    if isinstance(error, dict):
        return error_answer(key, error)
    return response_answer(key, data.get("response"), "the result line has neither a response nor an error")


def error_answer(key: str, error: Mapping[str, Any]) -> Answer:
    """An errored answer from a Google `Status` object (`{code, message, status}`)."""
    code = error.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    return failed(
        key,
        Outcome.ERRORED,
        str(error.get("status") or "") or (str(code) if code is not None else None),
        str(error.get("message") or "the request failed with no message"),
        status_code=status,
        retryable=status is not None and is_transient_status(status),
    )


def response_answer(key: str, response: object, missing: str) -> Answer:
    """The answer of a GenerateContentResponse: its text, or an error when it was blocked or empty; a
    `malformed_response` error saying `missing` when the line or row holds no response object."""
    if not isinstance(response, dict):
        return error_answer(key, {"status": "malformed_response", "message": missing})
    reply = parse_response(response)
    if reply.text is None:
        return failed(key, Outcome.ERRORED, reply.code, reply.message or "", usage=reply.usage)
    return succeeded(key, reply.text, reply.usage)


def _input_file(record: BatchRecord) -> str | None:
    return record.handle.input_file_name if isinstance(record.handle, GeminiHandle) else None


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

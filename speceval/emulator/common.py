"""Helpers every provider app uses: lazy finalisation of jobs, generated files, downloads, time formats."""

from __future__ import annotations

import base64
import hashlib
import json
from abc import abstractmethod
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from speceval.emulator.context import EmulatorContext
from speceval.emulator.faults import JobPlan
from speceval.emulator.jobs import (
    TERMINAL,
    Job,
    JobFailure,
    Outcome,
    Phase,
    RequestItem,
    emitted,
    final_outcomes,
    phase,
    summarize,
)
from speceval.emulator.routing import ApiError, ProviderApp, Request, Response, json_response
from speceval.emulator.state import StoredFile

# Google's status names of HTTP codes, as `error.status` of its JSON errors carries them (Gemini and Vertex).
GOOGLE_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# google.rpc.Code numbers, as a failed batch's `error.code` carries them (Gemini operations, Vertex jobs).
RPC_INVALID_ARGUMENT = 3


def google_status(code: int, message: str) -> dict[str, Any]:
    """A `google.rpc.Status`-like error object with the HTTP code (a batch result line's `error`)."""
    return {"code": code, "message": message, "status": GOOGLE_STATUS_NAMES.get(code, "UNKNOWN")}


#: Writes a terminal job's outputs (files) and records their ids in `job.outputs`.
Finalizer = Callable[[Job, Phase, list[Outcome]], None]


def refresh(ctx: EmulatorContext, job: Job, now: float, finalize: Finalizer) -> Phase:
    """The job's phase at `now`; the first time it is terminal, its outputs are generated and persisted.

    Done lazily on read (not by a timer) so that a job persisted by one emulator is finished by the next one.
    """
    current = phase(job, now)
    if current in TERMINAL and not job.finalized:
        with ctx.store.lock:
            if not job.finalized:
                outcomes = final_outcomes(job, current, ctx.responder, ctx.prompt_cache)
                finalize(job, current, outcomes)
                job.summary = summarize(outcomes)
                job.finalized = True
                ctx.store.put_job(job)
    return current


def jsonl(values: Iterable[Any]) -> bytes:
    """JSON Lines: one compact object per line, newline-terminated, no blank lines."""
    return b"".join(json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for v in values)


def results_jsonl(job: Job, outcomes: list[Outcome], line: Callable[[Outcome], dict[str, Any]]) -> bytes:
    """A results file of one `line` per emitted outcome (drops removed); a duplicated request's line is written
    again as first built, as the providers repeat a result rather than answer twice."""
    written: dict[int, dict[str, Any]] = {}
    return jsonl(written.setdefault(o.index, line(o)) for o in emitted(job, outcomes))


def new_generated_file(
    ctx: EmulatorContext,
    provider: str,
    file_id: str,
    content: bytes,
    *,
    filename: str,
    purpose: str = "",
    mime_type: str = "application/jsonl",
    retention_seconds: float | None = None,
) -> StoredFile:
    """Store a file written by the emulator itself (result and error files)."""
    now = ctx.now()
    meta = StoredFile(
        provider=provider,
        id=file_id,
        seq=ctx.store.next_seq(),
        filename=filename,
        purpose=purpose,
        mime_type=mime_type,
        created_at=now,
        expires_at=None if retention_seconds is None else now + retention_seconds,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        generated=True,
    )
    return ctx.store.put_file(meta, content)


def download_bytes(ctx: EmulatorContext, meta: StoredFile, not_found: ApiError) -> bytes:
    """The content served for a download, with the `archive_results` and `truncate_downloads` faults applied."""
    content = ctx.store.file_content(meta.provider, meta.id)
    if content is None:
        raise not_found
    faults = ctx.faults
    if meta.generated and faults.archive_results:
        raise not_found
    if meta.generated and faults.truncate_downloads and ctx.first_download(meta.provider, meta.id):
        return content[: len(content) // 2]
    return content


def sha256_base64(hex_digest: str) -> str:
    """Base64 of a sha256 digest given in hex (Gemini's `sha256Hash`)."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii") if hex_digest else ""


def rfc3339(timestamp: float) -> str:
    """RFC 3339 UTC with microseconds, e.g. `2026-11-22T10:54:03.123456Z`."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def int_arg(value: str | None, default: int, low: int, high: int, name: str) -> int:
    """A bounded integer query parameter; 400 when it is not an integer in range."""
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ApiError(400, f"Invalid value for '{name}': expected an integer.", param=name) from None
    if not low <= number <= high:
        raise ApiError(400, f"Invalid value for '{name}': must be between {low} and {high}.", param=name)
    return number


def text_of(value: Any) -> str:
    """All text inside a message `content`-like value (a string, a list of parts, or nested dicts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (text_of(v) for v in value) if t)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        for key in ("content", "parts"):
            if key in value:
                return text_of(value[key])
    return ""


SAMPLING_FIELDS = ("temperature", "top_p", "top_k")


def refused_sampling_field(params: dict[str, Any], anthropic_version: str | None) -> str | None:
    """The first sampling field of an Anthropic Messages request that its API version refuses, if any.

    From `anthropic-version: 2026-10-21` (what anthropic SDK 2.x sends) the Messages API refuses `temperature`,
    `top_p` and `top_k` at any value ("Extra inputs are not permitted"); `2023-06-01` still takes them.
    """
    if (anthropic_version or "2023-06-01") < "2026-10-21":
        return None
    return next((name for name in SAMPLING_FIELDS if name in params), None)


class BatchApp(ProviderApp):
    """A provider whose jobs finish lazily on read (`refresh`) and whose state names are a table of phases."""

    state_names: dict[Phase, str]

    def live_job(self, job_id: str, missing: str, *, where: tuple[str, str] | None = None) -> Job:
        """This provider's job `job_id` unless it was deleted (or, `where` given, lives in another Vertex project
        and location); else the provider's 404, `missing` its own wording."""
        job = self.ctx.store.get_job(self.name, job_id)
        if (
            job is None
            or job.deleted
            or (where is not None and (job.params["project"], job.params["location"]) != where)
        ):
            raise ApiError(404, missing)
        return job

    def store_new_job(
        self,
        job_id: str,
        items: list[RequestItem],
        failures: list[JobFailure] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Job:
        """Create, store and count a job, then wait out the `create_delay_seconds` fault before answering.

        Stored before answering: a create is not idempotent, so a client that dies during the delay leaves a paid
        orphan behind, as in real life.
        """
        faults = self.ctx.faults
        job = Job(
            provider=self.name,
            id=job_id,
            seq=self.ctx.store.next_seq(),
            created_at=self.ctx.now(),
            requests=items,
            plan=JobPlan.capture(faults, job_id),
            failures=failures or [],
            params=params or {},
        )
        self.ctx.store.put_job(job)
        self.ctx.count_batch(self.name)
        self.ctx.sleep(faults.create_delay_seconds)
        return job

    def request_cancel(self, job: Job, refusal: Callable[[Phase], ApiError]) -> None:
        """Mark `job` for cancelling (once); `refusal(phase)` is the provider's error when it has already ended."""
        with self.ctx.store.lock:
            current = refresh(self.ctx, job, self.ctx.now(), self.finalize)
            if current in TERMINAL:
                raise refusal(current)
            if job.cancel_requested_at is None:
                job.cancel_requested_at = self.ctx.now()
                self.ctx.store.put_job(job)

    @abstractmethod
    def finalize(self, job: Job, final: Phase, outcomes: list[Outcome]) -> None:
        """Write the finished job's outputs in the provider's shape (each provider's app defines it: an app without
        it cannot be made)."""

    def state_name(self, job: Job) -> str:
        """The provider's name for the job's state now (finishing it first if it just ended)."""
        return self.state_names[refresh(self.ctx, job, self.ctx.now(), self.finalize)]


class GoogleApp(BatchApp):
    """Gemini and Vertex AI: Google's front end answers an unknown path and renders an error alike for both."""

    def cancel_job(self, job: Job, refused: Callable[[str], str]) -> Response:
        """Google's cancel: `{}`; a job that has ended is 400 FAILED_PRECONDITION, `refused(state name)` its message."""
        self.request_cancel(
            job, lambda current: ApiError(400, refused(self.state_names[current]), kind="FAILED_PRECONDITION")
        )
        return json_response({})

    def render_error(self, error: ApiError) -> Response:
        """`{"error": {code, message, status}}`."""
        status = (
            error.kind or GOOGLE_STATUS_NAMES.get(error.status) or ("INTERNAL" if error.status >= 500 else "UNKNOWN")
        )
        body = {"error": {"code": error.status, "message": error.message, "status": status}}
        return json_response(body, error.status, error.headers)

    def unknown_route(self, request: Request) -> ApiError:
        """Google's 404 for an unknown path."""
        return ApiError(404, f"The requested URL {request.full_path} was not found on this server.")


def error_kind(error: ApiError, by_status: dict[int, str], server: str) -> str:
    """An error's `type` as OpenAI and Anthropic name it: the one given, the status's, else server or request."""
    return error.kind or by_status.get(error.status) or (server if error.status >= 500 else "invalid_request_error")

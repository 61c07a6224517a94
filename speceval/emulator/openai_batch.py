"""The OpenAI provider of the emulator: Batch API (`/v1/batches…`) plus the Files API it needs.

Mounted under `/openai`, so the SDK's base URL is `http://127.0.0.1:P/openai/v1`.
"""

from __future__ import annotations

from typing import Any

from speceval.emulator.common import BatchApp, error_kind, int_arg, jsonl, new_generated_file, refresh
from speceval.emulator.jobs import (
    TERMINAL,
    Job,
    JobFailure,
    Kind,
    Outcome,
    Phase,
    emitted,
    phase,
    random_id,
    settled_counts,
    timeline,
)
from speceval.emulator.openai_files import PROVIDER, OpenAIFiles
from speceval.emulator.openai_wire import parse_input_file, result_line
from speceval.emulator.routing import ApiError, Request, Response, Route, json_response

_ENDPOINTS = {
    "/v1/responses",
    "/v1/chat/completions",
    "/v1/embeddings",
    "/v1/completions",
    "/v1/moderations",
    "/v1/images/generations",
    "/v1/images/edits",
    "/v1/videos",
}
# Endpoints whose answers the emulator can synthesise; the others are refused at create (honestly, not faked).
_ANSWERED = {"/v1/chat/completions", "/v1/responses", "/v1/completions"}
_MAX_REQUESTS = 50_000
_COMPLETION_WINDOW_SECONDS = 24 * 3600
_STATUS = {
    Phase.QUEUED: "validating",
    Phase.RUNNING: "in_progress",
    Phase.FINALIZING: "finalizing",
    Phase.COMPLETED: "completed",
    Phase.FAILED: "failed",
    Phase.EXPIRED: "expired",
    Phase.CANCELLING: "cancelling",
    Phase.CANCELLED: "cancelled",
}
_ERROR_TYPES = {401: "invalid_request_error", 403: "permission_error", 429: "requests"}


class OpenAIApp(BatchApp):
    """OpenAI Batch and Files APIs."""

    name = PROVIDER
    prefix = "/openai"
    missing_credential = (
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization "
        "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    )
    state_names = _STATUS

    def build_routes(self) -> list[Route]:
        """Files and batches routes."""
        return [
            *OpenAIFiles(self.ctx).routes(),
            Route("POST", "/v1/batches", self.create),
            Route("GET", "/v1/batches", self.list_batches),
            Route("GET", "/v1/batches/{batch_id}", self.retrieve),
            Route("POST", "/v1/batches/{batch_id}/cancel", self.cancel),
        ]

    def render_error(self, error: ApiError) -> Response:
        """`{"error": {message, type, param, code}}` with an `x-request-id` header."""
        kind = error_kind(error, _ERROR_TYPES, "server_error")
        code = error.code
        if code is None and error.status == 429:
            code = "rate_limit_exceeded"
        body = {"error": {"message": error.message, "type": kind, "param": error.param, "code": code}}
        return json_response(body, error.status, {"x-request-id": random_id("req_", 32), **error.headers})

    def authenticated(self, request: Request) -> bool:
        """A non-empty `Authorization: Bearer` credential."""
        value = request.header("authorization", "") or ""
        return value.startswith("Bearer ") and bool(value[7:].strip())

    # Batches -----------------------------------------------------------------------------------------------

    def _job(self, batch_id: str) -> Job:
        return self.live_job(batch_id, f"No batch found with id '{batch_id}'.")  # (no OpenAI route deletes one)

    def create(self, request: Request) -> Response:
        """`POST /v1/batches`: validate parameters, store the job, then (fault) delay the answer."""
        body = request.json()
        if not isinstance(body, dict):
            raise ApiError(400, "The request body must be a JSON object.")
        for field in ("input_file_id", "endpoint", "completion_window"):
            if not isinstance(body.get(field), str):
                raise ApiError(
                    400, f"Missing required parameter: '{field}'.", param=field, code="missing_required_parameter"
                )
        endpoint = body["endpoint"]
        if endpoint not in _ENDPOINTS:
            raise ApiError(400, f"Invalid value for 'endpoint': '{endpoint}'.", param="endpoint", code="invalid_value")
        if endpoint not in _ANSWERED:
            raise ApiError(400, f"The speceval emulator does not answer '{endpoint}' batches.", param="endpoint")
        if body["completion_window"] != "24h":
            raise ApiError(
                400,
                "Invalid value for 'completion_window': only '24h' is supported.",
                param="completion_window",
                code="invalid_value",
            )
        metadata = body.get("metadata")
        if metadata is not None and (
            not isinstance(metadata, dict)
            or len(metadata) > 16
            or any(
                not isinstance(k, str) or len(k) > 64 or not isinstance(v, str) or len(v) > 512
                for k, v in metadata.items()
            )
        ):
            raise ApiError(
                400,
                "Invalid 'metadata': at most 16 pairs, keys up to 64 and values up to 512 characters, all strings.",
                param="metadata",
            )
        meta = self.ctx.store.get_file(PROVIDER, body["input_file_id"])
        content = self.ctx.store.file_content(PROVIDER, body["input_file_id"])
        if meta is None or content is None:
            raise ApiError(404, f"No such File object: {body['input_file_id']}", param="input_file_id")
        if meta.purpose != "batch":
            raise ApiError(400, f"The input file {meta.id} must have purpose 'batch'.", param="input_file_id")
        faults = self.ctx.faults
        items, failures = parse_input_file(content, endpoint)
        limit = faults.max_requests_per_batch or _MAX_REQUESTS
        if len(items) > limit:
            failures.append(
                JobFailure(
                    code="too_many_requests", message=f"The batch has {len(items)} requests; the limit is {limit}."
                )
            )
        if self.ctx.take_create_limit():
            model = items[0].model if items else "the model"
            failures.append(
                JobFailure(
                    code="token_limit_exceeded",
                    message=(
                        f"Enqueued token limit reached for {model} in organization org-emulator. "
                        "Limit: 90,000 enqueued tokens. Please try submitting fewer tasks or try again "
                        "once your in_progress batches have completed."
                    ),
                )
            )
        if faults.fail_validation and not failures:
            failures.append(
                JobFailure(
                    code="invalid_request",
                    message=("The batch input file failed validation (injected by the speceval emulator)."),
                )
            )
        params = {
            "endpoint": endpoint,
            "input_file_id": meta.id,
            "completion_window": "24h",
            "metadata": metadata,
            "model": items[0].model if items else None,
            "output_expires_after": body.get("output_expires_after"),
        }
        job = self.store_new_job(random_id("batch_", 32), items, failures, params)
        return json_response(self.batch_json(job))

    def retrieve(self, request: Request) -> Response:
        """`GET /v1/batches/{batch_id}`."""
        return json_response(self.batch_json(self._job(request.params["batch_id"])))

    def cancel(self, request: Request) -> Response:
        """`POST /v1/batches/{batch_id}/cancel`: status `cancelling`, then `cancelled` with partial results."""
        job = self._job(request.params["batch_id"])
        with self.ctx.store.lock:
            current = phase(job, self.ctx.now())
            if current in TERMINAL:
                raise ApiError(409, f"Cannot cancel a batch with status '{_STATUS[current]}'.")
            if job.cancel_requested_at is None:
                job.cancel_requested_at = self.ctx.now()
                self.ctx.store.put_job(job)
        return json_response(self.batch_json(job))

    def list_batches(self, request: Request) -> Response:
        """`GET /v1/batches?limit=&after=`, newest first."""
        limit = int_arg(request.arg("limit"), 20, 1, 100, "limit")
        jobs = self.ctx.store.list_jobs(PROVIDER)
        after = request.arg("after")
        if after:
            ids = [j.id for j in jobs]
            jobs = jobs[ids.index(after) + 1 :] if after in ids else []
        page = jobs[:limit]
        data = [self.batch_json(j) for j in page]
        return json_response(
            {
                "object": "list",
                "data": data,
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(jobs) > limit,
            }
        )

    def finalize(self, job: Job, final: Phase, outcomes: list[Outcome]) -> None:
        """Write the output file (succeeded lines) and the error file (everything else)."""
        if final is Phase.FAILED:
            return
        endpoint, created = job.params["endpoint"], int(self.ctx.now())
        ok: list[dict[str, Any]] = []
        bad: list[dict[str, Any]] = []
        written: dict[int, dict[str, Any]] = {}
        for outcome in emitted(job, outcomes):
            # A duplicated result is the very same line twice (same line id), as a replayed write would be.
            line = written.setdefault(outcome.index, result_line(endpoint, outcome, created))
            (ok if outcome.kind is Kind.SUCCEEDED else bad).append(line)
        expires = job.params.get("output_expires_after") or {}
        retention = float(expires.get("seconds", 30 * 24 * 3600))
        for key, lines, suffix in (("output_file_id", ok, "output"), ("error_file_id", bad, "error")):
            if lines:
                meta = new_generated_file(
                    self.ctx,
                    PROVIDER,
                    random_id("file-", 22),
                    jsonl(lines),
                    filename=f"{job.id}_{suffix}.jsonl",
                    purpose="batch_output",
                    retention_seconds=retention,
                )
                job.outputs[key] = meta.id

    def batch_json(self, job: Job) -> dict[str, Any]:
        """The Batch object of `job` now (finalising it first if it just ended)."""
        now = self.ctx.now()
        current = refresh(self.ctx, job, now, self.finalize)
        times = timeline(job)
        started = (
            not job.failures
            and now >= times.start
            and (times.cancel_requested is None or times.cancel_requested >= times.start)
        )
        total = 0 if current is Phase.FAILED else len(job.requests)
        completed, failed = settled_counts(job, now, current)
        input_tokens = output_tokens = 0
        if current in TERMINAL:
            input_tokens, output_tokens = job.summary.get("input_tokens", 0), job.summary.get("output_tokens", 0)

        def at(condition: bool, instant: float | None) -> int | None:
            return int(instant) if condition and instant is not None else None

        return {
            "id": job.id,
            "object": "batch",
            "endpoint": job.params["endpoint"],
            "errors": {"object": "list", "data": [f.model_dump() for f in job.failures]}
            if current is Phase.FAILED
            else None,
            "input_file_id": job.params["input_file_id"],
            "completion_window": "24h",
            "status": _STATUS[current],
            "output_file_id": job.outputs.get("output_file_id"),
            "error_file_id": job.outputs.get("error_file_id"),
            "created_at": int(times.created),
            "in_progress_at": at(started, times.start),
            "expires_at": int(times.created + _COMPLETION_WINDOW_SECONDS),
            "finalizing_at": at(current in (Phase.FINALIZING, Phase.COMPLETED), times.finalize),
            "completed_at": at(current is Phase.COMPLETED, times.end),
            "failed_at": at(current is Phase.FAILED, times.start),
            "expired_at": at(current is Phase.EXPIRED, times.end),
            "cancelling_at": at(True, times.cancel_requested),
            "cancelled_at": at(current is Phase.CANCELLED, times.cancelled),
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": job.params.get("metadata"),
            "model": job.params.get("model"),
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
        }

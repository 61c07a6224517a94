"""The Anthropic provider of the emulator: Message Batches (`/v1/messages/batches…`).

Mounted under `/anthropic`, so the SDK's base URL is `http://127.0.0.1:P/anthropic` (the SDK adds `/v1`).
Results are served from an absolute `results_url` on the emulator itself (prefix included).
"""

from __future__ import annotations

import re
from typing import Any

from speceval.emulator.common import (
    BatchApp,
    download_bytes,
    error_kind,
    int_arg,
    new_generated_file,
    refresh,
    refused_sampling_field,
    results_jsonl,
    rfc3339,
    text_of,
)
from speceval.emulator.faults import TIMEOUT_ONCE_MARKER
from speceval.emulator.jobs import TERMINAL, Job, Kind, Outcome, Phase, RequestItem, random_id, timeline
from speceval.emulator.models import NOT_FOUND, retired
from speceval.emulator.routing import ApiError, Request, Response, Route, bytes_response, json_response
from speceval.emulator.structured import schema_of_anthropic

PROVIDER = "anthropic"
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MAX_REQUESTS = 100_000
_EXPIRY_SECONDS = 24 * 3600
_MAX_CACHE_BREAKPOINTS = 4
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
INVALID_MESSAGE = "Invalid request: the prompt contains the speceval emulator error marker [[emulator:error]]."
SERVER_MESSAGE = "Internal server error"
_SERVER_MESSAGES = {"timeout_error": "Request timed out while processing"}


def _result(outcome: Outcome) -> dict[str, Any]:
    """The `result` object of one results line."""
    if outcome.kind is Kind.SUCCEEDED:
        return {
            "type": "succeeded",
            "message": {
                "id": random_id("msg_"),
                "type": "message",
                "role": "assistant",
                "model": outcome.item.model,
                "content": [{"type": "text", "text": outcome.text or ""}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    # Anthropic counts cache reads and writes apart from input_tokens.
                    "input_tokens": outcome.input_tokens - outcome.cache.read - outcome.cache.written,
                    "output_tokens": outcome.output_tokens,
                    "cache_creation_input_tokens": outcome.cache.written,
                    "cache_read_input_tokens": outcome.cache.read,
                    "service_tier": "batch",
                },
            },
        }
    if outcome.kind in (Kind.INVALID, Kind.SERVER_ERROR):
        if outcome.kind is Kind.INVALID:
            kind, message = "invalid_request_error", INVALID_MESSAGE
        else:
            kind = outcome.item.error_type or "api_error"
            message = _SERVER_MESSAGES.get(kind, SERVER_MESSAGE)
            if kind == NOT_FOUND:
                message = f"model: {outcome.item.model}"
        return {
            "type": "errored",
            "error": {"type": "error", "error": {"type": kind, "message": message}, "request_id": random_id("req_")},
        }
    return {"type": "canceled" if outcome.kind is Kind.CANCELLED else "expired"}


def _validate_requests(body: Any, limit: int, version: str | None) -> list[RequestItem]:
    """The create body's requests, or a 400 `invalid_request_error` naming the first problem."""
    requests = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(requests, list) or not requests:
        raise ApiError(400, "requests: List should have at least 1 item after validation, not 0")
    if len(requests) > limit:
        raise ApiError(400, f"requests: the batch contains {len(requests)} requests; the maximum is {limit}.")
    items: list[RequestItem] = []
    seen: set[str] = set()
    for index, entry in enumerate(requests):
        custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
            raise ApiError(400, f"requests.{index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if custom_id in seen:
            raise ApiError(
                400,
                f"requests.{index}.custom_id: Duplicate custom_id '{custom_id}'; custom_id values "
                "must be unique within a batch.",
            )
        seen.add(custom_id)
        if not isinstance(params, dict):
            raise ApiError(400, f"requests.{index}.params: Field required")
        if not isinstance(params.get("model"), str):
            raise ApiError(400, f"requests.{index}.params.model: Field required")
        max_tokens = params.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ApiError(400, f"requests.{index}.params.max_tokens: Field required (an integer >= 1)")
        if not isinstance(params.get("messages"), list):
            raise ApiError(400, f"requests.{index}.params.messages: Field required")
        if params.get("stream"):
            raise ApiError(400, f"requests.{index}.params.stream: streaming is not supported in batches")
        refused = refused_sampling_field(params, version)
        if refused:
            raise ApiError(400, f"requests.{index}.params.{refused}: Extra inputs are not permitted")
        prompt = "\n".join(t for t in (text_of(params.get("system")), text_of(params["messages"])) if t)
        breakpoint = _cache_breakpoint(params, f"requests.{index}.params")
        items.append(
            RequestItem(
                custom_id=custom_id,
                model=params["model"],
                prompt=prompt,
                cache_breakpoint=breakpoint,
                response_schema=schema_of_anthropic(params),
                max_tokens=max_tokens,
                # A retired model is not refused at creation: each of its requests errors, as one sent alone would.
                error_type=NOT_FOUND if retired("anthropic", params["model"]) else None,
            )
        )
    return items


def _content_blocks(params: dict[str, Any]) -> list[Any]:
    """The system prompt's blocks, then every message's content blocks (a string counts as one block)."""

    def blocks(value: Any) -> list[Any]:
        return value if isinstance(value, list) else [value]

    found = blocks(params.get("system"))
    for message in params["messages"]:
        found.extend(blocks(message.get("content")) if isinstance(message, dict) else [])
    return found


def _cache_breakpoint(params: dict[str, Any], where: str) -> int | None:
    """Characters of the request's prompt text up to the end of its last `cache_control` block, or None.

    The prompt text is every non-empty text block (system first, then messages) joined with newlines, as
    `_validate_requests` builds it. A misshapen `cache_control` or more than four of them is a 400, as on the API.
    """
    texts: list[str] = []
    marked = 0
    end: int | None = None
    for block in _content_blocks(params):
        text = text_of(block)
        if text:
            texts.append(text)
        control = block.get("cache_control") if isinstance(block, dict) else None
        if control is None:
            continue
        if not (
            isinstance(control, dict)
            and control.get("type") == "ephemeral"
            and control.get("ttl", "5m") in ("5m", "1h")
        ):
            raise ApiError(400, f"{where}: cache_control: Input should be {{'type': 'ephemeral'}} (ttl '5m' or '1h')")
        marked += 1
        end = len("\n".join(texts))
    if marked > _MAX_CACHE_BREAKPOINTS:
        raise ApiError(
            400, f"A maximum of {_MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {marked}."
        )
    if params.get("cache_control") is not None:  # automatic caching: up to the last cacheable block
        end = len("\n".join(texts))
    return end


class AnthropicApp(BatchApp):
    """Anthropic Message Batches API."""

    name = PROVIDER
    prefix = "/anthropic"
    missing_credential = (401, "x-api-key header is required")

    def build_routes(self) -> list[Route]:
        """Message Batches routes."""
        return [
            Route("POST", "/v1/messages/batches", self.create),
            Route("GET", "/v1/messages/batches", self.list_batches),
            Route("GET", "/v1/messages/batches/{batch_id}", self.retrieve),
            Route("DELETE", "/v1/messages/batches/{batch_id}", self.delete),
            Route("GET", "/v1/messages/batches/{batch_id}/results", self.results),
            Route("POST", "/v1/messages/batches/{batch_id}/cancel", self.cancel),
        ]

    def render_error(self, error: ApiError) -> Response:
        """`{"type": "error", "error": {type, message}, "request_id"}` with a `request-id` header."""
        kind = error_kind(error, _ERROR_TYPES, "api_error")
        request_id = random_id("req_")
        body = {"type": "error", "error": {"type": kind, "message": error.message}, "request_id": request_id}
        return json_response(body, error.status, {"request-id": request_id, **error.headers})

    def authenticated(self, request: Request) -> bool:
        """`x-api-key` (docs, older SDKs) or `Authorization: Bearer` (what anthropic 2.12 sends)."""
        bearer = request.header("authorization", "") or ""
        return bool((request.header("x-api-key") or "").strip()) or (
            bearer.startswith("Bearer ") and bool(bearer[7:].strip())
        )

    def unknown_route(self, request: Request) -> ApiError:
        """Anthropic's 404 for an unknown path."""
        return ApiError(404, f"Not Found: {request.method} {request.path}")

    def state_name(self, job: Job) -> str:
        """The `processing_status` now."""
        return self._status(refresh(self.ctx, job, self.ctx.now(), self.finalize))

    @staticmethod
    def _status(current: Phase) -> str:
        if current in TERMINAL:
            return "ended"
        return "canceling" if current is Phase.CANCELLING else "in_progress"

    def _job(self, batch_id: str) -> Job:
        return self.live_job(batch_id, f"No message batch found with id '{batch_id}'.")

    def create(self, request: Request) -> Response:
        """`POST /v1/messages/batches`."""
        faults = self.ctx.faults
        items = _validate_requests(
            request.json(), faults.max_requests_per_batch or _MAX_REQUESTS, request.header("anthropic-version")
        )
        for item in items:
            if TIMEOUT_ONCE_MARKER in item.prompt and self.ctx.first_sight(f"{PROVIDER}:timeout:{item.prompt}"):
                item.error_type = "timeout_error"
        if self.ctx.take_create_limit():
            raise ApiError(
                429,
                "Your organization has reached its limit of requests waiting in the Message "
                "Batches queue. Please try again once some batches have ended.",
            )
        job = self.store_new_job(random_id("msgbatch_", 24), items)
        return json_response(self.batch_json(job, request))

    def retrieve(self, request: Request) -> Response:
        """`GET /v1/messages/batches/{batch_id}`."""
        return json_response(self.batch_json(self._job(request.params["batch_id"]), request))

    def cancel(self, request: Request) -> Response:
        """`POST …/cancel`: `canceling`, then `ended` with `canceled` results for unprocessed requests."""
        job = self._job(request.params["batch_id"])
        self.request_cancel(
            job, lambda _: ApiError(400, f"Message batch {job.id} has already ended and cannot be canceled.")
        )
        return json_response(self.batch_json(job, request))

    def delete(self, request: Request) -> Response:
        """`DELETE /v1/messages/batches/{batch_id}`: only once the batch has ended."""
        job = self._job(request.params["batch_id"])
        with self.ctx.store.lock:
            if refresh(self.ctx, job, self.ctx.now(), self.finalize) not in TERMINAL:
                raise ApiError(
                    400,
                    f"Message batch {job.id} is still processing; cancel it and wait for it to end before deleting it.",
                )
            job.deleted = True
            self.ctx.store.put_job(job)
        return json_response({"id": job.id, "type": "message_batch_deleted"})

    def results(self, request: Request) -> Response:
        """`GET …/results`: JSONL, one line per request, only when ended."""
        job = self._job(request.params["batch_id"])
        if refresh(self.ctx, job, self.ctx.now(), self.finalize) not in TERMINAL:
            raise ApiError(
                400,
                f"Message batch {job.id} has not ended yet; results are available once processing_status is 'ended'.",
            )
        not_found = ApiError(404, f"The results of message batch {job.id} are no longer available.")
        meta = self.ctx.store.get_file(PROVIDER, job.outputs.get("results", ""))
        if meta is None or job.archived_at is not None:
            raise not_found
        return bytes_response(download_bytes(self.ctx, meta, not_found), "application/binary")

    def list_batches(self, request: Request) -> Response:
        """`GET /v1/messages/batches?limit=&after_id=&before_id=`, newest first."""
        limit = int_arg(request.arg("limit"), 20, 1, 1000, "limit")
        jobs = [j for j in self.ctx.store.list_jobs(PROVIDER) if not j.deleted]
        ids = [j.id for j in jobs]
        after, before = request.arg("after_id"), request.arg("before_id")
        if before:
            end = ids.index(before) if before in ids else 0
            start = max(0, end - limit)
            page, has_more = jobs[start:end], start > 0
        else:
            begin = (ids.index(after) + 1 if after in ids else len(ids)) if after else 0
            page, has_more = jobs[begin : begin + limit], begin + limit < len(jobs)
        return json_response(
            {
                "data": [self.batch_json(j, request) for j in page],
                "has_more": has_more,
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
            }
        )

    def finalize(self, job: Job, final: Phase, outcomes: list[Outcome]) -> None:
        """Write the results JSONL (kept as an internal generated file)."""
        lines = results_jsonl(job, outcomes, lambda o: {"custom_id": o.item.custom_id, "result": _result(o)})
        meta = new_generated_file(
            self.ctx,
            PROVIDER,
            f"results-{job.id}",
            lines,
            filename=f"{job.id}_results.jsonl",
            mime_type="application/binary",
        )
        job.outputs["results"] = meta.id

    def _archived_at(self, job: Job, ended_at: float | None) -> str | None:
        if ended_at is None:
            return None
        if job.archived_at is not None:
            return rfc3339(max(job.archived_at, ended_at))
        return rfc3339(ended_at) if self.ctx.faults.archive_results else None

    def batch_json(self, job: Job, request: Request) -> dict[str, Any]:
        """The MessageBatch object now (finalising the job first if it just ended)."""
        now = self.ctx.now()
        current = refresh(self.ctx, job, now, self.finalize)
        times = timeline(job)
        ended = current in TERMINAL
        counts = {"processing": len(job.requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        ended_at = None
        if ended:
            summary = job.summary
            counts = {
                "processing": 0,
                "succeeded": summary.get(Kind.SUCCEEDED.value, 0),
                "errored": summary.get(Kind.INVALID.value, 0) + summary.get(Kind.SERVER_ERROR.value, 0),
                "canceled": summary.get(Kind.CANCELLED.value, 0),
                "expired": summary.get(Kind.EXPIRED.value, 0),
            }
            ended_at = times.cancelled if current is Phase.CANCELLED else times.end
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": self._status(current),
            "request_counts": counts,
            "ended_at": rfc3339(ended_at) if ended_at is not None else None,
            "created_at": rfc3339(times.created),
            "expires_at": rfc3339(times.created + _EXPIRY_SECONDS),
            "archived_at": self._archived_at(job, ended_at),
            "cancel_initiated_at": rfc3339(times.cancel_requested) if times.cancel_requested else None,
            "results_url": f"{request.base_url}{self.prefix}/v1/messages/batches/{job.id}/results" if ended else None,
        }

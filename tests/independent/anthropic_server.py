"""An Anthropic-wire server written only from the public Message Batches and Messages API documentation.

It shares no code with `speceval.emulator` on purpose: tests that run against it show that speceval follows the
documented wire format, not whatever the project's own emulator happens to accept. It serves

- `POST /v1/messages/batches` (`{"requests": [{"custom_id", "params"}]}`; the batch itself is checked at creation:
  non-empty, at most 100,000 requests, `custom_id` matching `^[a-zA-Z0-9_-]{1,64}$` and unique), `GET
  /v1/messages/batches/{id}`, `GET /v1/messages/batches` (`limit`, `after_id`, `before_id`; newest first),
  `POST /v1/messages/batches/{id}/cancel`, `DELETE /v1/messages/batches/{id}` (ended batches only) and
  `GET /v1/messages/batches/{id}/results` (JSONL, one line per request, shuffled, no blank lines);
- `POST /v1/messages` (non-streaming), `GET /v1/models`, `GET /v1/models/{id}`.

As documented, a request's `params` are validated asynchronously: a bad request does not fail the create call, its
line comes back `errored` (`invalid_request_error`) when the batch ends. The SDK speaks `anthropic-version:
2026-10-21`, under which `temperature`, `top_p` and `top_k` are refused ("Extra inputs are not permitted"), as is
any other parameter the Messages API does not define. Non-processing request counts stay 0 until the batch ends.

What an answer says is the test's business (`answer`), as is which requests fail (`fail`) and how long each model's
requests take (`turnaround`). Nothing here knows speceval's prompts.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

Answer = Callable[[dict[str, Any]], str]
"""Maps a request's Messages API `params` to the assistant's text."""

Fail = Callable[[str | None, dict[str, Any]], tuple[int, dict[str, Any]] | None]
"""Maps (custom_id, or None for a live call; params) to (HTTP status, `{"type", "message"}` error) to make it fail."""

DEFAULT_MODELS = (
    "claude-sonnet-4-6",
    "claude-sonnet-4-6",
    "claude-haiku-4-5-20251001",
)

MAX_REQUESTS = 100_000
MAX_BATCH_BYTES = 256_000_000
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SAMPLING_REFUSED = ("temperature", "top_p", "top_k")
"""Refused under `anthropic-version: 2026-10-21`, the version the installed SDK speaks."""
MESSAGE_PARAMS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "metadata",
        "stop_sequences",
        "stream",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "service_tier",
        "container",
        "mcp_servers",
        "context_management",
        "inference_geo",
        "cache_control",
        "speed",
    }
)
"""Top-level Messages API parameters this server knows (sampling parameters are deliberately not among them)."""


def last_user_text(params: dict[str, Any]) -> str:
    """The text of the last user message (a string, or its text blocks joined)."""
    for message in reversed(params.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def echo_answer(params: dict[str, Any]) -> str:
    """The default answer: a deterministic text derived from the last user message."""
    text = last_user_text(params)
    return f"independent answer ({len(text)} chars): {text[:40]}"


def rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def error_body(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}, "request_id": _request_id()}


def _request_id() -> str:
    return "req_" + uuid.uuid4().hex[:24]


def _hex_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def validate_params(
    params: Any, *, in_batch: bool, models: Sequence[str], strict_turns: bool = True
) -> tuple[str, str] | None:
    """What is wrong with one Messages API request, as (error type, message), or None.

    `strict_turns`: refuse two consecutive messages of the same role (the API reference says such turns are
    combined into one, so a lenient server accepts them).
    """
    if not isinstance(params, dict):
        return "invalid_request_error", "params: Input should be a valid dictionary"
    for name in params:
        if name not in MESSAGE_PARAMS:
            return "invalid_request_error", f"{name}: Extra inputs are not permitted"
    for name in ("model", "max_tokens", "messages"):
        if name not in params:
            return "invalid_request_error", f"{name}: Field required"
    if not isinstance(params["model"], str) or not params["model"]:
        return "invalid_request_error", "model: Input should be a valid string"
    max_tokens = params["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return "invalid_request_error", "max_tokens: Input should be an integer greater than or equal to 1"
    if params.get("stream"):
        if in_batch:
            return "invalid_request_error", "stream: streaming is not supported in Message Batches"
        return "invalid_request_error", "stream: this server does not serve streaming responses"
    problem = _check_messages(params["messages"], strict_turns)
    if problem is None:
        problem = _check_system(params.get("system"))
    if problem is None:
        problem = _check_output_config(params.get("output_config"))
    if problem is None and "stop_sequences" in params:
        stops = params["stop_sequences"]
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            problem = "stop_sequences: Input should be a valid list of strings"
    if problem is not None:
        return "invalid_request_error", problem
    if params["model"] not in models:
        return "not_found_error", f"model: {params['model']}"
    return None


def _check_blocks(blocks: Any, where: str) -> str | None:
    if not isinstance(blocks, list):
        return f"{where}: Input should be a valid string or a valid list"
    for j, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"{where}.{j}: each content block needs a string `type`"
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                return f"{where}.{j}.text: Field required"
            if not block["text"]:
                return f"{where}.{j}: text content blocks must be non-empty"
            extra = set(block) - {"type", "text", "cache_control", "citations"}
            if extra:
                return f"{where}.{j}.{sorted(extra)[0]}: Extra inputs are not permitted"
            control = block.get("cache_control")
            if control is not None and (not isinstance(control, dict) or control.get("type") != "ephemeral"):
                return f"{where}.{j}.cache_control: Input tag does not match the expected tag 'ephemeral'"
    return None


def _check_messages(messages: Any, strict_turns: bool) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages.{i}: Input should be a valid dictionary"
        extra = set(message) - {"role", "content"}
        if extra:
            return f"messages.{i}.{sorted(extra)[0]}: Extra inputs are not permitted"
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if "content" not in message:
            return f"messages.{i}.content: Field required"
        content = message["content"]
        if isinstance(content, str):
            if not content and not (message["role"] == "assistant" and i == len(messages) - 1):
                return f"messages.{i}: text content must be non-empty"
        else:
            problem = _check_blocks(content, f"messages.{i}.content")
            if problem is not None:
                return problem
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    for i in range(1, len(messages) if strict_turns else 0):
        if messages[i]["role"] == messages[i - 1]["role"]:
            return 'messages: roles must alternate between "user" and "assistant"'
    return None


def _check_system(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: Input should be a valid string or a list of text blocks"
    for j, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            return f"system.{j}.type: Input should be 'text'"
    return _check_blocks(system, "system")


def _check_output_config(config: Any) -> str | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        return "output_config: Input should be a valid dictionary"
    extra = set(config) - {"format", "effort"}
    if extra:
        return f"output_config.{sorted(extra)[0]}: Extra inputs are not permitted"
    fmt = config.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return "output_config.format.type: Input should be 'json_schema'"
    if not isinstance(fmt.get("schema"), dict):
        return "output_config.format.schema: Field required"
    extra = set(fmt) - {"type", "schema"}
    if extra:
        return f"output_config.format.{sorted(extra)[0]}: Extra inputs are not permitted"
    return None


@dataclass
class _Line:
    custom_id: str
    params: dict[str, Any]
    ready_at: float
    result: dict[str, Any] | None = None


@dataclass
class _Batch:
    id: str
    seq: int
    lines: list[_Line]
    created_at: datetime
    processing_status: str = "in_progress"
    ended_at: datetime | None = None
    cancel_initiated_at: datetime | None = None
    archived_at: datetime | None = None
    results: list[str] = field(default_factory=list)


class IndependentAnthropicServer:
    """A threaded Anthropic-wire server on 127.0.0.1 (context manager).

    Args:
        answer: text of each message, batch or live.
        turnaround: seconds from batch creation until a request of that model is done, one number or per model
            (missing models: 0). A batch ends when its last request is done.
        fail: which requests fail, and how (see `Fail`); consulted after the server's own validation.
        models: model ids `GET /v1/models` lists; a request for any other model comes back `not_found_error`.
        shuffle_seed: seed of the results order (None: request order).
        require_key: refuse requests with neither `Authorization: Bearer` nor `x-api-key` (401).
        strict_turns: refuse consecutive messages of the same role (see `validate_params`).

    Attributes the test inspects: `requests` ((batch_id, custom_id, params) per request line, in order),
    `live_requests` (bodies of `POST /v1/messages`), `batches` (every batch as the API shows it now),
    `api_versions` (every `anthropic-version` header received), `calls` ((method, path with query) of every request).
    """

    def __init__(
        self,
        *,
        answer: Answer = echo_answer,
        turnaround: float | Mapping[str, float] = 0.0,
        fail: Fail | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
        shuffle_seed: int | None = 0,
        require_key: bool = True,
        strict_turns: bool = True,
    ) -> None:
        self.strict_turns = strict_turns
        self.answer = answer
        self.turnaround = turnaround
        self.fail = fail
        self.models = list(models)
        self.shuffle_seed = shuffle_seed
        self.require_key = require_key
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.live_requests: list[dict[str, Any]] = []
        self.api_versions: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self.model_created_at = datetime(2025, 1, 1, tzinfo=UTC)
        self._batches: dict[str, _Batch] = {}
        self._seq = itertools.count(1)
        self._lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def __enter__(self) -> IndependentAnthropicServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def base_url(self) -> str:
        """The SDK's `base_url` (no `/v1`: the SDK's paths start with it)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Every batch created and not deleted, oldest first, as the API shows it now."""
        with self._lock:
            return [self._object(b) for b in sorted(self._batches.values(), key=lambda b: b.seq)]

    # ---- test controls ---------------------------------------------------------------------------------------
    def expire(self, batch_id: str) -> None:
        """End a batch as its 24 hours running out would: unfinished requests become `expired`."""
        with self._lock:
            batch = self._batches[batch_id]
            if batch.processing_status != "ended":
                self._end(batch, unfinished="expired")

    def archive(self, batch_id: str) -> None:
        """Mark a batch's results as gone (29 days after creation): `archived_at` set, results 404."""
        with self._lock:
            self._batches[batch_id].archived_at = datetime.now(UTC)

    # ---- behaviour -------------------------------------------------------------------------------------------
    def _turnaround_for(self, model: Any) -> float:
        if isinstance(self.turnaround, Mapping):
            return float(self.turnaround.get(model, 0.0)) if isinstance(model, str) else 0.0
        return float(self.turnaround)

    def message(self, params: dict[str, Any], service_tier: str) -> dict[str, Any]:
        text = self.answer(params)
        prompt_chars = len(json.dumps(params.get("messages", []))) + len(json.dumps(params.get("system", "")))
        return {
            "id": _hex_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(1, prompt_chars // 4),
                "output_tokens": max(1, len(text) // 4),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "service_tier": service_tier,
            },
        }

    def create_batch(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        if len(raw) > MAX_BATCH_BYTES:
            return 413, error_body("request_too_large", "Request exceeds the maximum size of 256 MB")
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            return 400, error_body("invalid_request_error", "The request body is not valid JSON")
        if not isinstance(body, dict) or "requests" not in body:
            return 400, error_body("invalid_request_error", "requests: Field required")
        extra = set(body) - {"requests"}
        if extra:
            return 400, error_body("invalid_request_error", f"{sorted(extra)[0]}: Extra inputs are not permitted")
        requests = body["requests"]
        if not isinstance(requests, list) or not requests:
            return 400, error_body("invalid_request_error", "requests: List should have at least 1 item")
        if len(requests) > MAX_REQUESTS:
            return 400, error_body(
                "invalid_request_error",
                f"requests: a batch holds at most {MAX_REQUESTS:,} requests, got {len(requests):,}",
            )
        seen: set[str] = set()
        for i, request in enumerate(requests):
            if not isinstance(request, dict):
                return 400, error_body("invalid_request_error", f"requests.{i}: Input should be a valid dictionary")
            for name in ("custom_id", "params"):
                if name not in request:
                    return 400, error_body("invalid_request_error", f"requests.{i}.{name}: Field required")
            extra = set(request) - {"custom_id", "params"}
            if extra:
                return 400, error_body(
                    "invalid_request_error", f"requests.{i}.{sorted(extra)[0]}: Extra inputs are not permitted"
                )
            custom_id = request["custom_id"]
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return 400, error_body(
                    "invalid_request_error",
                    f"requests.{i}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'",
                )
            if custom_id in seen:
                return 400, error_body(
                    "invalid_request_error",
                    f"requests.{i}.custom_id: duplicate custom_id {custom_id!r}; custom_id must "
                    "be unique within a batch",
                )
            seen.add(custom_id)
            if not isinstance(request["params"], dict):
                return 400, error_body(
                    "invalid_request_error", f"requests.{i}.params: Input should be a valid dictionary"
                )
        now = time.monotonic()
        batch = _Batch(
            id=_hex_id("msgbatch"),
            seq=next(self._seq),
            lines=[
                _Line(r["custom_id"], r["params"], now + self._turnaround_for(r["params"].get("model")))
                for r in requests
            ],
            created_at=datetime.now(UTC),
        )
        with self._lock:
            self._batches[batch.id] = batch
            self.requests.extend((batch.id, line.custom_id, line.params) for line in batch.lines)
            return 200, self._object(batch, advance=False)  # a new batch is `in_progress`, however quick

    def _result(self, line: _Line) -> dict[str, Any]:
        problem = validate_params(line.params, in_batch=True, models=self.models, strict_turns=self.strict_turns)
        if problem is None and self.fail is not None:
            failure = self.fail(line.custom_id, line.params)
            if failure is not None:
                error = dict(failure[1])
                problem = (str(error.get("type", "api_error")), str(error.get("message", "")))
        if problem is not None:
            envelope = {"type": "error", "error": {"type": problem[0], "message": problem[1]}}
            return {"type": "errored", "error": envelope}
        return {"type": "succeeded", "message": self.message(line.params, "batch")}

    def _advance(self, batch: _Batch) -> None:
        """Move a batch on by the clock (caller holds the lock)."""
        if batch.processing_status == "in_progress":
            now = time.monotonic()
            if all(line.ready_at <= now for line in batch.lines):
                self._end(batch, unfinished="expired")  # nothing is unfinished by now
        elif batch.processing_status == "canceling":
            self._end(batch, unfinished="canceled")

    def _end(self, batch: _Batch, unfinished: str) -> None:
        now = time.monotonic()
        for line in batch.lines:
            if line.result is None:
                line.result = self._result(line) if line.ready_at <= now else {"type": unfinished}
        lines = [
            json.dumps({"custom_id": line.custom_id, "result": line.result}, separators=(",", ":"))
            for line in batch.lines
        ]
        if self.shuffle_seed is not None:
            random.Random(self.shuffle_seed).shuffle(lines)
        batch.results = lines
        batch.processing_status = "ended"
        batch.ended_at = datetime.now(UTC)

    def _object(self, batch: _Batch, advance: bool = True) -> dict[str, Any]:
        """The MessageBatch object, moved on by the clock first unless told not to (caller holds the lock)."""
        if advance:
            self._advance(batch)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.processing_status == "ended":
            for line in batch.lines:
                counts[str((line.result or {}).get("type"))] += 1
        else:
            counts["processing"] = len(batch.lines)
        ended = batch.processing_status == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.processing_status,
            "request_counts": counts,
            "created_at": rfc3339(batch.created_at),
            "expires_at": rfc3339(batch.created_at + timedelta(hours=24)),
            "ended_at": rfc3339(batch.ended_at),
            "cancel_initiated_at": rfc3339(batch.cancel_initiated_at),
            "archived_at": rfc3339(batch.archived_at),
            "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def model_object(self, model: str) -> dict[str, Any]:
        return {
            "id": model,
            "type": "model",
            "display_name": model.replace("-", " ").title(),
            "created_at": rfc3339(self.model_created_at),
        }


def page(ids: list[str], query: dict[str, list[str]]) -> tuple[int, Any]:
    """One page of a newest-first list: (200, (page ids, has_more)) or (status, error body)."""
    try:
        limit = int(query.get("limit", ["20"])[0])
    except ValueError:
        return 400, error_body("invalid_request_error", "limit: Input should be a valid integer")
    if not 1 <= limit <= 1000:
        return 400, error_body("invalid_request_error", "limit: Input should be between 1 and 1000")
    if "after_id" in query and "before_id" in query:
        return 400, error_body("invalid_request_error", "after_id and before_id cannot both be given")
    for cursor in ("after_id", "before_id"):
        if cursor in query and query[cursor][0] not in ids:
            return 400, error_body("invalid_request_error", f"{cursor}: no object with id {query[cursor][0]!r}")
    if "before_id" in query:
        end = ids.index(query["before_id"][0])
        start = max(0, end - limit)
        return 200, (ids[start:end], start > 0)
    start = ids.index(query["after_id"][0]) + 1 if "after_id" in query else 0
    return 200, (ids[start : start + limit], start + limit < len(ids))


def list_body(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {
        "data": items,
        "has_more": has_more,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
    }


class _Handler(BaseHTTPRequestHandler):
    owner: IndependentAnthropicServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes: without this, Nagle's algorithm and the client's delayed ACK hold
        # each answer for ~40 ms on a kept-alive connection.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(
        self,
        status: int,
        payload: Any,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        request_id = payload.get("request_id") if isinstance(payload, dict) else None
        self.send_header("request-id", request_id or _request_id())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, type_: str, message: str) -> None:
        self._send(status, error_body(type_, message))

    def _authorised(self) -> bool:
        version = self.headers.get("anthropic-version")
        with self.owner._lock:
            self.owner.calls.append((self.command, self.path))
            if version is not None:
                self.owner.api_versions.append(version)
        if not self.owner.require_key:
            return True
        bearer = self.headers.get("Authorization", "")
        if (bearer.startswith("Bearer ") and bearer[7:].strip()) or self.headers.get("x-api-key", "").strip():
            return True
        self._error(401, "authentication_error", "x-api-key header is required")
        return False

    def _route(self) -> tuple[list[str], dict[str, list[str]]]:
        url = urlparse(self.path)
        return url.path.strip("/").split("/"), parse_qs(url.query)

    def do_GET(self) -> None:
        if not self._authorised():
            return
        parts, query = self._route()
        owner = self.owner
        with owner._lock:
            if parts == ["v1", "messages", "batches"]:
                ordered = sorted(owner._batches.values(), key=lambda b: b.seq, reverse=True)
                status, result = page([b.id for b in ordered], query)
                if status != 200:
                    return self._send(status, result)
                ids, has_more = result
                return self._send(200, list_body([owner._object(owner._batches[i]) for i in ids], has_more))
            if parts[:3] == ["v1", "messages", "batches"] and len(parts) in (4, 5):
                batch = owner._batches.get(parts[3])
                if batch is None:
                    return self._error(404, "not_found_error", f"No message batch with id {parts[3]!r}")
                if len(parts) == 4:
                    return self._send(200, owner._object(batch))
                if parts[4] != "results":
                    return self._error(404, "not_found_error", f"Unknown path {self.path}")
                owner._advance(batch)
                if batch.processing_status != "ended":
                    return self._error(
                        400,
                        "invalid_request_error",
                        f"Message batch {batch.id} is still {batch.processing_status}; results are "
                        "available once it has ended",
                    )
                if batch.archived_at is not None:
                    return self._error(
                        404, "not_found_error", f"The results of message batch {batch.id} have been archived"
                    )
                data = "".join(line + "\n" for line in batch.results).encode()
                return self._send(200, data, "application/x-jsonl")
            if parts == ["v1", "models"]:
                status, result = page(list(owner.models), query)
                if status != 200:
                    return self._send(status, result)
                ids, has_more = result
                return self._send(200, list_body([owner.model_object(m) for m in ids], has_more))
            if parts[:2] == ["v1", "models"] and len(parts) == 3:
                if parts[2] not in owner.models:
                    return self._error(404, "not_found_error", f"model: {parts[2]}")
                return self._send(200, owner.model_object(parts[2]))
        self._error(404, "not_found_error", f"Unknown path {self.path}")

    def do_DELETE(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self._authorised():
            return
        parts, _ = self._route()
        owner = self.owner
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
            with owner._lock:
                batch = owner._batches.get(parts[3])
                if batch is None:
                    return self._error(404, "not_found_error", f"No message batch with id {parts[3]!r}")
                owner._advance(batch)
                if batch.processing_status != "ended":
                    return self._error(
                        400,
                        "invalid_request_error",
                        f"Message batch {batch.id} cannot be deleted while it is "
                        f"{batch.processing_status}; cancel it first",
                    )
                del owner._batches[batch.id]
                return self._send(200, {"id": batch.id, "type": "message_batch_deleted"})
        self._error(404, "not_found_error", f"Unknown path {self.path}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # before any answer (keep-alive)
        if not self._authorised():
            return
        parts, _ = self._route()
        owner = self.owner
        if parts == ["v1", "messages", "batches"]:
            status, payload = owner.create_batch(raw)
            return self._send(status, payload)
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) == 5 and parts[4] == "cancel":
            with owner._lock:
                batch = owner._batches.get(parts[3])
                if batch is None:
                    return self._error(404, "not_found_error", f"No message batch with id {parts[3]!r}")
                owner._advance(batch)
                if batch.processing_status == "in_progress":
                    batch.processing_status = "canceling"
                    batch.cancel_initiated_at = datetime.now(UTC)
                    # What is done at this moment stays done; the rest will be `canceled` when the batch ends.
                    now = time.monotonic()
                    for line in batch.lines:
                        if line.ready_at <= now:
                            line.result = owner._result(line)
                # The cancel's own response shows `canceling`; the next look at the batch shows it ended.
                return self._send(200, owner._object(batch, advance=False))
        if parts == ["v1", "messages"]:
            return self._live(raw)
        self._error(404, "not_found_error", f"Unknown path {self.path}")

    def _live(self, raw: bytes) -> None:
        owner = self.owner
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._error(400, "invalid_request_error", "The request body is not valid JSON")
        with owner._lock:
            owner.live_requests.append(body)
        problem = validate_params(body, in_batch=False, models=owner.models, strict_turns=owner.strict_turns)
        if problem is not None:
            return self._error(404 if problem[0] == "not_found_error" else 400, *problem)
        failure = owner.fail(None, body) if owner.fail else None
        if failure is not None:
            status, error = failure
            payload = {"type": "error", "error": dict(error), "request_id": _request_id()}
            return self._send(status, payload)
        reset = rfc3339(datetime.now(UTC) + timedelta(seconds=60)) or ""
        limits = {
            "anthropic-ratelimit-requests-limit": "4000",
            "anthropic-ratelimit-requests-remaining": "3999",
            "anthropic-ratelimit-requests-reset": reset,
            "anthropic-ratelimit-tokens-limit": "400000",
            "anthropic-ratelimit-tokens-remaining": "399000",
            "anthropic-ratelimit-tokens-reset": reset,
        }
        self._send(200, owner.message(body, "standard"), headers=limits)

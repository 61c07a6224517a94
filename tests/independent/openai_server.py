"""An OpenAI-wire server written only from the public OpenAPI spec (openai/openai-openapi, `openapi.yaml`).

It shares no code with `speceval.emulator` on purpose: tests that run against it show that speceval follows the
documented wire format, not whatever the project's own emulator happens to accept. It serves

- `POST /v1/files` (multipart: `purpose`, `file`), `GET /v1/files/{id}`, `GET /v1/files/{id}/content`;
- `POST /v1/batches` (`CreateBatchRequest`), `GET /v1/batches/{id}`, `GET /v1/batches` (`after`, `limit`),
  `POST /v1/batches/{id}/cancel`; batch objects carry the spec's required fields, output and error files use the
  documented request-output line shape (`id`, `custom_id`, `response{status_code, request_id, body}`, `error`);
- `POST /v1/chat/completions`, echoing the request's `service_tier` as the tier that served it.

What an answer says is the test's business (`answer`), as is which requests fail (`fail`) and how long a model's
batches take (`turnaround`). Nothing here knows speceval's prompts.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

Answer = Callable[[dict[str, Any]], str]
"""Maps a chat-completions request body to the assistant's text."""

Fail = Callable[[str | None, dict[str, Any]], tuple[int, dict[str, Any]] | None]
"""Maps (custom_id or None for live calls, request body) to (HTTP status, error object) to make a request fail."""


def echo_answer(body: dict[str, Any]) -> str:
    """The default answer: a deterministic text derived from the last message."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "")
    text = content if isinstance(content, str) else json.dumps(content)
    return f"independent answer ({len(text)} chars): {text[:40]}"


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def as_object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class _Batch:
    obj: dict[str, Any]
    lines: list[dict[str, Any]]
    ready_at: float
    created_monotonic: float = field(default_factory=time.monotonic)


class IndependentOpenAIServer:
    """A threaded OpenAI-wire server on 127.0.0.1 (context manager).

    Args:
        answer: text of each chat completion, batch or live.
        turnaround: seconds from batch creation to completion, one number or per model (missing models: 0).
        fail: which requests fail, and how (see `Fail`).
        create_error: if set, every `POST /v1/batches` is answered with this (status, JSON body).
        list_order: order of `GET /v1/batches`: "desc" (newest first, as observed) or "asc" (the spec promises none).
    """

    def __init__(
        self,
        *,
        answer: Answer = echo_answer,
        turnaround: float | Mapping[str, float] = 0.0,
        fail: Fail | None = None,
        create_error: tuple[int, dict[str, Any]] | None = None,
        list_order: str = "desc",
        shuffle_seed: int | None = 0,
        require_key: bool = True,
    ) -> None:
        self.require_key = require_key
        self.shuffle_seed = shuffle_seed
        self.answer = answer
        self.turnaround = turnaround
        self.fail = fail
        self.create_error = create_error
        self.list_order = list_order
        self.files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}
        self.chat_requests: list[dict[str, Any]] = []
        self.batch_create_attempts = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def __enter__(self) -> IndependentOpenAIServer:
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
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def batch_requests(self) -> list[tuple[str, str]]:
        """(model, custom_id) of every request of every batch created, in creation order (a request sent in two
        batches appears twice)."""
        with self._lock:
            return [
                (str(line["body"].get("model")), str(line["custom_id"]))
                for b in self._batches.values()
                for line in b.lines
            ]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Every batch created, oldest first, as the API shows it now."""
        with self._lock:
            return [self._refresh(b) for b in sorted(self._batches.values(), key=lambda b: b.created_monotonic)]

    # ---- behaviour -------------------------------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}{uuid.uuid4().hex[:8]}"

    def _turnaround_for(self, model: str) -> float:
        if isinstance(self.turnaround, Mapping):
            return float(self.turnaround.get(model, 0.0))
        return float(self.turnaround)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.answer(body)
        prompt_chars = len(json.dumps(body.get("messages", [])))
        prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(text) // 4)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            # CreateChatCompletionResponse.service_tier: "the processing mode actually used to serve the request"
            # (echoed when the request set one; `default` for the standard tier).
            "service_tier": body.get("service_tier") or "default",
        }

    def create_batch(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.batch_create_attempts += 1
        if self.create_error is not None:
            return self.create_error
        for key in ("input_file_id", "endpoint", "completion_window"):
            if key not in request:
                return 400, _error(f"Missing required parameter: '{key}'.", "invalid_request_error", key)
        if request["completion_window"] != "24h":
            return 400, _error("completion_window must be '24h'.", "invalid_request_error", "completion_window")
        source = self.files.get(request["input_file_id"])
        if source is None or source.purpose != "batch":
            return 400, _error("No batch input file with that id.", "invalid_request_error", "input_file_id")
        lines = [json.loads(raw) for raw in source.data.splitlines() if raw.strip()]
        models = {line["body"].get("model", "") for line in lines}
        now = int(time.time())
        batch_id = self._new_id("batch")
        obj: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": request["endpoint"],
            "model": next(iter(models)) if len(models) == 1 else None,
            "errors": None,
            "input_file_id": source.id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 24 * 3600,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": request.get("metadata"),
        }
        ready_at = time.monotonic() + max(self._turnaround_for(m) for m in models) if models else time.monotonic()
        with self._lock:
            self._batches[batch_id] = _Batch(obj=obj, lines=lines, ready_at=ready_at)
        return 200, dict(obj)

    def _refresh(self, batch: _Batch) -> dict[str, Any]:
        """Advance a batch by the clock (caller holds the lock)."""
        obj = batch.obj
        now = int(time.time())
        if obj["status"] == "validating":
            obj["status"], obj["in_progress_at"] = "in_progress", now
        if obj["status"] == "in_progress" and time.monotonic() >= batch.ready_at:
            self._finish(batch, "completed")
        if obj["status"] == "cancelling":
            self._finish(batch, "cancelled")
        return dict(obj)

    def _finish(self, batch: _Batch, status: str) -> None:
        obj = batch.obj
        now = int(time.time())
        outputs: list[str] = []
        errors: list[str] = []
        if status == "completed":
            obj["finalizing_at"] = now
            for line in batch.lines:
                failure = self.fail(line["custom_id"], line["body"]) if self.fail else None
                if failure is None:
                    completion = self.completion(line["body"])
                    response = {"status_code": 200, "request_id": uuid.uuid4().hex, "body": completion}
                    outputs.append(
                        _dumps(
                            {
                                "id": self._new_id("batch_req"),
                                "custom_id": line["custom_id"],
                                "response": response,
                                "error": None,
                            }
                        )
                    )
                else:
                    status_code, error = failure
                    response = {"status_code": status_code, "request_id": uuid.uuid4().hex, "body": {"error": error}}
                    errors.append(
                        _dumps(
                            {
                                "id": self._new_id("batch_req"),
                                "custom_id": line["custom_id"],
                                "response": response,
                                "error": None,
                            }
                        )
                    )
        if self.shuffle_seed is not None:
            random.Random(self.shuffle_seed).shuffle(outputs)
            random.Random(self.shuffle_seed).shuffle(errors)
        obj["status"] = status
        obj[f"{status}_at"] = now
        obj["request_counts"] = {"total": len(batch.lines), "completed": len(outputs), "failed": len(errors)}
        if outputs:
            obj["output_file_id"] = self._store_file("batch_output.jsonl", "batch_output", outputs)
        if errors:
            obj["error_file_id"] = self._store_file("batch_errors.jsonl", "batch_output", errors)

    def _store_file(self, filename: str, purpose: str, lines: list[str]) -> str:
        file_id = self._new_id("file")
        data = ("\n".join(lines) + "\n").encode()
        self.files[file_id] = _File(file_id, filename, purpose, data, int(time.time()))
        return file_id


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _error(message: str, type_: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    owner: IndependentOpenAIServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes: without this, Nagle's algorithm and the client's delayed ACK hold
        # each answer for ~40 ms on a kept-alive connection.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", uuid.uuid4().hex)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorised(self) -> bool:
        if self.owner.require_key and not self.headers.get("Authorization", "").startswith("Bearer "):
            self._send(401, _error("You didn't provide an API key.", "invalid_request_error"))
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorised():
            return
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        owner = self.owner
        with owner._lock:
            if parts[:2] == ["v1", "files"] and len(parts) in (3, 4):
                file = owner.files.get(parts[2])
                if file is None:
                    return self._send(404, _error("No such File object.", "invalid_request_error", "id"))
                if len(parts) == 4 and parts[3] == "content":
                    return self._send(200, file.data, "application/octet-stream")
                return self._send(200, file.as_object())
            if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                batch = owner._batches.get(parts[2])
                if batch is None:
                    return self._send(404, _error("No such batch.", "invalid_request_error", "batch_id"))
                return self._send(200, owner._refresh(batch))
            if parts == ["v1", "batches"]:
                query = parse_qs(url.query)
                limit = min(100, max(1, int(query.get("limit", ["20"])[0])))
                ordered = sorted(
                    owner._batches.values(), key=lambda b: b.created_monotonic, reverse=owner.list_order == "desc"
                )
                ids = [b.obj["id"] for b in ordered]
                start = ids.index(query["after"][0]) + 1 if "after" in query and query["after"][0] in ids else 0
                page = [owner._refresh(b) for b in ordered[start : start + limit]]
                return self._send(
                    200,
                    {
                        "object": "list",
                        "data": page,
                        "first_id": page[0]["id"] if page else None,
                        "last_id": page[-1]["id"] if page else None,
                        "has_more": start + limit < len(ordered),
                    },
                )
        self._send(404, _error(f"Unknown path {url.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        raw = self._body()  # read before any answer, or the connection's next request starts mid-body
        if not self._authorised():
            return
        path = urlparse(self.path).path.rstrip("/")
        parts = path.strip("/").split("/")
        owner = self.owner
        if path == "/v1/files":
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
            )
            fields: dict[str, tuple[str | None, bytes]] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                fields[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
            if "file" not in fields or "purpose" not in fields:
                return self._send(400, _error("Missing 'file' or 'purpose'.", "invalid_request_error"))
            purpose = fields["purpose"][1].decode()
            file_id = owner._new_id("file")
            with owner._lock:
                owner.files[file_id] = _File(
                    file_id, fields["file"][0] or "upload.jsonl", purpose, fields["file"][1], int(time.time())
                )
                return self._send(200, owner.files[file_id].as_object())
        body = json.loads(raw or b"{}")
        if path == "/v1/batches":
            status, payload = owner.create_batch(body)
            return self._send(status, payload)
        if parts[:2] == ["v1", "batches"] and len(parts) == 4 and parts[3] == "cancel":
            with owner._lock:
                batch = owner._batches.get(parts[2])
                if batch is None:
                    return self._send(404, _error("No such batch.", "invalid_request_error", "batch_id"))
                if batch.obj["status"] in ("validating", "in_progress"):
                    batch.obj["status"], batch.obj["cancelling_at"] = "cancelling", int(time.time())
                return self._send(200, dict(batch.obj))
        if path == "/v1/chat/completions":
            with owner._lock:
                owner.chat_requests.append(body)
            failure = owner.fail(None, body) if owner.fail else None
            if failure is not None:
                status, error = failure
                return self._send(status, {"error": error})
            return self._send(200, owner.completion(body))
        self._send(404, _error(f"Unknown path {path}", "invalid_request_error"))

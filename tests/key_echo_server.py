"""A careless HTTP server for secret tests: it quotes the caller's credential back in whatever it answers.

Real providers have done this ("Incorrect API key provided: sk-…"). Each response is built by `respond`
from the method, the path and the credential the client sent (`Authorization: Bearer`, `x-api-key` or
`x-goog-api-key`); the string `{key}` anywhere in the returned JSON is replaced by that credential.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Respond = Callable[[str, str], tuple[int, Any]]
"""(method, path) → (HTTP status, JSON body, where "{key}" stands for the caller's credential)."""


def _credential(headers: Any) -> str:
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            return str(headers[name])
    auth = str(headers.get("authorization") or "")
    return auth.split(" ", 1)[1] if " " in auth else auth


def _fill(value: Any, key: str) -> Any:
    if isinstance(value, str):
        return value.replace("{key}", key)
    if isinstance(value, dict):
        return {k: _fill(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, key) for v in value]
    return value


class KeyEchoServer:
    """A threaded loopback server (context manager); `base_url` is `http://127.0.0.1:PORT`."""

    def __init__(self, respond: Respond):
        self.respond = respond
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                owner.requests.append((self.command, self.path))
                status, body = owner.respond(self.command, self.path)
                data = json.dumps(_fill(body, _credential(self.headers))).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The server's root URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> KeyEchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

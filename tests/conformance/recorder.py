"""A recording proxy on 127.0.0.1: the SDKs talk to the emulator through it, and every exchange is kept.

Absolute URLs the emulator hands out (Anthropic `results_url`, Gemini's upload URL) are rewritten to the proxy, so
the calls made on them are recorded too.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding"}


@dataclass(frozen=True)
class Exchange:
    """One request through the proxy and the emulator's answer."""

    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]
    response_body: bytes

    def request_json(self) -> Any:
        """The request body as JSON."""
        return json.loads(self.request_body)

    def response_json(self) -> Any:
        """The response body as JSON."""
        return json.loads(self.response_body)

    @property
    def route(self) -> str:
        """The path without its query."""
        return self.path.split("?", 1)[0]


class RecordingProxy:
    """Forwards everything to `target` (the emulator's base URL) and records each exchange."""

    def __init__(self, target: str) -> None:
        """Start serving on a free loopback port."""
        self.target = target.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
                pass

            def _forward(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _forward  # noqa: N815 (stdlib naming)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RecordingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        """Send one request on to the emulator, record it, and answer with the emulator's reply."""
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        target = urlsplit(self.target)
        connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=30)
        try:
            connection.request(handler.command, handler.path, body=body, headers=headers)
            reply = connection.getresponse()
            status, reply_headers, reply_body = reply.status, dict(reply.getheaders()), reply.read()
        finally:
            connection.close()
        reply_body = reply_body.replace(self.target.encode(), self.base_url.encode())
        reply_headers = {k: v.replace(self.target, self.base_url) for k, v in reply_headers.items()}
        with self._lock:
            self.exchanges.append(
                Exchange(handler.command, handler.path, headers, body, status, reply_headers, reply_body)
            )
        handler.send_response(status)
        for key, value in reply_headers.items():
            if key.lower() not in _HOP_BY_HOP:
                handler.send_header(key, value)
        handler.send_header("content-length", str(len(reply_body)))
        handler.end_headers()
        handler.wfile.write(reply_body)

    def matching(self, method: str, route_prefix: str, route_suffix: str = "") -> list[Exchange]:
        """The exchanges of one kind (method, path prefix and optional suffix), in order."""
        with self._lock:
            return [
                e
                for e in self.exchanges
                if e.method == method and e.route.startswith(route_prefix) and e.route.endswith(route_suffix)
            ]

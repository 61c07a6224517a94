"""The emulator's HTTP server: one loopback port, one path prefix per provider.

`Emulator` runs it in a background thread (a context manager for tests and `--offline` runs); `serve()` runs it
in the foreground for `speceval emulator --port N`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, Field

from speceval.emulator.anthropic_batch import AnthropicApp
from speceval.emulator.context import EmulatorContext, EmulatorStats
from speceval.emulator.faults import FaultConfig, HttpFault, canonical_provider
from speceval.emulator.gemini_batch import GeminiApp
from speceval.emulator.models import add_model_lists
from speceval.emulator.openai_batch import OpenAIApp
from speceval.emulator.realtime_chat import add_realtime_endpoints
from speceval.emulator.realtime_limits import RealtimeLog
from speceval.emulator.responder import Responder
from speceval.emulator.routing import ApiError, ProviderApp, Request, Response, json_response
from speceval.emulator.state import Store, StoredFile
from speceval.emulator.vertex_batch import GcsObjects, VertexApp

logger = logging.getLogger("speceval.emulator")


class JobInfo(BaseModel):
    """What `Emulator.list_jobs` reports about one job."""

    id: str = Field(description="the id the SDK sees: `batch_…`, `msgbatch_…` or `batches/…`")
    provider: str
    state: str = Field(description="the provider's own state name, as of now")
    request_count: int
    metadata: dict[str, str] = Field(default_factory=dict, description="OpenAI batch metadata")
    display_name: str | None = Field(default=None, description="Gemini displayName")
    created_at: float
    deleted: bool = False


class _Server(ThreadingHTTPServer):
    """Threading server that can close idle keep-alive connections on shutdown (so every thread ends)."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], ctx: EmulatorContext, apps: list[ProviderApp]) -> None:
        self.ctx = ctx
        self.apps = apps
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._connections_lock:
                self._connections.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed between requests resets its keep-alive connection while the handler waits in the stdlib's
        # own readline (outside `_Handler._handle`'s guard): nothing to answer, so no traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            logger.debug("client %s went away", client_address)
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Wake handler threads blocked on idle keep-alive sockets."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the peer
                connection.shutdown(socket.SHUT_RDWR)

    def dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Response:
        """Route one request to its provider app and handler."""
        split = urlsplit(target)
        path = split.path
        app = next((a for a in self.apps if path == a.prefix or path.startswith(a.prefix + "/")), None)
        if app is None:
            self.ctx.count_request(f"{method} <unknown>")
            message = f"No provider at {path}; use the /openai/v1, /anthropic, /gemini or /vertex prefixes."
            return json_response({"error": {"message": message, "type": "not_found"}}, 404)
        host = headers.get("host")
        request = Request(
            method=method,
            path=path[len(app.prefix) :] or "/",
            full_path=path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers=headers,
            body=body,
            base_url=f"http://{host}" if host else self.ctx.base_url,
        )
        route = None
        for candidate in app.routes:
            params = candidate.match(method, request.path)
            if params is not None:
                route, request.params = candidate, params
                break
        self.ctx.count_request(f"{method} {app.prefix}{route.template if route else ' <unknown>'}")
        fault = self.ctx.take_http_fault(app.name, method, path)
        if fault is not None:
            return app.render_error(_fault_error(fault))
        if route is None:
            return app.render_error(app.unknown_route(request))
        if route.auth and not app.authenticated(request):
            return app.render_error(app.auth_error(request))
        try:
            return route.handler(request)
        except ApiError as error:
            return app.render_error(error)
        except Exception:  # a bug in the emulator must answer 500, not kill the connection thread
            logger.exception("emulator handler failed for %s %s", method, path)
            return app.render_error(ApiError(500, "Internal error in the speceval emulator."))


def _fault_error(fault: HttpFault) -> ApiError:
    headers = {}
    if fault.retry_after is not None:
        headers["retry-after"] = f"{fault.retry_after:g}"
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = str(fault.retry_after_ms)
    return ApiError(fault.status, f"Injected HTTP {fault.status} from the speceval emulator.", headers=headers)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    # Headers and body go out in separate writes; with Nagle's algorithm on, a keep-alive client's delayed ACK
    # then stalls every response by ~40 ms (measured: 44 ms per GET with 200 jobs polled).
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        self._handle()

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle()

    def do_PUT(self) -> None:  # noqa: N802
        self._handle()

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle()

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        try:
            body = self._read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            response = self.server.dispatch(self.command, self.path, headers, body)
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client went away (killed process, timeout): nothing to answer.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        logger.debug("%s " + format, self.address_string(), *args)


def _build(faults: FaultConfig, state_dir: Path | None, responder: Responder | None) -> EmulatorContext:
    return EmulatorContext(Store(state_dir), faults, responder)


def _apps(ctx: EmulatorContext) -> list[ProviderApp]:
    return [OpenAIApp(ctx), AnthropicApp(ctx), GeminiApp(ctx), VertexApp(ctx)]


class Emulator:
    """The provider emulator on a loopback port, served from a background thread.

    Args:
        faults: misbehaviour to inject (default: a well-behaved fast server).
        state_dir: persist files and jobs here and load them on start (resume across restarts).
        port: port to bind; 0 picks a free one.
        host: address to bind.
        responder: answer generator `(model, prompt) -> text` (default: synthetic tagged sentences).
    """

    def __init__(
        self,
        faults: FaultConfig | None = None,
        state_dir: Path | str | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        responder: Responder | None = None,
    ) -> None:
        self._ctx = _build(faults or FaultConfig(), Path(state_dir) if state_dir else None, responder)
        self._apps = _apps(self._ctx)
        self._realtime = add_realtime_endpoints(self._ctx, self._apps)
        add_model_lists(self._apps)
        self._host, self._requested_port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Emulator:
        """Bind and start serving (idempotent)."""
        if self._server is None:
            self._server = _Server((self._host, self._requested_port), self._ctx, self._apps)
            self._ctx.base_url = f"http://{self._host}:{self.port}"
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="speceval-emulator"
            )
            self._thread.start()
            logger.info("emulator serving on %s", self.base_url)
        return self

    def close(self) -> None:
        """Stop serving, close every connection and join every thread."""
        server, self._server = self._server, None
        if server is None:
            return
        self._ctx.stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
        self._ctx.stopping.clear()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:P`."""
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for `openai.OpenAI(base_url=…)`."""
        return f"{self.base_url}/openai/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for `anthropic.Anthropic(base_url=…)`."""
        return f"{self.base_url}/anthropic"

    @property
    def gemini_base_url(self) -> str:
        """Base URL for `genai.Client(http_options=HttpOptions(base_url=…))`."""
        return f"{self.base_url}/gemini"

    @property
    def vertex_base_url(self) -> str:
        """Base URL for `genai.Client(vertexai=True, project=…, location=…, http_options=HttpOptions(base_url=…))`."""
        return f"{self.base_url}/vertex"

    @property
    def vertex_objects(self) -> GcsObjects:
        """The Cloud Storage objects Vertex jobs read their input from and write their predictions to."""
        return next(a for a in self._apps if isinstance(a, VertexApp)).objects

    @property
    def faults(self) -> FaultConfig:
        """The current faults; assign a new `FaultConfig` to replace them (thread-safe)."""
        return self._ctx.faults

    @faults.setter
    def faults(self, value: FaultConfig) -> None:
        self._ctx.set_faults(value)

    @property
    def realtime(self) -> RealtimeLog:
        """What the realtime chat endpoints saw: per-prompt counts, 429s, admission times."""
        return self._realtime.log

    @property
    def stats(self) -> EmulatorStats:
        """Counters since start: batches created per provider, requests per route, files uploaded."""
        return self._ctx.stats()

    def list_jobs(self, provider: str) -> list[JobInfo]:
        """Every job of `provider` (`openai`, `anthropic`, `gemini`/`google`), newest first."""
        name = canonical_provider(provider)
        app = next(a for a in self._apps if a.name == name)
        infos = []
        for job in self._ctx.store.list_jobs(name):
            state = app.state_name(job)
            infos.append(
                JobInfo(
                    id=f"batches/{job.id}" if name == "gemini" else job.id,
                    provider=name,
                    state=state,
                    request_count=len(job.requests),
                    metadata=dict(job.params.get("metadata") or {}),
                    display_name=job.params.get("display_name"),
                    created_at=job.created_at,
                    deleted=job.deleted,
                )
            )
        return infos

    def uploaded_files(self, provider: str) -> list[StoredFile]:
        """The files a client uploaded to `provider` (not those the emulator generated), oldest first."""
        name = canonical_provider(provider)
        return [f for f in reversed(self._ctx.store.list_files(name)) if not f.generated]

    def archive_job(self, provider: str, job_id: str) -> None:
        """Let one job's retention run out: its results are gone and (Anthropic) its `archived_at` is set."""
        name = canonical_provider(provider)
        job = self._ctx.store.get_job(name, job_id.removeprefix("batches/"))
        if job is None:
            raise KeyError(f"no {name} job {job_id!r}")
        with self._ctx.store.lock:
            job.archived_at = self._ctx.now()
            self._ctx.store.put_job(job)


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    faults: FaultConfig | None = None,
    state_dir: Path | str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve in the foreground until interrupted (Ctrl+C raises KeyboardInterrupt after a clean shutdown).

    `on_ready` gets the base URL once the socket is bound: with port 0 the port is known only then."""
    ctx = _build(faults or FaultConfig(), Path(state_dir) if state_dir else None, None)
    apps = _apps(ctx)
    add_realtime_endpoints(ctx, apps)
    add_model_lists(apps)
    server = _Server((host, port), ctx, apps)
    ctx.base_url = f"http://{host}:{server.server_address[1]}"
    logger.info("emulator serving on %s", ctx.base_url)
    if on_ready is not None:
        on_ready(ctx.base_url)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        ctx.stopping.set()
        server.close_connections()
        server.server_close()

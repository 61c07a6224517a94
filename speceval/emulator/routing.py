"""Requests, responses, route tables and the base class of one emulated provider.

Each provider is a `ProviderApp` mounted under a path prefix (`/openai`, `/anthropic`, `/gemini`) with its own
route table, auth rule and error shape. Handlers raise `ApiError`; the app renders it the way that provider does.
New endpoints (e.g. realtime chat) are added with `app.add_routes([...])`.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from speceval.emulator.context import EmulatorContext
from speceval.emulator.jobs import Job, phase


class ApiError(Exception):
    """An error answer; the provider app renders it in its own shape.

    Args:
        status: HTTP status.
        message: human-readable message, as the provider would phrase it.
        kind: provider error type (OpenAI/Anthropic `type`, Gemini `status`); None = the default for `status`.
        code: OpenAI `code`.
        param: OpenAI `param`.
        headers: extra response headers (e.g. `retry-after`).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code
        self.param = param
        self.headers = headers or {}


@dataclass
class Request:
    """One HTTP request, with the path relative to the provider's prefix."""

    method: str
    path: str
    full_path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    base_url: str = ""
    params: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter `name`."""
        values = self.query.get(name)
        return values[0] if values else default

    def header(self, name: str, default: str | None = None) -> str | None:
        """A request header (case-insensitive)."""
        return self.headers.get(name.lower(), default)

    def json(self) -> Any:
        """The body parsed as JSON (an empty body is `{}`); 400 when it is not JSON."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ApiError(400, f"The request body is not valid JSON: {exc}") from None


@dataclass
class Response:
    """One HTTP response."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response."""
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(status, body, {"content-type": "application/json", **(headers or {})})


def bytes_response(content: bytes, content_type: str, status: int = 200) -> Response:
    """A raw byte response (file downloads, JSONL results)."""
    return Response(status, content, {"content-type": content_type})


Handler = Callable[[Request], Response]

_PARAM = re.compile(r"\{(\w+)(?::([^}]+))?\}")


class Route:
    """A method and a path template such as `/v1/batches/{batch_id}` (params exclude `/` and `:`).

    A param may carry its own pattern: `{ver:v1|v1beta}`.
    """

    def __init__(self, method: str, template: str, handler: Handler, *, auth: bool = True) -> None:
        """Compile `template`; `auth=False` routes skip the provider's credential check."""
        self.method = method.upper()
        self.template = template
        self.handler = handler
        self.auth = auth
        pattern, last = "", 0
        for match in _PARAM.finditer(template):
            pattern += re.escape(template[last : match.start()])
            pattern += f"(?P<{match.group(1)}>{match.group(2) or '[^/:]+'})"
            last = match.end()
        pattern += re.escape(template[last:])
        self._regex = re.compile(f"^{pattern}$")

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path params when this route serves (method, path), else None."""
        if method.upper() != self.method:
            return None
        found = self._regex.match(path)
        return found.groupdict() if found else None


class ProviderApp(ABC):
    """One emulated provider: a name, a path prefix, a route table, an auth rule and an error shape."""

    name: str
    prefix: str
    #: The status and message the provider answers a call without a credential with.
    missing_credential: tuple[int, str]

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind the app to the shared emulator context and build its route table."""
        self.ctx = ctx
        self.routes: list[Route] = []
        self.add_routes(self.build_routes())

    def add_routes(self, routes: Iterable[Route]) -> None:
        """Extend the route table (first match wins, so add specific routes before generic ones)."""
        self.routes.extend(routes)

    @abstractmethod
    def build_routes(self) -> list[Route]:
        """The provider's own routes."""

    @abstractmethod
    def render_error(self, error: ApiError) -> Response:
        """`error` in the provider's error shape."""

    @abstractmethod
    def authenticated(self, request: Request) -> bool:
        """Whether the request carries a credential the provider would look at."""

    def auth_error(self, request: Request) -> ApiError:
        """The provider's error for a missing credential (`missing_credential`: its status and message)."""
        return ApiError(*self.missing_credential)

    def state_name(self, job: Job) -> str:
        """The provider's name for the job's current state (providers override this)."""
        return phase(job, self.ctx.now()).value

    def unknown_route(self, request: Request) -> ApiError:
        """The provider's error for a path it does not serve."""
        return ApiError(404, f"Invalid URL ({request.method} {request.path})")

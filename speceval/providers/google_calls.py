"""Calling Google's APIs through google-genai: SDK errors → our errors, raw reads past the SDK's parsing, and the
JSON lines of downloaded result files. Shared by the Gemini and Vertex adapters."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from speceval.errors import TransientProviderError
from speceval.providers.http_errors import http_error, transport_errors
from speceval.redaction import redact

_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def call_google(provider: str, operation: str, fn: Any) -> Any:
    """Run one google-genai call, turning its failures into our `ProviderError` / `TransientProviderError`."""
    from google.genai import errors

    lost: tuple[type[BaseException], ...] = transport_errors()
    try:
        return fn()
    except errors.APIError as exc:
        headers = error_headers(exc)
        message = f"{exc.status}: {exc.message}" if exc.status else str(exc.message or exc)
        raise http_error(provider, operation, exc.code or None, message, headers) from None
    except lost as exc:
        # Connection failures and timeouts surface as the HTTP library's own errors (the SDK does not wrap
        # them): the request may or may not have reached the provider.
        raise http_error(provider, operation, None, f"{type(exc).__name__}: {exc}") from None


def raw_get(client: Any, provider: str, operation: str, path: str) -> dict[str, Any]:
    """A resource as the service sent it (JSON), past the SDK's typed parsing, which drops or rejects fields.

    google-genai has no public untyped call; its API client (`_api_client.request`) is the one seam it offers, and it
    keeps the SDK's authentication, base URL and timeout. `path` is relative to the API version (`batches/…`) or,
    for Vertex, a full `projects/…` resource name.
    """
    response = call_google(provider, operation, lambda: client._api_client.request("get", path, {}, None))
    try:
        body = json.loads(response.body) if response.body else {}
    except json.JSONDecodeError:
        raise TransientProviderError(provider, operation, "the response is not JSON") from None
    return body if isinstance(body, dict) else {}


def status_text(error: Any) -> str | None:
    """`code: message` of a `google.rpc.Status` (a job's or operation's `error`), or None when there is none."""
    if not isinstance(error, Mapping) or not (error.get("message") or error.get("code")):
        return None
    return redact(f"{error.get('code')}: {error.get('message')}")


def json_line(provider: str, where: str, line: str) -> dict[str, Any]:
    """One line of a downloaded JSONL file as a JSON object.

    Raises TransientProviderError for a line that is not one: a download cut short must be fetched again, not read
    as 'fewer results'.
    """
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise TransientProviderError(
            provider, f"read {where}", f"result line is not valid JSON (truncated download?): {line[:80]!r}"
        )
    return data


def error_headers(exc: Any) -> dict[str, str]:
    """Response headers of an API error, plus Google's `RetryInfo.retryDelay` (body only) as `retry-after`."""
    headers: dict[str, str] = {}
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        headers.update({str(k): str(v) for k, v in response.headers.items()})
    details = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    for detail in details.get("details") or [] if isinstance(details, dict) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _RETRY_DELAY.match(str(detail.get("retryDelay", "")))
            if match and not any(k.lower() in ("retry-after", "retry-after-ms") for k in headers):
                headers["retry-after"] = match.group(1)
    return headers

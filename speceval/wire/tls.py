"""The TLS contexts the provider SDKs' clients verify with, built once per process instead of once (OpenAI,
Anthropic) or up to three times (google-genai) for every client.

Every SDK client builds its own verifying context, each loading a certificate bundle: 30-100 ms of CPU apiece, paid by
every adapter, realtime client and model listing (the inner test loop built about 400 of them, 20 s of its CPU). A
context is safe to share between clients and threads, so speceval hands each SDK one, built as the SDK builds it:
- OpenAI and Anthropic: their HTTP library's own `create_ssl_context()` (httpx2's, or httpx's for an SDK on httpx),
  which reads `SSL_CERT_FILE` and `SSL_CERT_DIR` itself, in a client with the SDK's own defaults
  (`DefaultHttpxClient`: its timeout, connection limits and redirects) that closes itself when dropped, as the
  SDK's own client does;
- google-genai: aiohttp's and websockets' context is always `SSL_CERT_FILE` (else certifi's bundle) with
  `SSL_CERT_DIR`; the httpx client's is the same when `SSL_CERT_FILE` is set, whichever HTTP backend the SDK chose;
  without it the SDK's httpx2 backend trusts the system's store instead, so that one is left to the SDK.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

C = TypeVar("C")

_HTTP_LIBRARIES = ("httpx2", "httpx")


@functools.cache
def _verifying(cafile: str, capath: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile, capath=capath)


def genai_tls_options() -> dict[str, Any]:
    """`HttpOptions` fields (`client_args`, `async_client_args`) that give a `genai.Client` the shared context(s)."""
    import certifi  # google-genai's own dependency (its default bundle)

    cert_file, cert_dir = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    shared = _verifying(cert_file or certifi.where(), cert_dir)
    if cert_file:
        return {"client_args": {"verify": shared}, "async_client_args": {"verify": shared, "ssl": shared}}
    return {"async_client_args": {"ssl": shared}}


@functools.cache
def _library_context(library: str, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """The library's default verifying context under these environment values (it reads them itself)."""
    context: ssl.SSLContext = importlib.import_module(library).create_ssl_context()
    return context


@functools.cache
def _closing(default_client: Any) -> type[Any]:
    """The SDK's `DefaultHttpxClient` closing its connections when dropped (the SDK's own client does)."""

    def __del__(self: Any) -> None:
        if not self.is_closed:
            with contextlib.suppress(Exception):
                self.close()

    return type(default_client.__name__, (default_client,), {"__del__": __del__})


def sdk_http_client(default_client: Any, timeout: float) -> Any:
    """`http_client=` for `openai.OpenAI` or `anthropic.Anthropic` (pass the SDK's `DefaultHttpxClient`): the
    client the SDK would build itself, verifying with the process's shared context for its HTTP library."""
    library = next(root for cls in default_client.__mro__ if (root := cls.__module__.split(".")[0]) in _HTTP_LIBRARIES)
    context = _library_context(library, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _closing(default_client)(timeout=timeout, verify=context)


def sdk_client(client: Callable[..., C], default_http_client: Any, *, timeout: float, **options: Any) -> C:
    """`client(timeout=…, **options)` (`openai.OpenAI`, `anthropic.Anthropic`) with `sdk_http_client`'s client."""
    return client(timeout=timeout, http_client=sdk_http_client(default_http_client, timeout), **options)

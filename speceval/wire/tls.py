"""The TLS context google-genai's clients verify with, built once per process instead of up to three times a client.

Every `genai.Client` builds its own verifying contexts (one for httpx, one for aiohttp when it is installed, one for
websockets), each loading a certificate bundle: 30-100 ms of CPU apiece, paid by every Gemini adapter, realtime
client and model listing (a third of the Gemini tests' CPU). A context is safe to share between clients and
threads, so speceval hands the SDK one, built as the SDK itself builds it:
- aiohttp's and websockets' context is always `SSL_CERT_FILE` (else certifi's bundle) with `SSL_CERT_DIR`;
- the httpx client's is the same when `SSL_CERT_FILE` is set, whichever HTTP backend the SDK chose; without it the
  SDK's httpx2 backend trusts the system's store instead, so that one is left to the SDK.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any


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

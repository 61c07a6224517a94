"""Turning a provider's HTTP failure into our error types, the same way for every SDK.

Which failures are worth retrying follows what the SDKs themselves retry (408, 409, 429, 5xx, timeouts and
lost connections); everything else (400, 401, 403, 404, 422) will fail again and is reported at once.
"""

from __future__ import annotations

import email.utils
import logging
import sys
import time
from collections.abc import Mapping

from speceval.errors import ProviderError, TransientProviderError
from speceval.redaction import redact

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status means 'try again later'."""
    return status in TRANSIENT_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms`, or `retry-after` in seconds or as a date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            logger.debug("ignoring a malformed retry-after-ms header: %r", lowered["retry-after-ms"])
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def http_error(
    provider: str,
    operation: str,
    status: int | None,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The error to raise for a failed call: transient (retry later) or final. `status` None = no response."""
    cls = TransientProviderError if status is None or is_transient_status(status) else ProviderError
    return cls(provider, operation, redact(message), status_code=status, retry_after=retry_after_seconds(headers))


def transport_errors() -> tuple[type[BaseException], ...]:
    """Exception types of the HTTP libraries the SDKs stream with (a connection lost mid-download).

    SDK calls wrap these in their own connection errors, but iterating a streamed body does not. Current SDKs
    use `httpx2`; older releases (and google-genai) use `httpx`. Only the libraries already imported count: every
    caller has imported its SDK, which imports the library it streams with, and one nobody imported cannot raise.
    Importing the other one anyway cost a generation run 0.1-0.2 s of CPU (openai's SDK never loads `httpx`).
    """
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        found.append(module.HTTPError)
        found.append(module.StreamError)
    return tuple(found)

"""Keep API keys out of every file, log line and exception message we produce.

Keys are learned from the environment variables the SDKs read, plus any key handed to a provider explicitly
(`register_secret`). `redact` replaces each with a fixed marker; `RedactingFilter` applies it to log records.
"""

from __future__ import annotations

import logging
import os
import threading

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "TOGETHER_API_KEY",
)
MARKER = "[REDACTED]"
# Short strings would redact ordinary words; real keys are far longer than this.
_MIN_SECRET_LENGTH = 8

_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a credential so that `redact` removes it wherever it appears."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def _secrets() -> list[str]:
    found = {os.environ.get(name, "") for name in SECRET_ENV_VARS}
    with _lock:
        found |= _registered
    # Longest first, so that a key containing another key is removed whole.
    return sorted((s for s in found if len(s) >= _MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str) -> str:
    """Return `text` with every known credential replaced by a marker."""
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, MARKER)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts credentials from the formatted message of every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        return True

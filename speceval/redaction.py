"""Keep API keys out of every file, log line, traceback and terminal line we produce.

One registry of secrets: the values of the variables the SDKs read (`SECRET_ENV_VARS`), of any variable named
later (`register_secret_env`, e.g. `--api-key-env`) and every credential handed over explicitly (`register_secret`:
keys from YAML or arguments, the OAuth tokens Google credentials put in `Authorization` headers, see
`speceval.providers.credentials`). `redact` replaces each with a fixed marker. Two nets apply it to output:

- `RedactingFilter`, on every log handler: the message, the formatted traceback (`exc_info`) and `stack_info`;
- `RedactingWriter`, around the streams the CLI console writes to: whatever is printed, logged or drawn.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import IO

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
_env_names: set[str] = set(SECRET_ENV_VARS)


def register_secret(value: str | None) -> None:
    """Remember a credential so that `redact` removes it wherever it appears."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def register_secret_env(name: str) -> None:
    """Treat the value of environment variable `name` as a secret (now and whenever it changes)."""
    with _lock:
        _env_names.add(name)


def _secrets() -> list[str]:
    with _lock:
        found = {os.environ.get(name, "") for name in _env_names} | _registered
    # Longest first, so that a key containing another key is removed whole.
    return sorted((s for s in found if len(s) >= _MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str) -> str:
    """Return `text` with every known credential replaced by a marker."""
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, MARKER)
    return text


class RedactingFilter(logging.Filter):
    """A handler filter that redacts credentials from a record's message, traceback and stack.

    The traceback is formatted here, redacted, and kept as `exc_text` with `exc_info` cleared: every standard
    formatter then prints the redacted text instead of formatting the exception (and its message) again.
    """

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        if record.exc_info:
            record.exc_text = self._formatter.formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class RedactingWriter:
    """A text stream that redacts what is written before passing it on (for the terminal)."""

    def __init__(self, target: IO[str]):
        self._target = target

    def write(self, text: str) -> int:
        """Write `text` with credentials replaced; returns the length of what was asked (as streams do)."""
        self._target.write(redact(text))
        return len(text)

    def flush(self) -> None:
        """Flush the underlying stream."""
        self._target.flush()

    def isatty(self) -> bool:
        """Whether the underlying stream is a terminal (rich decides colours and live display on this)."""
        isatty = getattr(self._target, "isatty", None)
        return bool(isatty()) if isatty is not None else False

    def fileno(self) -> int:
        """The underlying descriptor (raises like the stream does when there is none)."""
        return self._target.fileno()

    @property
    def encoding(self) -> str:
        """The underlying stream's encoding."""
        return getattr(self._target, "encoding", None) or "utf-8"

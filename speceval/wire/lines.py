"""The bytes of one request line: shared by every request file (batch jobs, exchange files)."""

from __future__ import annotations

import json
from typing import Any

# One encoder for every line: `json.dumps` with these options builds a new `JSONEncoder` per call (once per request).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode_line(value: dict[str, Any]) -> bytes:
    """One compact JSON line, UTF-8, newline-terminated: the exact bytes of a request file line.

    Compact separators matter: the byte limits of a job are checked against these lines, and Anthropic's
    inline request body is encoded the same way.
    """
    return _encode(value).encode("utf-8") + b"\n"

"""The providers' rate-limit headers, read into one shape (each provider's rate-limit documentation).

OpenAI (and Together, vLLM behind gateways) send `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` with the
reset as a Go duration (`12ms`, `1.5s`, `6m0s`); Anthropic sends `anthropic-ratelimit-{requests,tokens}-{limit,
remaining,reset}` with the reset as an RFC 3339 time. Gemini sends none. Missing or malformed values are None:
headers only ever tighten what the limiter does, so a value we cannot read is simply not used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class LimitHeaders:
    """What one response said about the account's limits. Resets are seconds from when it was received."""

    limit_requests: int | None = None
    remaining_requests: int | None = None
    reset_requests: float | None = None
    limit_tokens: int | None = None
    remaining_tokens: int | None = None
    reset_tokens: float | None = None

    @property
    def empty(self) -> bool:
        """True when the response carried no rate-limit header at all."""
        return self == LimitHeaders()


def go_duration_seconds(value: str) -> float | None:
    """`6m0s` → 360.0; None when `value` is not a Go duration."""
    text = value.strip()
    if not text:
        return None
    parts = _GO_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        try:
            return max(0.0, float(text))  # some gateways send plain seconds
        except ValueError:
            return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in parts)


def _rfc3339_seconds(value: str, now: datetime) -> float | None:
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - now).total_seconds())


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def parse_limit_headers(headers: Mapping[str, str] | None, now: datetime | None = None) -> LimitHeaders:
    """Read OpenAI-style or Anthropic-style rate-limit headers (case-insensitive)."""
    if not headers:
        return LimitHeaders()
    lowered = {k.lower(): v for k, v in headers.items()}
    if "x-ratelimit-limit-requests" in lowered or "x-ratelimit-limit-tokens" in lowered:
        return _limits(lowered, "x-ratelimit-{field}-{kind}", go_duration_seconds)
    if any(name.startswith("anthropic-ratelimit-") for name in lowered):
        current = now or datetime.now(UTC)
        return _limits(lowered, "anthropic-ratelimit-{kind}-{field}", lambda raw: _rfc3339_seconds(raw, current))
    return LimitHeaders()


def _limits(lowered: dict[str, str], name: str, reset: Callable[[str], float | None]) -> LimitHeaders:
    """The limits under one provider's header names (`name` formatted with `kind`, requests or tokens, and
    `field`, limit, remaining or reset); `reset` reads a reset's value as seconds from now."""
    values: dict[str, Any] = {}
    for kind in ("requests", "tokens"):
        values[f"limit_{kind}"] = _int(lowered.get(name.format(kind=kind, field="limit")))
        values[f"remaining_{kind}"] = _int(lowered.get(name.format(kind=kind, field="remaining")))
        raw = lowered.get(name.format(kind=kind, field="reset"))
        values[f"reset_{kind}"] = reset(raw) if raw is not None else None
    return LimitHeaders(**values)

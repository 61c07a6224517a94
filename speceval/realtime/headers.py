"""The providers' rate-limit headers, read into one shape (each provider's rate-limit documentation).

OpenAI (and Together, vLLM behind gateways) send `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` with the
reset as a Go duration (`12ms`, `1.5s`, `6m0s`); Anthropic sends `anthropic-ratelimit-{requests,tokens}-{limit,
remaining,reset}` with the reset as an RFC 3339 time. Gemini sends none. Missing or malformed values are None:
headers only ever tighten what the limiter does, so a value we cannot read is simply not used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

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

        def reset(name: str) -> float | None:
            raw = lowered.get(name)
            return go_duration_seconds(raw) if raw is not None else None

        return LimitHeaders(
            limit_requests=_int(lowered.get("x-ratelimit-limit-requests")),
            remaining_requests=_int(lowered.get("x-ratelimit-remaining-requests")),
            reset_requests=reset("x-ratelimit-reset-requests"),
            limit_tokens=_int(lowered.get("x-ratelimit-limit-tokens")),
            remaining_tokens=_int(lowered.get("x-ratelimit-remaining-tokens")),
            reset_tokens=reset("x-ratelimit-reset-tokens"),
        )
    if any(name.startswith("anthropic-ratelimit-") for name in lowered):
        current = now or datetime.now(UTC)

        def at(name: str) -> float | None:
            raw = lowered.get(name)
            return _rfc3339_seconds(raw, current) if raw is not None else None

        return LimitHeaders(
            limit_requests=_int(lowered.get("anthropic-ratelimit-requests-limit")),
            remaining_requests=_int(lowered.get("anthropic-ratelimit-requests-remaining")),
            reset_requests=at("anthropic-ratelimit-requests-reset"),
            limit_tokens=_int(lowered.get("anthropic-ratelimit-tokens-limit")),
            remaining_tokens=_int(lowered.get("anthropic-ratelimit-tokens-remaining")),
            reset_tokens=at("anthropic-ratelimit-tokens-reset"),
        )
    return LimitHeaders()

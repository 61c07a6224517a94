"""Rate limits of the emulated realtime endpoints: a sliding window of requests and tokens per provider.

A request is admitted when, counting it, the last `realtime_window_seconds` hold at most `realtime_rpm` requests
and `realtime_tpm` tokens (input + output). Rejected requests do not count (as with the real providers, a 429
costs nothing). The decision carries what the providers' rate-limit headers report: limits, what remains, when
the window frees up, and for a rejection how long to wait.

`RealtimeLog` records what arrived, so tests and benchmarks can count sends per prompt and measure throughput.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Admission:
    """The rate-limit decision for one request, with what the rate-limit headers say.

    Attributes:
        admitted: False means answer 429.
        retry_after: seconds until the request would be admitted (0 when admitted).
        limit_requests / limit_tokens: the configured limits (None = unlimited).
        remaining_requests / remaining_tokens: what is left in the window after this request.
        reset_requests / reset_tokens: seconds until the oldest counted request or token leaves the window.
    """

    admitted: bool
    retry_after: float
    limit_requests: int | None
    remaining_requests: int | None
    reset_requests: float
    limit_tokens: int | None
    remaining_tokens: int | None
    reset_tokens: float


class SlidingWindow:
    """Requests and tokens admitted in the last `window` seconds (thread-safe)."""

    def __init__(self) -> None:
        """Start empty."""
        self._lock = threading.Lock()
        self._events: deque[tuple[float, int]] = deque()
        self._tokens = 0

    def admit(self, now: float, tokens: int, rpm: int | None, tpm: int | None, window: float) -> Admission:
        """Decide on one request of `tokens` tokens arriving at `now`; count it if admitted."""
        with self._lock:
            while self._events and self._events[0][0] <= now - window:
                self._tokens -= self._events.popleft()[1]
            wait = 0.0
            if rpm is not None and len(self._events) >= rpm:
                # The request fits once enough of the oldest requests have left the window.
                wait = self._events[len(self._events) - rpm][0] + window - now
            if tpm is not None and self._tokens + tokens > tpm and self._events:
                excess = self._tokens + tokens - tpm
                freed = 0
                for at, counted in self._events:
                    freed += counted
                    if freed >= excess:
                        wait = max(wait, at + window - now)
                        break
                else:
                    wait = max(wait, self._events[-1][0] + window - now)
            admitted = wait <= 0
            if admitted:
                self._events.append((now, tokens))
                self._tokens += tokens
            reset = (self._events[0][0] + window - now) if self._events else 0.0
            return Admission(
                admitted=admitted,
                retry_after=max(0.0, wait),
                limit_requests=rpm,
                remaining_requests=None if rpm is None else max(0, rpm - len(self._events)),
                reset_requests=max(0.0, reset),
                limit_tokens=tpm,
                remaining_tokens=None if tpm is None else max(0, tpm - self._tokens),
                reset_tokens=max(0.0, reset),
            )


class RealtimeStats(BaseModel):
    """Counters of the realtime endpoints since the emulator started."""

    arrived: int = Field(description="requests that reached a realtime endpoint (429s included)")
    admitted: int = Field(description="requests admitted by the rate limit (answered or refused with 400)")
    rate_limited: int = Field(description="requests answered 429 by the rate limit")
    first_admitted_at: float | None = Field(description="wall-clock time of the first admitted request")
    last_admitted_at: float | None = Field(description="wall-clock time of the last admitted request")


class RealtimeLog:
    """What the realtime endpoints saw: per-prompt admitted counts, 429 counts and admission times."""

    def __init__(self) -> None:
        """Start with empty counters."""
        self._lock = threading.Lock()
        self._admitted_prompts: Counter[str] = Counter()
        self._arrived = 0
        self._rate_limited = 0
        self._admitted_times: list[float] = []
        self.windows: dict[str, SlidingWindow] = {}

    def window(self, provider: str) -> SlidingWindow:
        """The sliding window of one provider (each provider is its own account)."""
        with self._lock:
            return self.windows.setdefault(provider, SlidingWindow())

    def record(self, prompt: str, admitted: bool, at: float) -> None:
        """Count one arrival."""
        with self._lock:
            self._arrived += 1
            if admitted:
                self._admitted_prompts[prompt] += 1
                self._admitted_times.append(at)
            else:
                self._rate_limited += 1

    def prompt_counts(self) -> dict[str, int]:
        """Admitted requests per prompt text (how many times each prompt was really served)."""
        with self._lock:
            return dict(self._admitted_prompts)

    def admitted_times(self) -> list[float]:
        """Wall-clock times of every admitted request, in arrival order."""
        with self._lock:
            return list(self._admitted_times)

    def stats(self) -> RealtimeStats:
        """A snapshot of the counters."""
        with self._lock:
            times = self._admitted_times
            return RealtimeStats(
                arrived=self._arrived,
                admitted=len(times),
                rate_limited=self._rate_limited,
                first_admitted_at=times[0] if times else None,
                last_admitted_at=times[-1] if times else None,
            )

    def reset(self) -> None:
        """Forget every counter and window (between benchmark phases)."""
        with self._lock:
            self._admitted_prompts.clear()
            self._arrived = self._rate_limited = 0
            self._admitted_times.clear()
            self.windows.clear()

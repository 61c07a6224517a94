"""Client-side rate limiting shared by every worker of a realtime run.

Four things decide when the next request may start; `RateLimiter.acquire` waits for all of them:

1. **Requests per period** (`--rpm`), paced evenly: one request every `period / rpm` seconds (a GCRA with no
   burst). Even pacing is what keeps a run under *any* server-side scheme — a sliding or fixed one-minute window,
   a token bucket, or OpenAI's enforcement over sub-minute slices — whereas a bucket that starts full lets a burst
   of `rpm` through at once and then up to 2 × rpm in the server's first minute.
2. **Tokens per period** (`--tpm`), paced the same way by each request's estimated tokens (prompt estimate plus
   the expected output); when the response reports its usage the difference is credited back or charged.
3. **Concurrency** (`--max-concurrency`): requests in flight at once.
4. **Shared cool-down**: a 429 pauses every worker until its `retry-after` (or a jittered exponential back-off
   when the provider gives none), and lowers the pace multiplicatively; successes restore it slowly (AIMD).
   Rate-limit headers tighten the pace: a reported limit below ours is adopted (with a margin), and zero
   remaining requests or tokens holds new requests until the reported reset.

`period_seconds` is 60 for real providers; tests and benchmarks shorten it together with the emulator's window.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from speceval.realtime.headers import LimitHeaders

logger = logging.getLogger(__name__)

# After a 429 the pace is multiplied by this; each success adds RECOVERY_STEP back (up to the configured pace).
DECREASE_FACTOR = 0.75
RECOVERY_STEP = 0.01
MIN_FACTOR = 0.05
# A limit learned from headers is used with this margin (so clock skew and jitter do not hit the limit exactly).
HEADER_LIMIT_MARGIN = 0.98
# Cool-down when a 429 carries no retry-after: BASE · 2^(n-1) for the n-th consecutive one, capped, jittered.
COOLDOWN_BASE_SECONDS = 1.0
COOLDOWN_CAP_SECONDS = 60.0
# Longest a waiting worker sleeps before looking again (a stop request is noticed within this).
_MAX_WAIT_SLICE = 0.25


@dataclass(frozen=True)
class RateLimits:
    """What the user allows a realtime run to use.

    Attributes:
        rpm: requests per period (None: no request pacing unless the provider's headers state a limit).
        tpm: tokens (input + output) per period (None: no token pacing unless headers state one).
        max_concurrency: requests in flight at once.
        period_seconds: the period of `rpm` and `tpm` (60: per minute, as providers state their limits).
    """

    rpm: float | None = None
    tpm: float | None = None
    max_concurrency: int = 32
    period_seconds: float = 60.0


@dataclass
class Permit:
    """One admitted request: what it was charged, so `release` can reconcile."""

    estimated_tokens: int


@dataclass
class LimiterStats:
    """Counters of one limiter."""

    admitted: int = 0
    rate_limited: int = 0
    cooldowns: int = 0


class RateLimiter:
    """Thread-safe admission control for one provider account (see the module docstring)."""

    def __init__(
        self,
        limits: RateLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        """Start with nothing in flight and the full configured pace."""
        self.limits = limits
        self._clock = clock
        self._rng = rng or random.Random()
        self._cond = threading.Condition()
        self._request_tat = 0.0  # theoretical arrival time of the next request (GCRA)
        self._token_tat = 0.0
        self._hold_until = 0.0  # shared cool-down and header-reported exhaustion
        self._in_flight = 0
        self._factor = 1.0
        self._consecutive_429 = 0
        self._header_rpm: float | None = None
        self._header_tpm: float | None = None
        self.stats = LimiterStats()

    # -- pace ---------------------------------------------------------------------------------------------

    def _rate(self, configured: float | None, learned: float | None) -> float | None:
        candidates = [r for r in (configured, learned) if r is not None]
        return min(candidates) * self._factor if candidates else None

    @property
    def requests_per_period(self) -> float | None:
        """The request pace in force now (after 429 slow-downs and header limits)."""
        with self._cond:
            return self._rate(self.limits.rpm, self._header_rpm)

    def _wait_for(self, now: float, tokens: int) -> float:
        if self._in_flight >= self.limits.max_concurrency:
            return _MAX_WAIT_SLICE  # woken by `release`
        return max(self._hold_until - now, self._request_tat - now, self._token_tat - now, 0.0)

    # -- workers ------------------------------------------------------------------------------------------

    def acquire(self, estimated_tokens: int, stop: threading.Event | None = None) -> Permit | None:
        """Wait until a request of about `estimated_tokens` may start; None if `stop` was set meanwhile."""
        with self._cond:
            while True:
                if stop is not None and stop.is_set():
                    return None
                now = self._clock()
                wait = self._wait_for(now, estimated_tokens)
                if wait <= 0:
                    break
                self._cond.wait(min(wait, _MAX_WAIT_SLICE))
            period = self.limits.period_seconds
            rpm = self._rate(self.limits.rpm, self._header_rpm)
            if rpm:
                self._request_tat = max(self._request_tat, now) + period / rpm
            tpm = self._rate(self.limits.tpm, self._header_tpm)
            if tpm:
                self._token_tat = max(self._token_tat, now) + estimated_tokens * period / tpm
            self._in_flight += 1
            self.stats.admitted += 1
            return Permit(estimated_tokens)

    def release(self, permit: Permit, used_tokens: int | None = None, headers: LimitHeaders | None = None) -> None:
        """A request ended: free its slot, reconcile its tokens with what it used, and read the headers."""
        with self._cond:
            self._in_flight -= 1
            tpm = self._rate(self.limits.tpm, self._header_tpm)
            if tpm and used_tokens is not None:
                # Credit (or charge) the difference; the next acquire's max(…, now) drops unused credit, so this
                # never allows a burst.
                self._token_tat += (used_tokens - permit.estimated_tokens) * self.limits.period_seconds / tpm
            if headers is not None and not headers.empty:
                self._observe(headers, permit.estimated_tokens)
            self._cond.notify_all()

    def _observe(self, headers: LimitHeaders, next_tokens: int) -> None:
        now = self._clock()
        if headers.limit_requests:
            learned = headers.limit_requests * HEADER_LIMIT_MARGIN
            if self._header_rpm is None and (self.limits.rpm is None or learned < self.limits.rpm):
                logger.info(
                    "the provider reports a limit of %d requests per period; pacing at %.0f",
                    headers.limit_requests,
                    learned,
                )
            self._header_rpm = learned
        if headers.limit_tokens:
            self._header_tpm = headers.limit_tokens * HEADER_LIMIT_MARGIN
        if headers.remaining_requests == 0 and headers.reset_requests:
            self._hold_until = max(self._hold_until, now + headers.reset_requests)
        if headers.remaining_tokens is not None and headers.remaining_tokens < next_tokens and headers.reset_tokens:
            self._hold_until = max(self._hold_until, now + headers.reset_tokens)

    def succeeded(self) -> None:
        """A request was answered: the pace recovers a little towards the configured one."""
        with self._cond:
            self._consecutive_429 = 0
            self._factor = min(1.0, self._factor + RECOVERY_STEP)

    def rate_limited(self, retry_after: float | None) -> float:
        """A 429 arrived: pause every worker and slow the pace. Returns the pause in seconds."""
        with self._cond:
            now = self._clock()
            self.stats.rate_limited += 1
            self._consecutive_429 += 1
            if retry_after is None:
                base = min(COOLDOWN_CAP_SECONDS, COOLDOWN_BASE_SECONDS * 2 ** (self._consecutive_429 - 1))
                retry_after = base * (0.5 + self._rng.random() / 2)
            if now >= self._hold_until:
                # One slow-down per episode: the other requests already in flight will 429 as well.
                self._factor = max(MIN_FACTOR, self._factor * DECREASE_FACTOR)
                self.stats.cooldowns += 1
                logger.info(
                    "rate limited: every worker pauses %.2fs; pace now %.0f%% of the limit",
                    retry_after,
                    self._factor * 100,
                )
            self._hold_until = max(self._hold_until, now + retry_after)
            # Resume paced from the end of the pause, never with a burst of the slots missed meanwhile.
            self._request_tat = max(self._request_tat, self._hold_until)
            self._token_tat = max(self._token_tat, self._hold_until)
            self._cond.notify_all()
            return retry_after

    def wake(self) -> None:
        """Wake every waiting worker (used when the run is stopping)."""
        with self._cond:
            self._cond.notify_all()

"""Unit tests of the realtime building blocks: header parsing, the limiter's arithmetic, the journal."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from speceval.batch.journal import Journal, JournalEntry
from speceval.batch.records import Outcome, ResultRecord
from speceval.realtime.headers import LimitHeaders, go_duration_seconds, parse_limit_headers
from speceval.realtime.limiter import RateLimiter, RateLimits


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_go_durations_and_plain_seconds():
    assert go_duration_seconds("12ms") == 0.012
    assert go_duration_seconds("1.5s") == 1.5
    assert go_duration_seconds("6m0s") == 360.0
    assert go_duration_seconds("1h2m3s") == 3723.0
    assert go_duration_seconds("2.5") == 2.5
    assert go_duration_seconds("soon") is None


def test_openai_and_anthropic_headers_read_into_one_shape():
    openai = parse_limit_headers(
        {
            "X-RateLimit-Limit-Requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
        }
    )
    assert openai == LimitHeaders(500, 0, 0.12, 30000, None, None)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    reset = (now + timedelta(seconds=3)).isoformat().replace("+00:00", "Z")
    anthropic = parse_limit_headers(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "7",
            "anthropic-ratelimit-requests-reset": reset,
        },
        now=now,
    )
    assert (anthropic.limit_requests, anthropic.remaining_requests, anthropic.reset_requests) == (50, 7, 3.0)
    assert parse_limit_headers({"content-type": "application/json"}).empty


def test_requests_are_paced_evenly_never_in_a_burst():
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(rpm=60, max_concurrency=100, period_seconds=60), clock=clock)
    assert limiter.acquire(1) is not None
    stop = threading.Event()
    stop.set()
    assert limiter.acquire(1, stop) is None  # the next slot is a second away: it would wait
    clock.now += 1.0
    assert limiter.acquire(1, stop=threading.Event()) is not None


def test_tokens_are_reconciled_with_usage():
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(tpm=600, max_concurrency=100, period_seconds=60), clock=clock)
    permit = limiter.acquire(300)  # half the period's tokens: the next may start 30 s later
    assert permit is not None
    limiter.release(permit, used_tokens=30)  # it used a tenth of that: 27 s are credited back
    clock.now += 3.0
    assert limiter.acquire(10, stop=threading.Event()) is not None


def test_a_429_pauses_everyone_and_slows_the_pace():
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(rpm=600, max_concurrency=100, period_seconds=60), clock=clock)
    limiter.rate_limited(retry_after=5.0)
    assert limiter.requests_per_period is not None and limiter.requests_per_period < 600
    stopped = threading.Event()
    stopped.set()
    clock.now += 4.9
    assert limiter.acquire(1, stopped) is None
    clock.now += 0.2
    assert limiter.acquire(1, threading.Event()) is not None
    for _ in range(100):
        limiter.succeeded()
    assert limiter.requests_per_period == 600


def test_header_limit_below_ours_is_adopted_and_zero_remaining_holds():
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(rpm=1000, max_concurrency=100, period_seconds=60), clock=clock)
    permit = limiter.acquire(1)
    assert permit is not None
    limiter.release(permit, headers=LimitHeaders(limit_requests=100, remaining_requests=0, reset_requests=2.0))
    assert limiter.requests_per_period == 98
    stopped = threading.Event()
    stopped.set()
    clock.now += 1.9
    assert limiter.acquire(1, stopped) is None
    clock.now += 0.2
    assert limiter.acquire(1, threading.Event()) is not None


def record(index: int) -> ResultRecord:
    return ResultRecord(
        original_index=index, input_text=f"p{index}", output_text="a", batch_id="rt", outcome=Outcome.SUCCEEDED
    )


def test_journal_skips_and_cuts_a_torn_last_line(tmp_path):
    journal = Journal(tmp_path)
    journal.open()
    journal.append(JournalEntry(statement_id="s", record=record(0)))
    journal.append(JournalEntry(statement_id="s", record=record(1)))
    journal.close()
    with journal.path.open("ab") as handle:
        handle.write(b'{"schema_version":1,"statement_id":"s","rec')  # killed mid-write
    assert [e.record.original_index for e in journal.read()] == [0, 1]
    journal.open()
    journal.append(JournalEntry(statement_id="s", record=record(2)))
    journal.close()
    assert [e.record.original_index for e in journal.read()] == [0, 1, 2]
    assert journal.path.read_bytes().count(b"\n") == 3

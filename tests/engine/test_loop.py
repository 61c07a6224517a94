"""`EngineLoop` ticks each engine at its own pace: an engine that asks to be looked at every 0.1 s (as realtime
and Ray engines do) must not make a batch engine poll its provider ten times a second."""

from __future__ import annotations

import gc
import signal
import weakref
from pathlib import Path

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.loop import EngineLoop
from speceval.batch.records import BatchRecord, RemoteJob
from speceval.batch.store import RunStore
from tests.engine.fake_provider import FakeBatchedModel, FakeProvider
from tests.engine.test_engine import make_items


class TimedModel(FakeBatchedModel):
    """The fake provider's model, noting the loop's (virtual) time of every poll."""

    def __init__(self, remote: FakeProvider, now: list[float]):
        super().__init__(remote)
        self.now = now
        self.polled_at: list[float] = []

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        self.polled_at.append(sum(self.now))
        return super().check_batch_progress(record)


def test_a_slow_pollers_jobs_are_polled_at_its_interval_beside_a_fast_engine(tmp_path: Path) -> None:
    slept: list[float] = []  # the loop's sleeps: their sum is the virtual time
    slow = TimedModel(FakeProvider(polls_to_complete=3), slept)
    fast = TimedModel(FakeProvider(polls_to_complete=30), slept)
    loop = EngineLoop(sleep=slept.append)
    for name, model, interval in (("slow", slow, 2.0), ("fast", fast, 0.1)):
        engine = BatchEngine(model, RunStore(tmp_path / name), EngineOptions(poll_interval=interval))
        loop.add(engine, make_items({"s": [f"{name} q{i}" for i in range(2)]}))
    summaries = loop.run()
    assert all(summary.finished for summary in summaries)
    assert len(fast.polled_at) >= 30 and len(slow.polled_at) >= 3
    gaps = [later - earlier for earlier, later in zip(slow.polled_at, slow.polled_at[1:], strict=False)]
    assert min(gaps) >= 2.0 - 1e-6, slow.polled_at  # not every 0.1 s, although the loop wakes that often
    fast_gaps = [later - earlier for earlier, later in zip(fast.polled_at, fast.polled_at[1:], strict=False)]
    assert max(fast_gaps) <= 0.1 + 1e-6  # and the fast engine is not held to the slow one's pace


def test_the_loop_lets_go_of_each_engine_once_it_stops(tmp_path: Path) -> None:
    """An experiment's loop outlives most of its engines: a stopped one (its ledger, its last statement's prompts)
    must not stay in memory until the last engine stops."""
    stopped: list[bool] = []  # per stop: whether every engine stopped before it is already freed
    refs: list[weakref.ref[BatchEngine]] = []

    def finished(index: int, summary: object) -> None:
        gc.collect()
        stopped.append(all(ref() is None for ref in refs[:index]))

    loop = EngineLoop(sleep=lambda seconds: None, on_finished=finished)
    for name, polls in (("quick", 1), ("slow", 6)):
        engine = BatchEngine(
            FakeBatchedModel(FakeProvider(polls_to_complete=polls)),
            RunStore(tmp_path / name),
            EngineOptions(poll_interval=0.1),
        )
        loop.add(engine, make_items({"s": [f"{name} q{i}" for i in range(2)]}))
        refs.append(weakref.ref(engine))
        del engine
    summaries = loop.run()
    gc.collect()
    assert all(summary.finished for summary in summaries) and stopped == [True, True]
    assert [ref() for ref in refs] == [None, None]


class _SwallowedInterrupt:
    """An object whose finalizer is running when Ctrl+C is handled: Python prints the KeyboardInterrupt as
    "Exception ignored" and goes on, as if the key had never been pressed."""

    def __del__(self) -> None:
        import signal

        signal.raise_signal(signal.SIGINT)


def test_a_ctrl_c_lost_in_a_finalizer_still_stops_the_loop_at_its_next_round(tmp_path: Path) -> None:
    import pytest

    from speceval.interrupts import interrupts_recorded

    rounds: list[float] = []

    def sleep(seconds: float) -> None:
        rounds.append(seconds)
        if len(rounds) == 1:
            _SwallowedInterrupt()  # made and dropped at once: its finalizer handles the signal and loses it

    loop = EngineLoop(sleep=sleep)
    engine = BatchEngine(
        FakeBatchedModel(FakeProvider(polls_to_complete=50)),
        RunStore(tmp_path / "run"),
        EngineOptions(poll_interval=0.1),
    )
    loop.add(engine, make_items({"s": ["q0", "q1"]}))
    # As a command started at a terminal: a suite started in the background by a non-interactive shell inherits
    # SIGINT ignored, and then speceval leaves it ignored on purpose (`interrupts_recorded`).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with interrupts_recorded(), pytest.raises(KeyboardInterrupt):
            loop.run()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(rounds) == 1  # stopped at the round after the lost interrupt, not after 50 polls

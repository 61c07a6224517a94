"""`EngineLoop`: one polling loop over many engines, which may grow while it runs.

`run_engines` drives a fixed set of engines (one per candidate, one per judge target). A pipelined experiment
needs the same loop with engines joining while it runs: a candidate's judge run starts the moment its generation
run is final, while the other candidates are still generating. Both are this one loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from speceval.batch.progress import EngineSummary
from speceval.interrupts import raise_if_requested

if TYPE_CHECKING:
    from speceval.batch.options import EngineOptions
    from speceval.batch.store import RunStore

FinishedCallback = Callable[[int, EngineSummary], None]
_DUE = 1e-9  # seconds: a wait this close to over is over (sums of float waits do not cancel exactly)


class Engine(Protocol):
    """What `run_engines` drives: the batch engine, or the realtime engine, which has the same surface."""

    options: EngineOptions
    store: RunStore
    next_wait: float

    # The item type differs (the batch engine also takes an ItemSource); each run pairs an engine with its own.
    def start(self, items: Any) -> None: ...

    def tick(self) -> EngineSummary | None: ...


class EngineLoop:
    """Engines ticked round by round; between rounds the loop sleeps for the shortest wait any of them asked for.

    Each engine is ticked only once its own wait is over: a realtime or Ray engine looks at its worker threads
    every 0.1 s, and a batch engine ticked that often would poll its provider's jobs ten times a second instead of
    once per poll interval. (The waits count the time slept, not the time spent ticking.)

    Args:
        sleep: how to wait between rounds.
        on_finished: called with (index, summary) as each engine stops; it may add (and tick) more engines.
    """

    def __init__(self, *, sleep: Callable[[float], None] = time.sleep, on_finished: FinishedCallback | None = None):
        self._sleep = sleep
        self._on_finished = on_finished
        # A stopped engine's slot is emptied: an experiment's loop outlives most of its engines, and each holds a
        # ledger and its last statement's prompts (memory follows the engines running, not the engines run).
        self._engines: list[Engine | None] = []
        self._summaries: dict[int, EngineSummary] = {}
        self._due: dict[int, float] = {}  # index → seconds left of the wait it asked for at its last tick

    def add(self, engine: Engine, items: Any) -> int:
        """Load `engine`'s state (counting its recorded jobs against a shared budget) and return its index.

        It is first ticked in the next round, unless the caller ticks it now (`tick`).
        """
        if engine.options.budget is not None:
            engine.options.budget.add_committed(engine.store.load_records())
        engine.start(items)
        self._engines.append(engine)
        return len(self._engines) - 1

    def tick(self, index: int) -> None:
        """Tick one engine now: a caller preparing many runs one after another (each importing an SDK, reading its
        inputs) gets each one's jobs submitted before preparing the next, not after the last."""
        engine = self._engines[index]
        assert engine is not None, "a stopped engine is never ticked again"
        summary = engine.tick()
        if summary is None:
            self._due[index] = engine.next_wait
            return
        self._due.pop(index, None)
        self._engines[index] = None
        self._summaries[index] = summary
        if self._on_finished is not None:
            self._on_finished(index, summary)

    @contextmanager
    def enclosing(self) -> Iterator[None]:
        """While a caller blocks inside this loop's work (an experiment's conversation run drives its rounds itself,
        each with an engine loop of its own), this loop's engines are still polled: every wait of a loop run in
        between also advances this one (`advance`). Without it, a job of this loop that holds a shared budget's
        reservation is never collected, and the blocked run waits for that reservation forever."""
        _enclosing.stack = [*_stack(), self]
        try:
            yield
        finally:
            _enclosing.stack = _stack()[:-1]

    def advance(self, seconds: float) -> None:
        """`seconds` passed outside `run` (a nested loop slept them): tick every engine whose wait is now over."""
        self._due = {index: left - seconds for index, left in self._due.items()}
        for index in range(len(self._engines)):
            if self._engines[index] is not None and self._due.get(index, 0.0) <= _DUE:
                self.tick(index)

    def run(self) -> list[EngineSummary]:
        """Tick until every engine (including those added meanwhile) has stopped; their summaries, by index."""
        while len(self._summaries) < len(self._engines):
            raise_if_requested()  # a Ctrl+C lost in a finalizer stops the run here (`speceval.interrupts`)
            # The engines there are when the round starts; one added during the round was ticked by whoever
            # added it, or is due in the next round (an engine never ticked is due at once).
            for index in range(len(self._engines)):
                if index not in self._summaries and self._due.get(index, 0.0) <= _DUE:
                    self.tick(index)
            running = [index for index in range(len(self._engines)) if index not in self._summaries]
            wait = min((self._due.get(index, 0.0) for index in running), default=0.0)
            if wait > _DUE:
                self._sleep(wait)
                self._due = {index: left - wait for index, left in self._due.items()}
                if self not in _stack():
                    advance_enclosing(wait)
        return [self._summaries[index] for index in range(len(self._engines))]


_enclosing = threading.local()  # per thread: a realtime engine's workers never wait on an experiment's loop


def _stack() -> list[EngineLoop]:
    stack: list[EngineLoop] = getattr(_enclosing, "stack", [])
    return stack


def advance_enclosing(seconds: float) -> None:
    """A loop blocked inside another loop's work waited `seconds`: let the enclosing loops poll what is due."""
    for loop in reversed(_stack()):
        loop.advance(seconds)


def run_engines(
    runs: Sequence[tuple[Engine, Any]],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> list[EngineSummary]:
    """Drive several engines (e.g. one per candidate model) in one polling loop; returns their summaries.

    Each round every unfinished engine submits and polls once; then the loop sleeps for the shortest wait any
    of them asked for. A budget shared through their options is reserved across all of them. (`EngineLoop` is
    this loop; pipelined experiments add engines to it while it runs.)
    """
    loop = EngineLoop(sleep=sleep)
    for engine, items in runs:
        loop.add(engine, items)
    return loop.run()

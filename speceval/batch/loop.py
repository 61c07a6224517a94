"""`EngineLoop`: one polling loop over many engines, which may grow while it runs.

`run_engines` drives a fixed set of engines (one per candidate, one per judge target). A pipelined experiment
needs the same loop with engines joining while it runs: a candidate's judge run starts the moment its generation
run is final, while the other candidates are still generating. Both are this one loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
            self._stop_deadlocked_holds(running)
            wait = min((self._due.get(index, 0.0) for index in running), default=0.0)
            if wait > _DUE:
                self._sleep(wait)
                self._due = {index: left - wait for index, left in self._due.items()}
        return [self._summaries[index] for index in range(len(self._engines))]

    def _stop_deadlocked_holds(self, running: list[int]) -> None:
        """Every running engine held by the budget with nothing of its own in flight: no tick of this loop can
        settle a reservation, so the holds would last forever (issue 42: a conversation's rounds waited on canary
        jobs of the experiment's loop, which nothing polled meanwhile). They become budget stops, due at once."""
        engines = [self._engines[index] for index in running]
        if not engines or not all(getattr(engine, "held_idle", False) for engine in engines):
            return
        for index, engine in zip(running, engines, strict=True):
            engine.stop_holding()  # type: ignore[union-attr]
            self._due[index] = 0.0


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

"""`EngineLoop`: one polling loop over many engines, which may grow while it runs.

`run_engines` drives a fixed set of engines (one per candidate, one per judge target). A pipelined experiment
needs the same loop with engines joining while it runs: a candidate's judge run starts the moment its generation
run is final, while the other candidates are still generating. Both are this one loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from speceval.batch.progress import EngineSummary

if TYPE_CHECKING:
    from speceval.batch.engine import Engine

FinishedCallback = Callable[[int, EngineSummary], None]


class EngineLoop:
    """Engines ticked round by round; between rounds the loop sleeps for the shortest wait any of them asked for.

    Engines added while a round is under way (by `on_finished`, say) are ticked in that same round, so a job
    that became possible is submitted at once rather than one polling interval later.
    """

    def __init__(self, *, sleep: Callable[[float], None] = time.sleep):
        self._sleep = sleep
        self._engines: list[Engine] = []
        self._summaries: dict[int, EngineSummary] = {}

    def add(self, engine: Engine, items: Any) -> int:
        """Load `engine`'s state (counting its recorded jobs against a shared budget) and return its index."""
        if engine.options.budget is not None:
            engine.options.budget.add_committed(engine.store.load_records())
        engine.start(items)
        self._engines.append(engine)
        return len(self._engines) - 1

    def run(self, on_finished: FinishedCallback | None = None) -> list[EngineSummary]:
        """Tick until every engine (including those added meanwhile) has stopped; their summaries, by index.

        `on_finished(index, summary)` is called as each engine stops, and may `add` more engines.
        """
        while len(self._summaries) < len(self._engines):
            waits = []
            index = 0
            while index < len(self._engines):  # not a for loop: the list may grow during the round
                engine = self._engines[index]
                if index not in self._summaries:
                    summary = engine.tick()
                    if summary is None:
                        waits.append(engine.next_wait)
                    else:
                        self._summaries[index] = summary
                        if on_finished is not None:
                            on_finished(index, summary)
                index += 1
            if waits and min(waits) > 0:
                self._sleep(min(waits))
        return [self._summaries[index] for index in range(len(self._engines))]

"""A scheduler of stage tasks with dependencies, over one `EngineLoop`.

A task is one unit of an experiment's work (a candidate's generation run, its compliance judging, a pair's
ranking, the report). It starts the moment every task it needs has finished: its engines join the running loop
and submit in the same polling round. So a fast candidate's answers are being judged while a slow candidate is
still generating, and the experiment takes about its critical path rather than the sum of its stages.

A task that stops early (timeout, budget) leaves its dependents unstarted (`blocked`); every engine's state is on
disk, so running the experiment again resumes each task where it stopped, and starts what it blocked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from speceval.batch.engine import Engine
from speceval.batch.loop import EngineLoop
from speceval.batch.progress import EngineSummary
from speceval.errors import ConfigError

logger = logging.getLogger(__name__)

EngineRuns = list[tuple[Engine, Any]]


class TaskState(StrEnum):
    """Where a task is."""

    WAITING = "waiting"
    """Some task it needs has not finished yet."""
    RUNNING = "running"
    """Its engines are in the loop (jobs submitted or being polled)."""
    FINISHED = "finished"
    """Every request has a final outcome and its outputs are written."""
    STOPPED = "stopped"
    """Its engines stopped with work outstanding (timeout or budget); run the experiment again to continue."""
    BLOCKED = "blocked"
    """A task it needs stopped, or the experiment ran out of time before it could start."""


@dataclass
class StageTask:
    """One task: how to start its engines, and what to do once they have all stopped.

    Attributes:
        key: unique name, e.g. `compliance openai/v0/run1 judge=gpt-4.1 gpt-4.1-mini`.
        stage: the experiment stage it belongs to (generation, compliance, ranking, report).
        needs: keys of the tasks that must finish first.
        start: builds the task's engines and their items (none: the task is done once `finish` returns).
        finish: called with the engines' summaries (in `start` order) once all have stopped; writes outputs.
        abort: called instead of `finish` when the loop is interrupted while the task runs.
    """

    key: str
    stage: str
    needs: tuple[str, ...]
    start: Callable[[], EngineRuns]
    finish: Callable[[list[EngineSummary]], None]
    abort: Callable[[], None] = lambda: None
    state: TaskState = TaskState.WAITING
    summaries: dict[int, EngineSummary] = field(default_factory=dict)
    engine_count: int = 0

    def release(self) -> None:
        """Drop `start`, `finish` and `abort` once the task has ended: their closures hold its pipeline (the spec,
        its answers' indices), and an experiment of many runs must not keep every finished run's."""
        self.start, self.finish, self.abort = _no_engines, _nothing_to_write, _nothing_to_abort

    @property
    def outstanding(self) -> int:
        """Requests of its stopped engines without a final outcome."""
        return sum(s.outstanding for s in self.summaries.values())


def _no_engines() -> EngineRuns:
    return []


def _nothing_to_write(summaries: list[EngineSummary]) -> None:
    return None


def _nothing_to_abort() -> None:
    return None


class StageScheduler:
    """Runs tasks in dependency order, each as soon as it can, all engines in one polling loop."""

    def __init__(
        self,
        tasks: Sequence[StageTask],
        *,
        on_change: Callable[[StageTask], None] | None = None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.tasks = {task.key: task for task in tasks}
        if len(self.tasks) != len(tasks):
            raise ConfigError("two experiment tasks have the same key; every run must have its own directory")
        for task in tasks:
            unknown = [need for need in task.needs if need not in self.tasks]
            if unknown:
                raise ConfigError(f"task {task.key!r} needs unknown task(s): {', '.join(unknown)}")
        self._on_change = on_change or (lambda task: None)
        self._deadline = deadline
        self._clock = clock
        self._loop = EngineLoop(sleep=sleep, on_finished=self._engine_stopped)
        self._owner: dict[int, StageTask] = {}
        self._starting = False
        self._start_again = False

    def run(self) -> bool:
        """Run every task that can run; True when all finished."""
        try:
            self._start_ready()
            self._loop.run()
        except BaseException:
            for task in self.tasks.values():
                if task.state is TaskState.RUNNING:
                    task.abort()
                    self._set(task, TaskState.STOPPED)
            raise
        for task in self.tasks.values():
            if task.state is TaskState.WAITING:
                self._set(task, TaskState.BLOCKED)
        return all(task.state is TaskState.FINISHED for task in self.tasks.values())

    # -- helpers ------------------------------------------------------------------------------------------

    def _start_ready(self) -> None:
        """Start every waiting task whose needs have finished, and submit its first jobs at once.

        Repeated until nothing more is ready: a task may finish as soon as it starts (no engines, or nothing left
        to do on a rerun) and make others ready. Not re-entered: a task finishing while this runs sets a flag.
        """
        if self._starting:
            self._start_again = True
            return
        self._starting, self._start_again = True, True
        try:
            while self._start_again:
                self._start_again = False
                for task in self.tasks.values():
                    if task.state is TaskState.WAITING and self._needs_met(task):
                        if self._deadline is not None and self._clock() >= self._deadline:
                            return  # out of time: nothing new is started (or paid for); the rerun starts it
                        self._start(task)
        finally:
            self._starting = False

    def _start(self, task: StageTask) -> None:
        self._set(task, TaskState.RUNNING)
        with self._loop.enclosing():  # a task that blocks (a conversation run) still lets this loop's jobs be polled
            runs = task.start()
        task.engine_count = len(runs)
        if not runs:
            self._complete(task)
            return
        indices = []
        for engine, items in runs:
            index = self._loop.add(engine, items)
            self._owner[index] = task
            indices.append(index)
        for index in indices:
            self._loop.tick(index)

    def _needs_met(self, task: StageTask) -> bool:
        return all(self.tasks[need].state is TaskState.FINISHED for need in task.needs)

    def _engine_stopped(self, index: int, summary: EngineSummary) -> None:
        task = self._owner[index]
        task.summaries[index] = summary
        if len(task.summaries) == task.engine_count:
            self._complete(task)
            if task.state is TaskState.FINISHED:
                self._start_ready()

    def _complete(self, task: StageTask) -> None:
        summaries = [task.summaries[index] for index in sorted(task.summaries)]
        task.finish(summaries)
        task.release()
        finished = all(summary.finished for summary in summaries)
        self._set(task, TaskState.FINISHED if finished else TaskState.STOPPED)
        if finished:
            self._start_again = True  # for a _start_ready under way

    def _set(self, task: StageTask, state: TaskState) -> None:
        task.state = state
        logger.info("%s: %s", task.key, state.value)
        self._on_change(task)

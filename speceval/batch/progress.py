"""What the engine reports while it runs: an observer interface the CLI renders, and the final summary."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from speceval.batch.records import BatchRecord, Outcome
from speceval.wire.usage import Usage


class StopReason(StrEnum):
    """Why the engine returned."""

    RUNNING = "running"
    FINISHED = "finished"
    TIMED_OUT = "timed_out"
    BUDGET = "budget"
    FETCHED = "fetched"  # one collection round without submitting (`speceval fetch`)
    INTERRUPTED = "interrupted"


class EngineSummary(BaseModel):
    """Counts at a point of the run.

    Attributes:
        reason: finished (every request has a final outcome) or why the engine stopped early.
        total_requests: requests in the run.
        outcome_counts: final outcomes so far, per kind.
        outstanding: requests without a final outcome yet (in flight, or to be retried).
        active_jobs: provider jobs not yet collected.
        jobs: provider jobs created for this run so far.
        usage: tokens reported by the provider for collected requests.
    """

    reason: StopReason
    total_requests: int
    outcome_counts: dict[Outcome, int] = Field(default_factory=dict)
    outstanding: int = 0
    active_jobs: int = 0
    jobs: int = 0
    usage: Usage = Field(default_factory=Usage)

    @property
    def finished(self) -> bool:
        """True when every request has a final outcome."""
        return self.reason is StopReason.FINISHED and self.outstanding == 0


class EngineObserver:
    """Receives progress events. The default methods do nothing; the CLI overrides them to draw progress."""

    def started(self, summary: EngineSummary) -> None:
        """The engine loaded the run's state and is about to submit or poll."""

    def job_submitted(self, record: BatchRecord) -> None:
        """A provider job was created (or adopted after a crash) and recorded."""

    def job_updated(self, record: BatchRecord) -> None:
        """A job changed state."""

    def job_collected(self, record: BatchRecord) -> None:
        """A terminal job's outcomes were written to results/."""

    def waiting(self, seconds: float, summary: EngineSummary) -> None:
        """The engine is about to sleep until the next polling round."""

    def finished(self, summary: EngineSummary) -> None:
        """The engine is returning."""


class NullObserver(EngineObserver):
    """An observer that ignores everything."""

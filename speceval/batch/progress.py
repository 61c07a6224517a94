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


class TierCount(BaseModel):
    """Requests answered at one service tier, and their tokens (`EngineSummary.tiers`)."""

    requests: int = 0
    usage: Usage = Field(default_factory=Usage)


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
        tiers: of a realtime run, answered requests per service tier that served them (`flex`, `standard`);
            a batch run's requests are all served by its jobs (absent).
        flex_refusals: flex calls the provider refused for want of capacity (not billed, not attempts).
        flex_fallbacks: requests sent elsewhere once flex_patience ran out (`standard`, `batch`) → count.
    """

    reason: StopReason
    total_requests: int
    outcome_counts: dict[Outcome, int] = Field(default_factory=dict)
    outstanding: int = 0
    active_jobs: int = 0
    jobs: int = 0
    usage: Usage = Field(default_factory=Usage)
    # Absent unless used, so run.json of a run without tiers reads as it always did.
    tiers: dict[str, TierCount] = Field(default_factory=dict, exclude_if=lambda value: not value)
    flex_refusals: int = Field(default=0, exclude_if=lambda value: not value)
    flex_fallbacks: dict[str, int] = Field(default_factory=dict, exclude_if=lambda value: not value)

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

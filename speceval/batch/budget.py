"""A spending limit shared by the engines of one run: a job's upper-bound cost is reserved before it is created,
and replaced by what it actually cost once its answers are collected.

The budget keeps two sums: `spent_usd` (jobs collected, realtime calls answered: the usage the provider reported
at the price table's price) and `reserved_usd` (jobs in flight, at their upper bound: every answer at
max_tokens). A job is submitted only when spent + reserved + its own bound fits under the limit, so what is
actually spent can never pass it. A job that does not fit *now* but would once the jobs in flight settle
(spent + its bound fits) is held back, not refused: the engine submits it as reservations settle. Only a job that
would not fit even if every job in flight cost nothing stops the run (`Claim.REFUSED`).

Jobs already recorded (a resume) count with their actual cost when collected, else with their reservation, so a
resume with a higher limit continues where the last one stopped without resubmitting anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Protocol

from speceval.batch.model import BatchedModel
from speceval.batch.records import BatchRecord, SubmissionIntent

# Sums of floats do not cancel exactly: a reservation settled to the cent leaves dust, not money in flight.
_EPSILON = 1e-9


class CostEstimator(Protocol):
    """Prices a job before it is submitted and after it is collected (`speceval.batch.costs` ships one)."""

    def estimate(self, model: BatchedModel, intent: SubmissionIntent, request_file: Path) -> float:
        """Upper-bound cost in USD of running every request of `intent` (input, and max_tokens of output)."""
        ...

    def actual(self, record: BatchRecord) -> float | None:
        """What a collected job cost from the usage its provider reported; None when its price is unknown."""
        ...


class Claim(Enum):
    """The budget's answer to a reservation."""

    GRANTED = "granted"
    HELD = "held"  # fits once reservations in flight settle: wait, then ask again
    REFUSED = "refused"  # would not fit even if everything in flight cost nothing: the run stops here


class Budget:
    """A limit in USD, what was spent and what is reserved for work in flight (thread-safe)."""

    def __init__(self, limit_usd: float, estimator: CostEstimator):
        self.limit_usd = limit_usd
        self.estimator = estimator
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.refused_usd: float | None = None  # the last reservation refused (what the stop message names)
        self._lock = threading.Lock()

    @property
    def committed_usd(self) -> float:
        """Spent plus reserved: what the limit is checked against."""
        return self.spent_usd + self.reserved_usd

    def estimate(self, model: BatchedModel, intent: SubmissionIntent, request_file: Path) -> float:
        """The upper-bound cost of `intent`."""
        return float(self.estimator.estimate(model, intent, request_file))

    def job_cost(self, record: BatchRecord) -> float:
        """What a collected job cost (its reservation when the price of its usage is unknown: the safe side)."""
        actual = self.estimator.actual(record)
        if actual is not None:
            return actual
        return record.estimated_cost_usd or 0.0

    def add_committed(self, records: Iterable[BatchRecord]) -> None:
        """Count jobs that already exist: spent if collected, else reserved at the bound made at submission."""
        for record in records:
            if record.collected:
                cost = record.cost_usd if record.cost_usd is not None else self.job_cost(record)
                with self._lock:
                    self.spent_usd += cost
            else:
                with self._lock:
                    self.reserved_usd += record.estimated_cost_usd or 0.0

    def claim(self, amount: float) -> Claim:
        """Reserve `amount` if it fits under the limit now; else say whether waiting could make it fit."""
        with self._lock:
            verdict = self._verdict(amount)
            if verdict is Claim.GRANTED:
                self.reserved_usd += amount
            elif verdict is Claim.REFUSED:
                self.refused_usd = amount
            return verdict

    def verdict(self, amount: float) -> Claim:
        """What `claim(amount)` would answer, reserving nothing."""
        with self._lock:
            return self._verdict(amount)

    def _verdict(self, amount: float) -> Claim:
        if self.spent_usd + self.reserved_usd + amount <= self.limit_usd + _EPSILON:
            return Claim.GRANTED
        if self.spent_usd + amount <= self.limit_usd + _EPSILON and self.reserved_usd > _EPSILON:
            return Claim.HELD
        return Claim.REFUSED

    def reserve(self, amount: float) -> bool:
        """Commit `amount` if it fits under the limit now; False (nothing committed) if it does not."""
        return self.claim(amount) is Claim.GRANTED

    def settle(self, reserved: float, actual: float) -> None:
        """Replace a reservation by what the work actually cost (a collected job, an answered realtime call)."""
        self._adjust(reserved, actual)

    def _adjust(self, reserved: float, actual: float) -> None:
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved)
            self.spent_usd += actual

    def release(self, amount: float) -> None:
        """Give back a reservation whose job was not created after all."""
        self.settle(amount, 0.0)

    def describe(self) -> str:
        """The budget's state in one phrase, for the line a budget stop ends with."""
        text = f"spent ${self.spent_usd:,.4f}, reserved ${self.reserved_usd:,.4f} of the ${self.limit_usd:,.4f} limit"
        if self.refused_usd is not None:
            text += f"; the next job alone would reserve up to ${self.refused_usd:,.4f}"
        return text

    def stop_line(self, unsent: str) -> str:
        """The last line of a command the budget stopped: what was spent and reserved, the limit, what is unsent."""
        return f"Stopped by the budget: {self.describe()}; not sent: {unsent}."


class RunBudget(Budget):
    """A limit of its own (one run's, e.g. an experiment's `cost_per_run_limit`) inside a shared one: a job is
    reserved only when it fits under both, and everything committed counts against both."""

    def __init__(self, limit_usd: float, estimator: CostEstimator, parent: Budget | None):
        super().__init__(limit_usd, estimator)
        self.parent = parent

    def add_committed(self, records: Iterable[BatchRecord]) -> None:
        records = list(records)
        super().add_committed(records)
        if self.parent is not None:
            self.parent.add_committed(records)

    def claim(self, amount: float) -> Claim:
        own = super().claim(amount)
        if self.parent is None:
            return own
        shared = self.parent.claim(amount) if own is Claim.GRANTED else self.parent.verdict(amount)
        if own is Claim.GRANTED and shared is not Claim.GRANTED:
            Budget._adjust(self, amount, 0.0)  # this run's reservation only: the parent reserved nothing
        if Claim.REFUSED in (own, shared):
            return Claim.REFUSED
        return Claim.HELD if Claim.HELD in (own, shared) else Claim.GRANTED

    def settle(self, reserved: float, actual: float) -> None:
        super().settle(reserved, actual)
        if self.parent is not None:
            self.parent.settle(reserved, actual)

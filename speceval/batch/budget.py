"""A spending limit shared by the engines of one run: each job's estimated cost is reserved before it is created.

Jobs already recorded count with their actual cost when known (collected), else with their estimate, so a
resume with a higher limit continues where the last one stopped without resubmitting anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from speceval.batch.model import BatchedModel
from speceval.batch.records import BatchRecord, SubmissionIntent


class CostEstimator(Protocol):
    """Prices a job before it is submitted (see `speceval.batch.costs` for the shipped implementation)."""

    def estimate(self, model: BatchedModel, intent: SubmissionIntent, request_file: Path) -> float:
        """Estimated cost in USD of running every request of `intent` (input and expected output tokens)."""
        ...


class Budget:
    """A limit in USD and what is committed against it so far (thread-safe)."""

    def __init__(self, limit_usd: float, estimator: CostEstimator):
        self.limit_usd = limit_usd
        self.estimator = estimator
        self.committed_usd = 0.0
        self._lock = threading.Lock()

    def estimate(self, model: BatchedModel, intent: SubmissionIntent, request_file: Path) -> float:
        """The estimated cost of `intent`."""
        return float(self.estimator.estimate(model, intent, request_file))

    def add_committed(self, records: Iterable[BatchRecord]) -> None:
        """Count jobs that already exist (actual cost if collected, else the estimate made at submission)."""
        with self._lock:
            for record in records:
                cost = record.cost_usd if record.cost_usd is not None else record.estimated_cost_usd
                self.committed_usd += cost or 0.0

    def reserve(self, amount: float) -> bool:
        """Commit `amount` if it fits under the limit; False (nothing committed) if it does not."""
        with self._lock:
            if self.committed_usd + amount > self.limit_usd + 1e-9:
                return False
            self.committed_usd += amount
            return True

    def settle(self, reserved: float, actual: float) -> None:
        """Replace a reservation by what the request actually cost (a realtime call, once answered)."""
        with self._lock:
            self.committed_usd = max(0.0, self.committed_usd - reserved + actual)

    def release(self, amount: float) -> None:
        """Give back a reservation whose job was not created after all."""
        with self._lock:
            self.committed_usd = max(0.0, self.committed_usd - amount)


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

    def reserve(self, amount: float) -> bool:
        if self.parent is not None and not self.parent.reserve(amount):
            return False
        if super().reserve(amount):
            return True
        if self.parent is not None:
            self.parent.release(amount)
        return False

    def settle(self, reserved: float, actual: float) -> None:
        super().settle(reserved, actual)
        if self.parent is not None:
            self.parent.settle(reserved, actual)

    def release(self, amount: float) -> None:
        super().release(amount)
        if self.parent is not None:
            self.parent.release(amount)

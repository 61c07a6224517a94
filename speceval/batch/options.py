"""`EngineOptions` and the small helpers every engine (batch, realtime) shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from speceval.batch.budget import Budget
from speceval.batch.ledger import ItemSource, ListSource, final_outcome
from speceval.batch.prompt import PromptItem
from speceval.batch.records import ResultRecord


@dataclass
class EngineOptions:
    """How the engine runs. Defaults are those of the command line.

    Attributes:
        batch_size: most requests per provider job (the provider's own limit applies as well).
        poll_interval: seconds between polling rounds.
        timeout_hours: stop (leaving jobs running, state saved) after this long.
        max_attempts: how many jobs one request may be sent in before its last outcome is final.
        budget: when set, each job's upper-bound cost is reserved before it is submitted and replaced by its
            actual cost once collected; a job that does not fit waits for jobs in flight to settle, and submitting
            stops only when it would not fit even then (shared by every engine of one `run_engines` call).
    """

    batch_size: int = 500
    poll_interval: float = 60.0
    timeout_hours: float = 24.0
    max_attempts: int = 3
    budget: Budget | None = None

    def recorded(self) -> dict[str, Any]:
        """The options a run manifest records: all but the budget, which is given per invocation.

        Not `dataclasses.asdict`: that would deep-copy the budget and its lock.
        """
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "budget"}


def is_final(record: ResultRecord, max_attempts: int) -> bool:
    """Whether an input's outcome is final: succeeded, not worth retrying, or out of attempts."""
    retryable = record.error is not None and record.error.retryable
    return final_outcome(record.outcome, retryable, record.attempts, max_attempts)


def as_source(items: Sequence[PromptItem] | ItemSource) -> ItemSource:
    """An item source for `items` (sources pass through; lists of prompt items are wrapped)."""
    if isinstance(items, ItemSource):
        return items
    return ListSource((i.statement_id, i.original_index, i.input_text) for i in items)

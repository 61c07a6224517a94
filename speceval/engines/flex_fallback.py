"""`on_flex_unavailable: batch`: a flex run whose requests flex kept refusing sends them in Batch API jobs of the
same run directory, at the same batch rates, instead of waiting on flex or paying standard (docs/service-tiers.md).

The realtime engine answers what flex serves and leaves the rest unsent (`RealtimeEngine.deferred`); their refs are
written to `realtime/deferred.json` (atomically) before any batch job is made, so a run killed after that resumes
them through the batch engine, which adopts the jobs it already made by their idempotency keys, and never sends
them at flex again: nothing is paid for twice. Both engines write the same `results/`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from speceval.atomic import atomic_write_json
from speceval.batch.engine import BatchEngine
from speceval.batch.ledger import ItemSource, ListPromptSource, ListSource, PromptSource, request_of
from speceval.batch.loop import advance_enclosing
from speceval.batch.model import BatchedModel
from speceval.batch.options import as_source
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason, TierCount
from speceval.batch.records import Outcome
from speceval.batch.refmap import ItemRef
from speceval.interrupts import raise_if_requested
from speceval.realtime.engine import RealtimeEngine
from speceval.wire.prompt import PromptItem, PromptLike

DEFERRED_NAME = "realtime/deferred.json"


class FlexThenBatchEngine:
    """The realtime engine at flex, then a batch engine over the requests flex kept refusing (same surface)."""

    def __init__(self, realtime: RealtimeEngine, batch_model: BatchedModel, observer: EngineObserver | None = None):
        """Pair a flex run's engine with the batch adapter of the same model and provider."""
        self.realtime = realtime
        self.batch_model = batch_model
        self.observer = observer
        self.store = realtime.store
        self.options = realtime.options
        self.next_wait = realtime.next_wait
        self._source: ItemSource = ListSource(())
        self._earlier: set[ItemRef] = set()
        self._first: EngineSummary | None = None
        self._batch: BatchEngine | None = None

    @property
    def deferred_path(self) -> Path:
        """Where the refs left for batch jobs are recorded."""
        return self.store.run_dir / DEFERRED_NAME

    def run(self, items: Sequence[PromptItem] | ItemSource) -> EngineSummary:
        """Run (or resume) to the end: flex first, then the batch jobs of what flex refused."""
        self.start(items)
        while True:
            raise_if_requested()
            summary = self.tick()
            if summary is not None:
                return summary
            time.sleep(self.next_wait)
            advance_enclosing(self.next_wait)

    def start(self, items: Sequence[PromptItem] | ItemSource) -> None:
        """Send at flex what no earlier session left for a batch job; those resume through the batch engine."""
        self._source = as_source(items)
        if self.deferred_path.is_file():
            self._earlier = {ItemRef(s, i) for s, i in json.loads(self.deferred_path.read_text(encoding="utf-8"))}
        if not self._earlier:
            self.realtime.start(self._source)
            return
        rest = {ItemRef(sid, i) for sid, indices in self._source.statement_counts() for i in indices} - self._earlier
        self.realtime.start(subset(self._source, rest))

    def tick(self) -> EngineSummary | None:
        """Tick whichever engine is running; the merged summary once both are done."""
        if self._batch is None:
            summary = self.realtime.tick()
            self.next_wait = self.realtime.next_wait
            if summary is None:
                return None
            deferred = self._earlier | set(self.realtime.deferred)
            if not deferred or summary.reason is not StopReason.FINISHED:
                return summary
            self._first = summary
            # Recorded before any job exists: a resume finds them here and sends none of them at flex again.
            atomic_write_json(self.deferred_path, sorted([ref.statement_id, ref.original_index] for ref in deferred))
            self._batch = BatchEngine(self.batch_model, self.store, self.options, self.observer)
            self._batch.start(subset(self._source, deferred))
            return None
        summary = self._batch.tick()
        self.next_wait = self._batch.next_wait
        if summary is None:
            return None
        assert self._first is not None
        # The flex session counted this session's refused requests too: each input once.
        return _merged(self._first, summary, counted_twice=len(set(self.realtime.deferred)))


def subset(source: ItemSource, refs: set[ItemRef]) -> ListPromptSource:
    """The items of `source` named by `refs`, in the source's order, each sending what the source would send."""
    request = request_of(source)
    chosen: list[tuple[str, int, str, PromptLike]] = []
    for statement_id, indices in source.statement_counts():
        wanted = [i for i in indices if ItemRef(statement_id, i) in refs]
        if not wanted:
            continue
        texts = source.texts(statement_id)
        prompts = source.prompts(statement_id) if isinstance(source, PromptSource) else None
        for i in wanted:
            text = texts[i]
            prompt = prompts[i] if prompts is not None else request(text) if request is not None else text
            chosen.append((statement_id, i, text, prompt))
    return ListPromptSource(chosen)


def _merged(flex: EngineSummary, batch: EngineSummary, counted_twice: int = 0) -> EngineSummary:
    """One summary of the run: the flex session's answers and the batch jobs' (each input counted once:
    `counted_twice` are the requests of both, refused at flex in this session and sent in the jobs)."""
    counts = dict(flex.outcome_counts)
    for outcome, n in batch.outcome_counts.items():
        counts[outcome] = counts.get(outcome, 0) + n
    usage = flex.usage.model_copy(deep=True)
    usage.add(batch.usage)
    answered = batch.outcome_counts.get(Outcome.SUCCEEDED, 0)  # answers, as the flex part counts its own
    return EngineSummary(
        reason=batch.reason,
        total_requests=flex.total_requests + batch.total_requests - counted_twice,
        outcome_counts=counts,
        outstanding=batch.outstanding,
        active_jobs=batch.active_jobs,
        jobs=batch.jobs,
        usage=usage,
        tiers={**flex.tiers, "batch": TierCount(requests=answered, usage=batch.usage)},
        flex_refusals=flex.flex_refusals,
        flex_fallbacks=flex.flex_fallbacks,
    )

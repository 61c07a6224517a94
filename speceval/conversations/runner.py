"""`ConversationRun`: the rounds of one generation run over inputs that hold conversations, to the end.

Round k runs in its own engine directory (`rounds/<k>/`, see `speceval.conversations.rounds`) and starts only when
round k-1's results are all final. Everything is derived from files: a round's members from `round.json`, its
requests from the inputs file and the earlier rounds' answers, its progress from the engine's own state. Killed at
any instant and run again, it continues the round in flight (the engine adopts jobs already created) and sends no
finished turn again. `results/` is assembled from the closed rounds whenever the run returns.
"""

from __future__ import annotations

import logging
from pathlib import Path

from speceval.batch.engine import BatchEngine
from speceval.batch.model import BatchedModel
from speceval.batch.options import EngineOptions
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
from speceval.batch.records import SubmissionIntent, Usage
from speceval.conversations.results import assemble
from speceval.conversations.rounds import (
    ROUND_KIND,
    RoundRecord,
    RoundSource,
    first_round,
    next_round,
    round_dir,
    round_store,
)
from speceval.inputs import InputSet
from speceval.manifest import MANIFEST_NAME, RunManifest, run_recorded
from speceval.realtime.engine import RealtimeEngine
from speceval.realtime.model import RealtimeModel

logger = logging.getLogger(__name__)


class ConversationRun:
    """The rounds of one conversation run.

    Args:
        inputs: the run's inputs (strings and conversations).
        run_dir: the generation run directory (its `run.json` is the template of each round's).
        manifest: the generation run's manifest, already on disk.
        options: engine options, used by every round (a budget is shared across rounds).
        observer: receives each round's engine events.
    """

    def __init__(self, inputs: InputSet, run_dir: Path, manifest: RunManifest, options: EngineOptions,
                 observer: EngineObserver | None = None):
        self.inputs = inputs
        self.run_dir = Path(run_dir)
        self.manifest = manifest
        self.options = options
        self.observer = observer

    def run(self, model: BatchedModel | RealtimeModel) -> EngineSummary:
        """Run (or resume) round after round until every conversation ended, or a round stops (budget, timeout)."""
        closed: list[RoundRecord] = []
        jobs, usage = 0, Usage()
        reason, active = StopReason.FINISHED, 0
        previous: RoundRecord | None = None
        for number in range(1, self.inputs.max_rounds + 1):
            record = self._round(number, previous)
            if record is None:
                break  # every conversation ended before this round
            if RoundRecord.load(self.run_dir, number + 1) is not None:
                # The next round started, so this one was final: running its engine again could only retry what
                # its members were decided from (a resume with a higher --max-attempts), and must not.
                summary = self._closed_summary(number)
            else:
                summary = self._run_round(model, record)
            jobs += summary.jobs
            usage.add(summary.usage)
            if not summary.finished:
                reason, active = summary.reason, summary.active_jobs
                break
            closed.append(record)
            previous = record
        counts, ended = assemble(self.inputs, self.run_dir, closed)
        return EngineSummary(reason=reason, total_requests=len(self.inputs), outcome_counts=dict(counts),
                             outstanding=len(self.inputs) - ended, active_jobs=active, jobs=jobs, usage=usage)

    def plan(self, model: BatchedModel) -> list[tuple[Path, SubmissionIntent]]:
        """Dry run: round 1's request files and intents, each with its round directory (later rounds are built
        from answers, so they cannot be planned)."""
        record = self._round(1, None)
        assert record is not None  # round 1 holds every input
        directory = round_dir(self.run_dir, 1)
        manifest = self._round_manifest(record)
        manifest.status = "planned"
        manifest.save(directory)
        intents = BatchEngine(model, round_store(self.run_dir, 1), self.options).plan(
            RoundSource(self.inputs, self.run_dir, record))
        return [(directory, intent) for intent in intents]

    # -- helpers ------------------------------------------------------------------------------------------

    def _round(self, number: int, previous: RoundRecord | None) -> RoundRecord | None:
        """Round `number`'s record: from disk if it started, else decided now and written (None if empty)."""
        record = RoundRecord.load(self.run_dir, number)
        if record is not None:
            return record
        record = first_round(self.inputs) if previous is None else next_round(self.inputs, self.run_dir, previous)
        if not record.size:
            return None
        record.save(self.run_dir)
        logger.info("round %d: %d request(s)", number, record.size)
        return record

    def _round_manifest(self, record: RoundRecord) -> RunManifest:
        directory = round_dir(self.run_dir, record.round)
        if (directory / MANIFEST_NAME).is_file():
            manifest = RunManifest.load(directory)
            manifest.command = self.manifest.command
            manifest.status = "running"
            return manifest
        parameters = {**self.manifest.parameters, "round": record.round, "requests": record.size}
        return self.manifest.model_copy(
            update={"kind": ROUND_KIND, "parameters": parameters, "status": "running", "totals": None}, deep=True)

    def _run_round(self, model: BatchedModel | RealtimeModel, record: RoundRecord) -> EngineSummary:
        directory = round_dir(self.run_dir, record.round)
        source = RoundSource(self.inputs, self.run_dir, record)
        store = round_store(self.run_dir, record.round)

        def run() -> EngineSummary:
            if isinstance(model, BatchedModel):
                return BatchEngine(model, store, self.options, self.observer).run(source)
            # Realtime: a round's conversations are called concurrently, each conversation's turns in order.
            return RealtimeEngine(model, store, self.options, self.observer).run(source.items())

        return run_recorded(directory, self._round_manifest(record), run)

    def _closed_summary(self, number: int) -> EngineSummary:
        records = round_store(self.run_dir, number).load_records()
        if self.options.budget is not None:
            self.options.budget.add_committed(records)  # paid before this invocation: it still counts
        totals = RunManifest.load(round_dir(self.run_dir, number)).totals  # saved when the round finished
        if totals is not None:
            return EngineSummary(reason=StopReason.FINISHED, total_requests=0, jobs=totals.jobs, usage=totals.usage)
        usage = Usage()
        for record in records:
            usage.add(record.usage)
        return EngineSummary(reason=StopReason.FINISHED, total_requests=0, jobs=len(records), usage=usage)

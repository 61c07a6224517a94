"""The batch engine: submit, poll, collect and retry, written once for every provider.

One run = an item source (inputs read one statement at a time) and a run directory. The engine derives
everything it needs from the run directory, so calling `run` again on the same directory resumes: requests with
a final outcome are not sent again, jobs already created are polled instead of recreated, and an intent left by
a crash is reconciled with the provider before anything new is created. Per-request progress lives in a
`Ledger` of a few bytes per request, so a run of a million requests does not hold a million objects.

Submission protocol (crash safety): write the request file and an intent → upload (handle saved in the intent)
→ create the job with SDK retries off → write `metadata/<batch_id>.json` → retire the intent. A crash anywhere
leaves either an intent (reconciled on resume through the job's idempotency tag) or a record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from speceval.batch.budget import Claim
from speceval.batch.chunking import Lookahead, build_chunk
from speceval.batch.collect import collect_job
from speceval.batch.endpoint_poll import poll_interval_for
from speceval.batch.ledger import ItemSource, Ledger, PromptSource, request_of
from speceval.batch.loop import Engine, run_engines
from speceval.batch.model import BatchedModel
from speceval.batch.options import EngineOptions, as_source, is_final
from speceval.batch.progress import EngineObserver, EngineSummary, NullObserver, StopReason
from speceval.batch.records import BatchRecord, ItemRef, RemoteJob, SubmissionIntent, utcnow
from speceval.batch.run_lock import RunLock
from speceval.batch.store import RunStore
from speceval.errors import ProviderError, TransientProviderError
from speceval.wire.prompt import PromptItem, PromptLike

__all__ = ["BatchEngine", "Engine", "EngineOptions", "as_source", "is_final", "run_engines"]

logger = logging.getLogger(__name__)

# Back-off for a job or a submission whose provider calls fail: doubles per failure, capped.
MAX_BACKOFF_SECONDS = 900.0


def _wait_text(seconds: float) -> str:
    """A back-off delay as a person reads it (`30 s`, `4 min`)."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@dataclass
class _Backoff:
    failures: int = 0
    not_before: float = 0.0


@dataclass
class _State:
    source: ItemSource
    ledger: Ledger
    active: list[BatchRecord] = field(default_factory=list)
    intents: list[SubmissionIntent] = field(default_factory=list)
    jobs: int = 0
    budget_blocked: bool = False  # the next job would not fit even if every job in flight cost nothing
    budget_held: bool = False  # the next job fits once jobs in flight settle: submitted then
    held_usd: float = 0.0  # what the held job would reserve (asked again before a hold is called a deadlock)
    hold_said: bool = False  # the hold was logged: once per hold, not once a round (it was twice a second)
    recorded_ids: set[str] = field(default_factory=set)


class BatchEngine:
    """Runs prompt items through one `BatchedModel`, with all state in one run directory."""

    def __init__(
        self,
        model: BatchedModel,
        store: RunStore,
        options: EngineOptions | None = None,
        observer: EngineObserver | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.store = store
        self.options = options or EngineOptions()
        # seconds between polls of this model's jobs: the options' interval, or a local server's (`endpoint_poll`)
        self.poll_interval = poll_interval_for(model.endpoint, self.options.poll_interval)
        self.observer = observer or NullObserver()
        self._clock = clock
        self._sleep = sleep
        self._backoff: dict[str, _Backoff] = {}
        self._text_cache: tuple[ItemSource, str, dict[int, str]] | None = None
        self._prompt_cache: tuple[ItemSource, str, Mapping[int, PromptLike]] | None = None
        self._state: _State
        self._deadline = 0.0
        self.next_wait = 0.0
        self._lock = RunLock(store.run_dir)

    # -- public -------------------------------------------------------------------------------------------

    def run(self, items: Sequence[PromptItem] | ItemSource) -> EngineSummary:
        """Run (or resume) until every item has a final outcome, the timeout, or the budget stops it."""
        try:
            return run_engines([(self, items)], sleep=self._sleep)[0]
        finally:
            self._lock.release()  # also when interrupted: a resume in this process must not find it taken

    def plan(self, items: Sequence[PromptItem] | ItemSource) -> list[SubmissionIntent]:
        """Write the request file and intent of every job the run still needs, and submit nothing (dry run).

        A later `run` over the same directory submits exactly these files.
        """
        state = self._load_state(as_source(items))
        self._chunk_all(state)
        return list(state.intents)

    def fetch(self, items: Sequence[PromptItem] | ItemSource) -> EngineSummary:
        """Poll every job once and collect those that ended; submit nothing (`speceval fetch`)."""
        state = self._load_state(as_source(items))
        self._poll_active(state)
        return self._finish(state, StopReason.FETCHED)

    def cancel(self, batch_id: str | None = None) -> list[BatchRecord]:
        """Ask the provider to cancel every job still running (or only `batch_id`), and record that a user did.

        Requests a cancelled job never ran end as `cancelled`, which is final: a later resume does not send them
        again (it does send inputs that were never in any job).
        """
        cancelled = []
        for record in self.store.load_records():
            # A job already asked to cancel (cancelling at the provider) is not asked again.
            if record.collected or record.state.is_terminal or record.cancel_requested:
                continue
            if batch_id and record.batch_id != batch_id:
                continue
            job = self.model.cancel_batch(record)
            record.state, record.raw_state, record.handle = job.state, job.raw_state, job.handle
            record.cancel_requested = True
            record.updated_at = utcnow()
            self.store.save_record(record)
            cancelled.append(record)
            logger.info("asked %s to cancel job %s (%s)", record.provider, record.batch_id, job.raw_state)
        return cancelled

    def start(self, items: Sequence[PromptItem] | ItemSource) -> None:
        """Load the run's state; `tick` then does the work. (`run` does both; pipelines that drive several
        engines in one polling loop call `run_engines`.)"""
        self._lock.acquire()  # before anything is read or submitted: a second process must not pay again
        self._state = self._load_state(as_source(items))
        self._deadline = self._clock() + self.options.timeout_hours * 3600
        self.observer.started(self._summary(self._state, StopReason.RUNNING))

    def tick(self) -> EngineSummary | None:
        """One round: submit what is ready, poll what is active. Returns the summary once the run stops."""
        state = self._state
        self._submit_ready(state)
        self._poll_active(state)
        pending = state.ledger.has_pending()
        if not state.active and not state.intents and not pending:
            return self._finish(state, StopReason.FINISHED)
        if not state.active and state.budget_blocked:
            return self._finish(state, StopReason.BUDGET)
        if self._clock() >= self._deadline:
            return self._finish(state, StopReason.TIMED_OUT)
        self.next_wait = self._next_wait(state, pending)
        if self.next_wait > 0:
            self.observer.waiting(self.next_wait, self._summary(state, StopReason.RUNNING))
        return None

    @property
    def held_idle(self) -> bool:
        """Held by the budget with no job of its own in flight: only other engines' jobs can free the money."""
        state, budget = self._state, self.options.budget
        if budget is None or not state.budget_held or state.budget_blocked or state.active:
            return False
        return budget.verdict(state.held_usd) is Claim.HELD  # asked again: another engine may have settled since

    def stop_holding(self) -> None:
        """Turn a hold into a budget stop: the loop found that nothing it polls can settle the reservations in
        flight (they are jobs of a loop that waits on this one, e.g. an experiment's canaries while a conversation's
        rounds run), so waiting would never end. A rerun continues where this one stopped."""
        state = self._state
        state.budget_blocked = True
        budget = self.options.budget
        logger.warning(
            "budget: the next job fits only once jobs in flight elsewhere are collected, and nothing polls them "
            "while this run waits (%s); not submitting it or any later job",
            budget.describe() if budget is not None else "no budget",
        )

    # -- state --------------------------------------------------------------------------------------------

    def _load_state(self, source: ItemSource) -> _State:
        self.store.remove_stale_temp_files()
        state = _State(source=source, ledger=Ledger(source, self.options.max_attempts))
        on_disk = 0
        for statement_id in state.ledger.statement_ids:
            for row in self.store.load_rows(statement_id):
                state.ledger.note_row(statement_id, row)
                on_disk += 1
        recorded_keys = set()
        for record in self.store.load_records():
            state.jobs += 1
            recorded_keys.add(record.idempotency_key)
            state.recorded_ids.add(record.batch_id)
            if not record.collected:
                state.ledger.set_flight(record.refs, True)
                state.active.append(record)
        for intent in self.store.load_intents():
            if intent.idempotency_key in recorded_keys:
                # Crashed after writing the record but before retiring the intent: nothing to reconcile.
                self.store.retire_intent(intent.idempotency_key)
                continue
            state.intents.append(intent)
            state.ledger.set_flight(intent.refs, True)
        if state.active or state.intents:
            logger.info(
                "resuming: %d job(s) in flight, %d submission(s) to reconcile, %d result(s) on disk",
                len(state.active),
                len(state.intents),
                on_disk,
            )
        return state

    def _texts(self, state: _State, statement_id: str) -> dict[int, str]:
        """The inputs of one statement; the last statement read is kept, since chunks are cut in run order."""
        cached = self._text_cache
        if cached is None or cached[0] is not state.source or cached[1] != statement_id:
            cached = (state.source, statement_id, state.source.texts(statement_id))
            self._text_cache = cached
        return cached[2]

    def _prompts(self, state: _State, statement_id: str) -> Mapping[int, PromptLike]:
        """`_texts` for a `PromptSource` (a conversation round): each input's request, transcript and all."""
        source = state.source
        assert isinstance(source, PromptSource)
        cached = self._prompt_cache
        if cached is None or cached[0] is not source or cached[1] != statement_id:
            cached = (source, statement_id, source.prompts(statement_id))
            self._prompt_cache = cached
        return cached[2]

    # -- submission ---------------------------------------------------------------------------------------

    def _submit_ready(self, state: _State) -> None:
        if state.budget_blocked:
            return  # nothing new is paid for once the budget said no; running jobs are left to finish
        state.budget_held = False  # asked again each round: reservations may have settled since
        # First the intents already on disk (left by a crash, a failed create or a dry run), then new chunks.
        for intent in list(state.intents):
            if not self._ready(intent.idempotency_key) or not self._submit(state, intent):
                return  # the provider (or the budget) refuses for now: leave the remaining chunks alone
        pending = Lookahead(state.ledger.pending())
        while pending.peek() is not None:
            if not self._submit(state, self._chunk_one(state, pending)):
                return

    def _chunk_one(self, state: _State, pending: Lookahead) -> SubmissionIntent:
        # Decided once per chunk, not per request: sources of plain strings keep the string path untouched.
        prompt_of: Callable[[ItemRef], PromptLike]
        marked = request_of(state.source)
        if isinstance(state.source, PromptSource):
            prompt_of = lambda ref: self._prompts(state, ref.statement_id)[ref.original_index]  # noqa: E731
        elif marked is not None:  # cache-shaped judge prompts: each carries its shared prefix's length
            prompt_of = lambda ref: marked(self._texts(state, ref.statement_id)[ref.original_index])  # noqa: E731
        else:
            prompt_of = lambda ref: self._texts(state, ref.statement_id)[ref.original_index]  # noqa: E731
        intent, _ = build_chunk(
            self.model,
            self.store,
            pending,
            prompt_of,
            batch_size=self.options.batch_size,
            attempts_of=state.ledger.most_attempts,
        )
        state.intents.append(intent)
        state.ledger.set_flight(intent.refs, True)
        return intent

    def _chunk_all(self, state: _State) -> None:
        pending = Lookahead(state.ledger.pending())
        while pending.peek() is not None:
            self._chunk_one(state, pending)

    def _within_budget(self, state: _State, intent: SubmissionIntent, request_file: Path) -> bool:
        """Reserve the job's estimated cost; False (and no more submissions) if it would exceed the budget."""
        budget = self.options.budget
        if budget is None:
            return True
        if intent.estimated_cost_usd is None:
            intent.estimated_cost_usd = budget.estimate(self.model, intent, request_file)
            self.store.save_intent(intent)
        claim = budget.claim(intent.estimated_cost_usd)
        if claim is Claim.GRANTED:
            state.hold_said = False
            return True
        if claim is Claim.HELD:
            if not state.hold_said:
                state.hold_said = True
                logger.info(
                    "budget: holding the next job (%d requests, up to $%.4f) until jobs in flight are collected (%s)",
                    intent.request_count,
                    intent.estimated_cost_usd,
                    budget.describe(),
                )
            state.budget_held = True
            state.held_usd = intent.estimated_cost_usd
            return False
        state.budget_blocked = True
        logger.warning(
            "budget: the next job (%d requests, up to $%.4f) would pass the limit even if every job in flight cost "
            "nothing (%s); not submitting it or any later job",
            intent.request_count,
            intent.estimated_cost_usd,
            budget.describe(),
        )
        return False

    def _submit(self, state: _State, intent: SubmissionIntent) -> bool:
        """Create the job of one intent. False if the provider failed transiently (retried later) or the budget
        does not allow it."""
        key = intent.idempotency_key
        request_file = self.store.run_dir / intent.request_file
        try:
            # A create call that was sent may have reached the provider even if we never saw the answer.
            job = self.model.find_submitted(intent) if intent.create_attempted else None
            if job is not None and job.batch_id in state.recorded_ids:
                # Only possible for providers matched by shape (Anthropic): that job is another chunk's.
                logger.warning("job %s matched %s but is already recorded; not adopting it", job.batch_id, key[:12])
                job = None
            adopted = job is not None
            if job is None:
                if not self._within_budget(state, intent, request_file):
                    return False
                if intent.handle is None:
                    handle = self.model.prepare(intent, request_file)
                    if handle is not None:
                        intent.handle = handle
                        self.store.save_intent(intent)
                if not intent.create_attempted:
                    intent.create_attempted = True
                    self.store.save_intent(intent)
                job = self.model.generate_batch(intent, request_file)
        except TransientProviderError as exc:
            if self.options.budget is not None and intent.estimated_cost_usd is not None:
                self.options.budget.release(intent.estimated_cost_usd)
            delay = self._failed(key, exc)
            # Each try's own text: the terminal shows a warning once per text, so the same words every time showed
            # the first failure only, and a run that cannot reach its provider (no network, a wrong base URL) then
            # looked hung until --timeout-hours. The log file keeps every one either way.
            logger.warning(
                "could not create job %s yet (try %d failed; next try in %s): %s",
                key[:12],
                self._backoff[key].failures,
                _wait_text(delay),
                exc,
            )
            return False
        self._backoff.pop(key, None)
        budget = self.options.budget
        if adopted and budget is not None and intent.estimated_cost_usd is None:
            intent.estimated_cost_usd = budget.estimate(self.model, intent, request_file)
        record = self._adopt(intent, job)
        if adopted and budget is not None:
            # A job found by its tag (created before a crash, or its create's answer lost and its reservation given
            # back) holds no reservation, and is paid for whatever the budget says now: reserved as a recorded job
            # in flight is at load, so the next job waits for it instead of passing the limit.
            budget.add_committed([record])
        state.recorded_ids.add(record.batch_id)
        state.intents.remove(intent)
        state.active.append(record)
        state.jobs += 1
        self.observer.job_submitted(record)
        return True

    def _adopt(self, intent: SubmissionIntent, job: RemoteJob) -> BatchRecord:
        record = BatchRecord(
            batch_id=job.batch_id,
            provider=intent.provider,
            model=intent.model,
            idempotency_key=intent.idempotency_key,
            attempt=intent.attempt,
            state=job.state,
            raw_state=job.raw_state,
            handle=job.handle,
            request_file=intent.request_file,
            request_count=intent.request_count,
            refs=intent.refs,
            custom_ids=intent.custom_ids,
            submitted_at=job.created_at or utcnow(),
            error=job.error,
            estimated_cost_usd=intent.estimated_cost_usd,
        )
        self.store.save_record(record)
        self.store.retire_intent(intent.idempotency_key)
        logger.info("job %s holds %d request(s) (%s)", record.batch_id, record.request_count, job.raw_state)
        return record

    # -- polling and collection ---------------------------------------------------------------------------

    def _poll_active(self, state: _State) -> None:
        for record in list(state.active):
            if not self._ready(record.batch_id):
                continue
            try:
                if not record.state.is_terminal:
                    self._refresh(record)
                if record.state.is_terminal and self._collect(state, record):
                    state.active.remove(record)  # collect_job released its requests in the ledger
            except TransientProviderError as exc:
                delay = self._failed(record.batch_id, exc)
                logger.warning(  # each try's own text, as for a failed create (see _submit)
                    "job %s: %s (try %d failed; next try in %s)",
                    record.batch_id,
                    exc,
                    self._backoff[record.batch_id].failures,
                    _wait_text(delay),
                )
            else:
                self._backoff.pop(record.batch_id, None)

    def _refresh(self, record: BatchRecord) -> None:
        job = self.model.check_batch_progress(record)
        if (job.state, job.raw_state, job.handle, job.error) == (
            record.state,
            record.raw_state,
            record.handle,
            record.error,
        ):
            return  # unchanged: nothing to write
        record.state, record.raw_state, record.handle, record.error = job.state, job.raw_state, job.handle, job.error
        record.updated_at = utcnow()
        if job.state.is_terminal:
            record.ended_at = record.updated_at
        self.store.save_record(record)
        self.observer.job_updated(record)

    def _collect(self, state: _State, record: BatchRecord) -> bool:
        """Write every request's outcome of a terminal job (raises TransientProviderError to retry)."""
        collect_job(self.model, self.store, state.ledger, lambda sid: self._texts(state, sid), record)
        budget = self.options.budget
        if budget is not None:
            # The reservation (every answer at max_tokens) gives way to what the job actually cost, so jobs held
            # back can go now rather than in the next process.
            record.cost_usd = budget.job_cost(record)
            self.store.save_record(record)
            budget.settle(record.estimated_cost_usd or 0.0, record.cost_usd)
        self.observer.job_collected(record)
        return True

    # -- timing -------------------------------------------------------------------------------------------

    def _ready(self, key: str) -> bool:
        backoff = self._backoff.get(key)
        return backoff is None or self._clock() >= backoff.not_before

    def _failed(self, key: str, exc: ProviderError) -> float:
        """Back `key` off after a transient failure; the seconds until its next try."""
        backoff = self._backoff.setdefault(key, _Backoff())
        backoff.failures += 1
        delay = min(self.poll_interval * 2 ** (backoff.failures - 1), MAX_BACKOFF_SECONDS)
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        backoff.not_before = self._clock() + delay
        return float(delay)

    def _next_wait(self, state: _State, pending: bool) -> float:
        if pending and not state.budget_held and not any(b.not_before > self._clock() for b in self._backoff.values()):
            return 0.0  # retries were just queued: submit them without waiting a whole round
        return self.poll_interval

    # -- summary ------------------------------------------------------------------------------------------

    def _summary(self, state: _State, reason: StopReason) -> EngineSummary:
        counts, outstanding = state.ledger.counts()
        return EngineSummary(
            reason=reason,
            total_requests=len(state.ledger),
            outcome_counts=dict(counts),
            outstanding=outstanding,
            active_jobs=len(state.active),
            jobs=state.jobs,
            usage=state.ledger.usage.model_copy(),
        )

    def _finish(self, state: _State, reason: StopReason) -> EngineSummary:
        self._lock.release()
        summary = self._summary(state, reason)
        self.observer.finished(summary)
        return summary

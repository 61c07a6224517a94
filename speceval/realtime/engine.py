"""`RealtimeEngine`: the batch engine's contract (same run directory, `results/` records and outcomes) served by
concurrent, rate-limited realtime calls, for servers without a batch API and for small or urgent runs.

Workers are threads (the SDK clients are synchronous and thread-safe; the work is waiting on the network). Each
takes the next input, waits for the shared `RateLimiter`, makes one call through the model's adapter and retries
with jittered exponential back-off on 5xx, timeouts and lost connections (429s go through the shared cool-down
instead and do not use up attempts). A finished request is appended to the journal (`realtime/outcomes.jsonl`,
fsynced) at once, and merged into `results/<statement_id>.json` every few seconds and at the end.

Resuming is calling `run` again on the same directory: `results/` plus the journal say which inputs have a final
outcome (`is_final`, exactly as for batch runs); only the others are sent.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
import weakref
from collections import Counter, deque
from collections.abc import Callable, Hashable, Sequence
from datetime import UTC, datetime

from speceval.batch.costs import served_tier
from speceval.batch.engine import EngineOptions, is_final
from speceval.batch.journal import Journal, JournalEntry
from speceval.batch.ledger import ItemSource, ListSource
from speceval.batch.loop import advance_enclosing
from speceval.batch.options import as_source
from speceval.batch.progress import EngineObserver, EngineSummary, NullObserver, StopReason, TierCount
from speceval.batch.records import ItemRef, Outcome, RequestError, ResultRecord
from speceval.batch.run_lock import RunLock
from speceval.batch.store import RunStore
from speceval.interrupts import raise_if_requested
from speceval.realtime.limiter import RateLimiter
from speceval.realtime.model import CallFailed, Completion, RealtimeModel, is_flex_refusal
from speceval.realtime.prompts import PromptCache
from speceval.realtime.spend import RealtimeSpend, estimate_prompt_tokens
from speceval.redaction import redact
from speceval.wire.prompt import PromptItem
from speceval.wire.usage import Usage

logger = logging.getLogger(__name__)

# Seconds between merges of finished outcomes into results/ (the journal already holds them durably).
MERGE_INTERVAL_SECONDS = 2.0
# Seconds between two looks of the driving loop at the workers.
TICK_SECONDS = 0.1
# Until outputs have been seen, a request is expected to produce this many tokens (capped by max_tokens).
DEFAULT_OUTPUT_TOKENS = 256

_limiters: weakref.WeakValueDictionary[Hashable, RateLimiter] = weakref.WeakValueDictionary()
# Each client holds its endpoint's limiter for as long as it lives (the limiter was the client's before it was the
# endpoint's): what it learned (the provider's stated limits, a 429's pause) carries over from one engine of a judge
# or a study to the next, and it is let go when no client of that endpoint is left.
_held: weakref.WeakKeyDictionary[RealtimeModel, RateLimiter] = weakref.WeakKeyDictionary()
_limiters_lock = threading.Lock()


def limiter_of(model: RealtimeModel) -> RateLimiter:
    """The one limiter of an endpoint (`RealtimeModel.limiter_key`), shared by every engine that calls it while any
    client of that endpoint lives.

    A judge drives one engine per run directory (each candidate, each pair), and an experiment several judge tasks
    and each variation's run of a candidate at once, with clients of the same endpoint: `--rpm`, `--tpm` and
    `--max-concurrency` are the endpoint's limits, so they hold across all of them, and one 429 pauses them all.
    """
    key = model.limiter_key()
    with _limiters_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = RateLimiter(model.options.limits)
            _limiters[key] = limiter
        _held[model] = limiter
        return limiter


class _FlexWait:
    """How long one request has waited out flex refusals (`flex_patience` counts from its first refusal)."""

    def __init__(self) -> None:
        self.refusals = 0
        self.seconds = 0.0

    def patience_over(self, patience: float, next_delay: float) -> bool:
        """Whether waiting `next_delay` more would pass `patience` (0: fall back at the first refusal)."""
        return self.seconds + next_delay > patience

    def waited(self, delay: float) -> None:
        self.refusals += 1
        self.seconds += delay


class RealtimeEngine:
    """Runs prompt items through one `RealtimeModel`, with all state in one run directory.

    Same surface as `BatchEngine`: `run(items)`, or `start(items)` then `tick()` until it returns a summary.
    """

    def __init__(
        self,
        model: RealtimeModel,
        store: RunStore,
        options: EngineOptions | None = None,
        observer: EngineObserver | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        merge_interval: float = MERGE_INTERVAL_SECONDS,
    ):
        self.model = model
        self.store = store
        self.options = options or EngineOptions()
        self.observer = observer or NullObserver()
        self.limiter = limiter_of(model)
        self.journal = Journal(store.run_dir)
        self.session_id = f"realtime-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
        self.next_wait = TICK_SECONDS
        self._clock = clock
        self._sleep = sleep
        self._merge_interval = merge_interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._queue: deque[ItemRef] = deque()
        self._finished: list[tuple[ItemRef, ResultRecord]] = []
        self._unmerged: dict[str, list[ResultRecord]] = {}
        self._workers: list[threading.Thread] = []
        self._prompts = PromptCache(ListSource(()))
        self._order: list[ItemRef] = []
        self._results: dict[ItemRef, ResultRecord] = {}
        self._output_tokens = [0, 0]  # sum, count of observed outputs
        self._last_merge = 0.0
        self._deadline = 0.0
        self._rng = random.Random()
        self._run_lock = RunLock(store.run_dir)
        self._spend: RealtimeSpend | None = None  # set by `start`: its price check may refuse the run
        self.calls = 0
        self.flex_refusals = 0  # flex calls the provider refused for want of capacity (not billed, not attempts)
        self.flex_fallbacks: dict[str, int] = {}  # requests sent elsewhere after flex_patience: where → count
        self._errors_said: set[str] = set()  # error codes a request has ended with, said once each
        self.deferred: list[ItemRef] = []  # left for a batch job by `on_flex_unavailable: batch`

    # -- public -------------------------------------------------------------------------------------------

    def run(self, items: Sequence[PromptItem] | ItemSource) -> EngineSummary:
        """Run (or resume) until every item has a final outcome or the timeout; Ctrl+C keeps what finished."""
        self.start(items)
        try:
            while True:
                raise_if_requested()  # a Ctrl+C lost in a finalizer stops the run here (`speceval.interrupts`)
                summary = self.tick()
                if summary is not None:
                    return summary
                self._sleep(self.next_wait)
                advance_enclosing(self.next_wait)  # a conversation round blocking an experiment (`EngineLoop`)
        except BaseException:
            self.stop()
            self._run_lock.release()
            raise

    def start(self, items: Sequence[PromptItem] | ItemSource) -> None:
        """Load what the run directory already holds, queue the rest, and start the workers.

        A source's prompts are rendered one statement at a time as workers reach them (`PromptCache`), not all
        at once."""
        self._spend = RealtimeSpend(self.model, self.options.budget)  # before the lock: a refusal holds nothing
        self._run_lock.acquire()  # one process per run directory, or two would send the same requests
        self._prompts = PromptCache(as_source(items))
        self._order = self._prompts.refs()
        wanted = set(self._order)
        for statement_id in dict.fromkeys(ref.statement_id for ref in self._order):
            for result in self.store.load_results(statement_id):
                ref = ItemRef(statement_id, result.original_index)
                if ref in wanted:
                    self._results[ref] = result
        replayed = 0
        for entry in self.journal.read():
            ref = ItemRef(entry.statement_id, entry.record.original_index)
            if ref in wanted and self._keep(ref, entry.record):
                replayed += 1
        self._flush()  # a run killed between two merges: results/ catches up with the journal now
        # What this run already spent counts against the limit (a resume with a higher budget goes on from it).
        spend = self._spend
        spend.already_spent(sum(spend.cost(r.usage, r.service_tier) for r in self._results.values() if r.usage))
        max_attempts = self.options.max_attempts
        self._queue.extend(
            r for r in self._order if r not in self._results or not is_final(self._results[r], max_attempts)
        )
        for ref in self._queue:
            self._prompts.hold(ref)
        if replayed or len(self._queue) < len(self._order):
            logger.info(
                "resuming: %d of %d request(s) already have a final outcome; sending %d",
                len(self._order) - len(self._queue),
                len(self._order),
                len(self._queue),
            )
        self.journal.open()
        self._deadline = self._clock() + self.options.timeout_hours * 3600
        self._last_merge = self._clock()
        self.observer.started(self._summary(StopReason.RUNNING))
        self._top_up_workers()

    def tick(self) -> EngineSummary | None:
        """Collect what workers finished, merge into results/ when due; the summary once the run stops."""
        self._collect()
        now = self._clock()
        if now - self._last_merge >= self._merge_interval:
            self._flush()
        with self._lock:
            idle = not self._queue and not self._finished
        if idle and not any(w.is_alive() for w in self._workers):
            self._collect()
            return self._end(StopReason.FINISHED)
        if self._spend is not None and self._spend.reached.is_set() and not any(w.is_alive() for w in self._workers):
            self.stop()
            return self._end(StopReason.BUDGET)
        if now >= self._deadline:
            self.stop()
            return self._end(StopReason.TIMED_OUT)
        self.observer.waiting(self.next_wait, self._summary(StopReason.RUNNING))
        return None

    def stop(self) -> None:
        """Stop starting requests; write what finished to results/. Requests in flight are abandoned."""
        self._stop.set()
        self.limiter.wake()
        self._collect()
        self._flush()

    # -- workers ------------------------------------------------------------------------------------------

    def _top_up_workers(self) -> None:
        self._workers = [w for w in self._workers if w.is_alive()]
        with self._lock:
            wanted = min(self.model.options.limits.max_concurrency, len(self._queue)) - len(self._workers)
        for _ in range(max(0, wanted)):
            # Daemon threads: Ctrl+C or a timeout must not wait for calls in flight (they are simply not recorded).
            worker = threading.Thread(target=self._work, name="speceval-realtime", daemon=True)
            worker.start()
            self._workers.append(worker)

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._queue:
                    return
                ref = self._queue.popleft()
            record = self._process(ref)
            if record is None:
                with self._lock:
                    if ref in self.deferred:
                        continue  # left for a batch job; this worker takes the next input
                    self._queue.appendleft(ref)  # stopped before it was sent (or while backing off)
                return
            self.journal.append(JournalEntry(statement_id=ref.statement_id, record=record))
            with self._lock:
                self._finished.append((ref, record))

    def _estimate(self, prompt: str) -> int:
        total, count = self._output_tokens
        expected = total / count if count else DEFAULT_OUTPUT_TOKENS
        return estimate_prompt_tokens(prompt) + int(min(self.model.params.max_tokens, expected))

    def _process(self, ref: ItemRef) -> ResultRecord | None:
        """Send one input until it has an outcome worth recording; None if the run stopped first (or, with
        `on_flex_unavailable: batch`, flex kept refusing it: it is left for a batch job, `deferred`)."""
        request = self._prompts.request(ref)  # a conversation's round sends its transcript so far
        # Token estimates (rate limits, budget) count every message a request carries.
        prompt = request if isinstance(request, str) else "\n".join(m.content for m in request.messages)
        earlier = self._results.get(ref)
        attempts = earlier.attempts if earlier is not None else 0
        options = self.model.options
        spend = self._spend
        assert spend is not None  # `start` made it before any worker
        tier = options.service_tier  # asked; None: the provider's standard tier
        rate_limited = 0
        flex = _FlexWait()
        began = time.monotonic()  # the record's `seconds`: first send to the final response
        while True:
            estimate = self._estimate(prompt)
            reserved = spend.reserve(prompt, tier, self._stop)
            if reserved is None:
                return None  # the budget would be exceeded: the input stays unsent, for a resume
            permit = self.limiter.acquire(estimate, self._stop)
            if permit is None:
                spend.settle(reserved, None)
                return None
            self.calls += 1
            try:
                # Only a tier asked is passed: an adapter of a plugin that knows no tiers still serves standard.
                completion = self.model.complete(request, service_tier=tier) if tier else self.model.complete(request)
            except CallFailed as failure:
                spend.settle(reserved, None)
                if tier == "flex" and is_flex_refusal(failure):
                    # Flex has no capacity now: not billed, not an attempt, and not a rate limit of the endpoint
                    # (a shed request says nothing about the others), so only this request backs off.
                    self.limiter.release(permit, 0, failure.headers)
                    with self._lock:
                        self.flex_refusals += 1
                    delay = self._backoff(flex.refusals + 1, failure.retry_after)
                    if flex.patience_over(options.flex_patience, delay):
                        if options.on_flex_unavailable == "standard":
                            tier = None
                            self._note_fallback(ref, "standard")
                            continue
                        if options.on_flex_unavailable == "batch":
                            self._note_fallback(ref, "batch")
                            with self._lock:
                                self.deferred.append(ref)
                            return None
                    flex.waited(delay)
                    if self._stop.wait(delay):
                        return None
                    continue
                self.limiter.release(permit, 0 if failure.rate_limited else None, failure.headers)
                if failure.rate_limited:
                    self.limiter.rate_limited(failure.retry_after)
                    rate_limited += 1
                    if rate_limited <= options.max_rate_limit_retries:
                        continue
                attempts += 1
                if failure.error.retryable and attempts < self.options.max_attempts and not failure.rate_limited:
                    if self._stop.wait(self._backoff(attempts, failure.retry_after)):
                        return None
                    continue
                return self._record(ref, attempts, began, error=failure.error)
            except Exception as exc:  # a bug or an SDK surprise must not kill the worker silently
                spend.settle(reserved, None)
                self.limiter.release(permit)
                # The traceback goes to the log (handlers redact it); the record keeps a redacted one-liner.
                logger.exception("realtime call for %s[%d] failed unexpectedly", ref.statement_id, ref.original_index)
                error = RequestError(code="client_error", message=redact(f"{type(exc).__name__}: {exc}"))
                return self._record(ref, attempts + 1, began, error=error)
            usage = completion.usage
            spend.settle(reserved, usage, completion.service_tier)
            self.limiter.release(
                permit, usage.input_tokens + usage.output_tokens if usage else None, completion.headers
            )
            self.limiter.succeeded()
            if usage is not None:
                with self._lock:
                    self._output_tokens[0] += usage.output_tokens
                    self._output_tokens[1] += 1
            return self._record(ref, attempts + 1, began, completion=completion)

    def _say_error(self, ref: ItemRef, record: ResultRecord) -> None:
        """Say why a request ended without an answer, once per error code. A run whose endpoint could not be
        reached (no server at the base URL) ended with every request errored, exit 0, and nothing on the terminal or
        in the log saying why: the cause was only in each results record."""
        error = record.error
        code = (error.code if error is not None else None) or "error"
        if record.outcome is not Outcome.ERRORED or error is None or code in self._errors_said:
            return
        self._errors_said.add(code)
        logger.warning(
            "%s[%d] ended without an answer after %d attempt(s): %s: %s (further requests ending with %s are "
            "counted in the run's summary; each record in results/ keeps its error)",
            ref.statement_id,
            ref.original_index,
            record.attempts,
            code,
            error.message,
            code,
        )

    def _note_fallback(self, ref: ItemRef, where: str) -> None:
        with self._lock:
            self.flex_fallbacks[where] = self.flex_fallbacks.get(where, 0) + 1
            first = self.flex_fallbacks[where] == 1
        if first:  # once per run and destination: a shed wave would otherwise log every request
            logger.warning(
                "flex kept refusing %s[%d] for %.0f s (flex_patience): sending it %s, as on_flex_unavailable says "
                "(further requests likewise, counted in the run's summary)",
                ref.statement_id,
                ref.original_index,
                self.model.options.flex_patience,
                "at the standard tier" if where == "standard" else "in a batch job",
            )

    def _backoff(self, attempts: int, retry_after: float | None) -> float:
        options = self.model.options
        delay = min(
            options.retry_max_delay, options.retry_initial_delay * options.retry_backoff_factor ** (attempts - 1)
        )
        delay *= 0.5 + self._rng.random()  # jitter, so failed workers do not return in lockstep
        return max(delay, retry_after or 0.0)

    def _record(
        self,
        ref: ItemRef,
        attempts: int,
        began: float,
        *,
        completion: Completion | None = None,
        error: RequestError | None = None,
    ) -> ResultRecord:
        succeeded = completion is not None and completion.error is None and completion.text is not None
        if completion is not None and not succeeded:
            error = completion.error
        return ResultRecord(
            original_index=ref.original_index,
            input_text=self._prompts.text(ref),
            output_text=completion.text if succeeded and completion is not None else None,
            batch_id=self.session_id,
            outcome=Outcome.SUCCEEDED if succeeded else Outcome.ERRORED,
            error=error,
            usage=completion.usage if completion is not None else None,
            attempts=attempts,
            seconds=round(time.monotonic() - began, 6),
            service_tier=completion.service_tier if completion is not None else None,
        )

    # -- results ------------------------------------------------------------------------------------------

    def _keep(self, ref: ItemRef, record: ResultRecord) -> bool:
        """Adopt `record` as the input's current outcome (never replacing a success); False if ignored."""
        current = self._results.get(ref)
        if current is not None and current.outcome is Outcome.SUCCEEDED:
            return False
        self._results[ref] = record
        self._unmerged.setdefault(ref.statement_id, []).append(record)
        return True

    def _collect(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
        requeued = False
        for ref, record in finished:
            self._keep(ref, record)
            final = is_final(self._results[ref], self.options.max_attempts)
            if not final and not self._stop.is_set():
                with self._lock:
                    self._queue.append(ref)
                requeued = True
            else:
                self._prompts.release(ref)  # its statement's prompts go once no request of it is left
                if final:
                    self._say_error(ref, self._results[ref])
        if requeued:
            self._top_up_workers()

    def _flush(self) -> None:
        unmerged, self._unmerged = self._unmerged, {}
        for statement_id, records in unmerged.items():
            self.store.merge_results(statement_id, records)
        self._last_merge = self._clock()

    def _end(self, reason: StopReason) -> EngineSummary:
        self._flush()
        self._run_lock.release()
        if not any(w.is_alive() for w in self._workers):
            self.journal.close()
        summary = self._summary(reason)
        self.observer.finished(summary)
        stats = self.limiter.stats
        logger.info(
            "realtime run %s: %d call(s), %d answered 429 (%d cool-down(s)), %d flex refusal(s)%s",
            self.session_id,
            self.calls,
            stats.rate_limited,
            stats.cooldowns,
            self.flex_refusals,
            "".join(f", {n} sent on by flex to {where}" for where, n in sorted(self.flex_fallbacks.items())),
        )
        return summary

    def _summary(self, reason: StopReason) -> EngineSummary:
        counts: Counter[Outcome] = Counter()
        usage = Usage()
        tiers: dict[str, TierCount] = {}
        final = 0
        for ref in self._order:
            result = self._results.get(ref)
            if result is None:
                continue
            usage.add(result.usage)
            if result.usage is not None:  # an answer billed at the tier that served it
                tier = tiers.setdefault(served_tier(result.service_tier), TierCount())
                tier.requests += 1
                tier.usage.add(result.usage)
            if is_final(result, self.options.max_attempts):
                counts[result.outcome] += 1
                final += 1
        return EngineSummary(
            reason=reason,
            total_requests=len(self._order),
            outcome_counts=dict(counts),
            outstanding=len(self._order) - final,
            usage=usage,
            tiers=tiers if self.model.options.service_tier else {},
            flex_refusals=self.flex_refusals,
            flex_fallbacks=dict(self.flex_fallbacks),
        )

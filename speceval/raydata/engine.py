"""`RayEngine`: the realtime engine's run directory, journal, resume and summary, with Ray doing the sending.

The realtime engine keeps everything a run needs: which inputs already have a final outcome (from `results/`
and the fsynced journal), merging into `results/`, requeuing retryable failures, the summary, Ctrl+C. What
differs is who sends the requests: instead of one thread per request in flight, one driver thread hands the
pending inputs of a round to Ray as one dataset and appends each block of answers to the journal (one write
and one fsync per block) as Ray streams it back, so a SIGKILL loses at most the blocks in flight.

A row Ray itself gives up on (retries of a 429, 5xx or lost connection exhausted) fails Ray's whole dataset,
not just the row. The driver then splits what is left of that dataset in halves and sends each again, so the
failing row ends up alone: only then is an attempt charged to it, and the rest of the round finishes normally.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from speceval.batch.chunking import item_custom_id
from speceval.batch.journal import JournalEntry
from speceval.batch.records import ItemRef, Outcome, RequestError, RequestOutcome, ResultRecord
from speceval.raydata.model import RayModel, ensure_ray
from speceval.realtime.engine import RealtimeEngine
from speceval.redaction import redact

logger = logging.getLogger(__name__)


def custom_id(ref: ItemRef) -> str:
    """The custom id Ray rows carry: stable across rounds and resumes."""
    return item_custom_id(ref.statement_id, ref.original_index)


class RayEngine(RealtimeEngine):
    """Runs prompt items through a `RayModel`; same surface and run directory as the other engines."""

    model: RayModel  # type: ignore[assignment]  # the realtime engine's model, served by Ray

    def __init__(self, model: RayModel, *args: object, **kwargs: object) -> None:
        super().__init__(model, *args, **kwargs)  # type: ignore[arg-type]
        self._driver: threading.Thread | None = None
        self.rounds = 0

    def tick(self):  # type: ignore[no-untyped-def]
        # Requests requeued after a retryable failure start a new round once the current one is over.
        self._top_up_workers()
        return super().tick()

    def _top_up_workers(self) -> None:
        if self._driver is not None and self._driver.is_alive():
            return
        with self._lock:
            refs, self._queue = list(self._queue), deque()
        if not refs or self._stop.is_set():
            with self._lock:
                self._queue.extend(refs)
            return
        # Ray is started (or joined) here, in the thread that drives the engine, and only once there is something
        # to send: its signal handlers and local cluster belong to the driver process, not to the streaming thread,
        # and a rerun with nothing pending must not wait for a cluster.
        ensure_ray(self.model.settings.ray_address)
        self.rounds += 1
        self._driver = threading.Thread(target=self._drive, args=(refs,), name="speceval-ray", daemon=True)
        self._workers = [self._driver]
        self._driver.start()

    def _drive(self, refs: list[ItemRef]) -> None:
        groups: deque[list[ItemRef]] = deque([refs])
        while groups and not self._stop.is_set():
            group = groups.popleft()
            answered, failure = self._send(group)
            left = [ref for ref in group if ref not in answered]
            if not left or self._stop.is_set():
                continue
            if failure is not None and len(left) > 1:
                half = len(left) // 2
                groups.extendleft([left[half:], left[:half]])  # the first half next, then the second
            elif failure is not None:
                self._finish_block([(left[0], None, failure)])
            else:
                # Ray finished the dataset without a row we sent: not answered, so sent again next round.
                error = RequestError(code="missing", message="Ray returned no row for this request", retryable=True)
                self._finish_block([(ref, None, error) for ref in left])
        if self._stop.is_set():
            with self._lock:
                self._queue.extend(ref for group in groups for ref in group)

    def _send(self, group: list[ItemRef]) -> tuple[set[ItemRef], RequestError | None]:
        """Run one dataset: the inputs answered, and the error if Ray gave up on the dataset."""
        by_id = {custom_id(ref): ref for ref in group}
        answered: set[ItemRef] = set()
        self.calls += len(group)
        try:
            for block in self.model.run([(cid, self._prompts.text(ref)) for cid, ref in by_id.items()]):
                finished: list[tuple[ItemRef, RequestOutcome | None, RequestError | None]] = []
                for outcome in block:
                    ref = by_id.get(outcome.custom_id)
                    if ref is None or ref in answered:
                        logger.error("Ray returned a row for unknown custom id %r; ignored", outcome.custom_id)
                        continue
                    answered.add(ref)
                    finished.append((ref, outcome, None))
                self._finish_block(finished)
                if self._stop.is_set():
                    break
        except Exception as exc:  # Ray fails the whole dataset when it gives up on one row
            message = redact(f"{type(exc).__name__}: {exc}")[:2000]
            first_line = message.splitlines()[0] if message else ""
            logger.warning(
                "Ray dataset of %d request(s) failed after %d answered: %s", len(group), len(answered), first_line
            )
            return answered, RequestError(code="ray_error", message=message, retryable=True)
        return answered, None

    def _finish_block(self, block: list[tuple[ItemRef, RequestOutcome | None, RequestError | None]]) -> None:
        """Journal a block of outcomes with one durable write, then hand them to the engine."""
        records = [(ref, self._to_record(ref, outcome, error)) for ref, outcome, error in block]
        if not records:
            return
        self.journal.append_many([JournalEntry(statement_id=ref.statement_id, record=rec) for ref, rec in records])
        with self._lock:
            self._finished.extend(records)

    def _to_record(self, ref: ItemRef, outcome: RequestOutcome | None, error: RequestError | None) -> ResultRecord:
        earlier = self._results.get(ref)
        attempts = (earlier.attempts if earlier is not None else 0) + 1
        succeeded = outcome is not None and outcome.outcome is Outcome.SUCCEEDED
        return ResultRecord(
            original_index=ref.original_index,
            input_text=self._prompts.text(ref),
            output_text=outcome.output_text if succeeded and outcome is not None else None,
            batch_id=self.session_id,
            outcome=outcome.outcome if outcome is not None else Outcome.ERRORED,
            error=outcome.error if outcome is not None else error,
            usage=outcome.usage if outcome is not None else None,
            attempts=attempts,
            custom_id=custom_id(ref),
        )

"""Collecting a terminal job: download its answers, write every request's outcome, update the ledger.

The per-request work runs on plain values: answers are `Answer` tuples kept in a list by position in the job
(the custom id gives the position, see `RequestMap.position_of`), results files are read and written as dicts
validated once per file (`RunStore.load_rows`). A job of 50,000 requests builds no model per request.
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import itemgetter

from speceval.batch.answers import Answer, failed
from speceval.batch.ledger import Ledger
from speceval.batch.model import BatchedModel
from speceval.batch.records import BatchRecord, JobState, Outcome, ResultRow, UsageRow, prompt_sha256, utcnow
from speceval.batch.store import PROMPT_DIGEST_SIZE, RunStore
from speceval.errors import ProviderError, TransientProviderError
from speceval.wire.usage import Tokens

logger = logging.getLogger(__name__)

# A result download that keeps failing (truncated, 5xx) is retried this many times; then the requests it
# should have answered are recorded as missing and resubmitted rather than waited for forever.
MAX_COLLECT_FAILURES = 5
# A completed job whose results lack some requests is downloaded this many extra times before they are resubmitted.
MISSING_REDOWNLOADS = 1

# When a result appears twice for one custom id, keep the most informative one.
_OUTCOME_RANK = {
    Outcome.SUCCEEDED: 4,
    Outcome.ERRORED: 3,
    Outcome.EXPIRED: 2,
    Outcome.CANCELLED: 1,
    Outcome.MISSING: 0,
}


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a job is collected (then as it was).

    A job's answers are held until its results are written (50,000 tuples for a full OpenAI job), and each 25% more
    objects alive sets off a full collection that walks them all: four in a 100,000-request generation run, 0.3-0.7
    s each on a loaded machine (benchmarks/scale_generation.py's setup), where its floor had none. Nothing built
    here refers back to itself, so reference counting alone frees all of it; garbage with cycles made meanwhile (by
    this or another thread) waits for the next collection after this one.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@_cycle_collector_paused()
def collect_job(
    model: BatchedModel,
    store: RunStore,
    ledger: Ledger,
    texts_of: Callable[[str], dict[int, str]],
    record: BatchRecord,
) -> Counter[Outcome]:
    """Write every request's outcome of a terminal job, mark the record collected and save it.

    Returns the outcomes written, by kind. Raises TransientProviderError when the download must be retried
    (the record, with its failure count, is saved first).
    """
    answers, unavailable = _download(model, store, record)
    got = len(answers) - answers.count(None)
    missing = len(answers) - got
    if (
        missing
        and not unavailable
        and record.state is JobState.COMPLETED
        and record.collect_failures < MISSING_REDOWNLOADS
    ):
        # A completed job should answer every request. A download cut at a line boundary looks exactly like
        # missing lines, so fetch once more before paying to resubmit them.
        record.collect_failures += 1
        store.save_record(record)
        raise TransientProviderError(
            record.provider, "download results", f"{missing} result(s) missing; downloading again to be sure"
        )

    # One statement at a time: its inputs file and results file are read, updated and written once, so memory
    # follows the job's size, not the run's. A statement's inputs may sit in several spans of the job.
    spans_of: dict[str, list[tuple[int, int, int]]] = {}
    position = 0
    for statement_id, first, count in record.refs:
        spans_of.setdefault(statement_id, []).append((position, first, count))
        position += count
    counts: Counter[Outcome] = Counter()
    # Usage is summed once per job (in C) from these, not once per request into two models.
    job_tokens: list[Tokens] = []
    new_tokens: list[Tokens] = []  # what the ledger has not counted yet (not written by an interrupted collect)
    batch_id = record.batch_id
    # A judge run records each prompt's hash: kept when the job was built (no prompt is rendered again here);
    # a job built before they were kept has its prompts rendered and hashed, as then.
    hashes = store.load_prompt_hashes(record.idempotency_key, record.size) if store.prompts_once else None
    for statement_id, spans in spans_of.items():
        texts = texts_of(statement_id) if hashes is None else None
        existing: dict[int, ResultRow] = {row["original_index"]: row for row in store.load_rows(statement_id)}
        for start, first, count in spans:
            for offset in range(count):
                index = first + offset
                earlier = existing.get(index)
                if earlier is not None and earlier["outcome"] is Outcome.SUCCEEDED:
                    continue  # what was paid for and received stays
                answer = answers[start + offset] or _absent(record, start + offset, unavailable)
                # A collection interrupted by a crash may already have written this job's outcome.
                again = earlier is not None and earlier["batch_id"] == batch_id
                before = 0 if earlier is None else earlier.get("attempts", 1)
                attempts = before if again else before + 1
                error = answer.error
                tokens = answer.usage
                row: ResultRow = {
                    "original_index": index,
                    "input_text": texts[index] if texts is not None else "",
                    "output_text": answer.output_text if answer.outcome is Outcome.SUCCEEDED else None,
                    "batch_id": batch_id,
                    "outcome": answer.outcome,
                    "error": error.model_dump() if error is not None else None,  # type: ignore[typeddict-item]
                    "usage": _usage_row(tokens) if tokens is not None else None,
                    "attempts": attempts,
                    "custom_id": answer.custom_id,
                }
                if store.prompts_once:
                    # The request file holds the prompt; a judge run's records keep its hash (see RunStore).
                    del row["input_text"]
                    if hashes is not None:
                        at = (start + offset) * PROMPT_DIGEST_SIZE
                        row["input_sha256"] = hashes[at : at + PROMPT_DIGEST_SIZE].hex()
                    else:
                        row["input_sha256"] = prompt_sha256(texts[index])  # type: ignore[index]
                existing[index] = row
                retryable = error is not None and error.retryable
                ledger.note(statement_id, index, answer.outcome, retryable, attempts, None)
                counts[answer.outcome] += 1
                if tokens is not None:
                    job_tokens.append(tokens)
                    if not again:
                        new_tokens.append(tokens)
        store.write_rows(statement_id, existing)
    ledger.usage.add(_total(new_tokens))
    record.collected = True
    record.outcome_counts = dict(counts)
    record.usage = _total(job_tokens).typed()
    record.updated_at = utcnow()
    store.save_record(record)
    ledger.set_flight(record.refs, False)
    logger.info(
        "job %s collected: %s",
        record.batch_id,
        ", ".join(f"{n} {o.value}" for o, n in sorted(counts.items())) or "nothing new",
    )
    return counts


def _download(model: BatchedModel, store: RunStore, record: BatchRecord) -> tuple[list[Answer | None], str | None]:
    """The job's answers by position (None where the provider reported nothing), and why none are available
    when the download failed for good."""
    answers: list[Answer | None] = [None] * record.size
    foreign = 0
    locate = record.locator()
    try:
        for answer in model.iter_answers(record):
            position = locate(answer.custom_id)
            if position is None:
                foreign += 1
                logger.debug("job %s returned a result for unknown id %r", record.batch_id, answer.custom_id)
                continue
            previous = answers[position]
            if previous is None or _OUTCOME_RANK[answer.outcome] > _OUTCOME_RANK[previous.outcome]:
                answers[position] = answer
    except TransientProviderError as exc:
        record.collect_failures += 1
        store.save_record(record)
        if record.collect_failures < MAX_COLLECT_FAILURES:
            raise
        return _unavailable(record, f"results could not be downloaded after {record.collect_failures} tries: {exc}")
    except ProviderError as exc:
        return _unavailable(record, f"results are not available from the provider: {exc}")
    if foreign:
        # Results under ids this job never sent: a provider bug, or a job adopted after a crash that was not
        # ours (Anthropic jobs carry no tag). Either way its requests are retried, loudly.
        logger.error(
            "job %s returned %d result(s) with custom ids it was never sent (%d of its own matched); "
            "unmatched requests are recorded as missing and resubmitted",
            record.batch_id,
            foreign,
            len(answers) - answers.count(None),
        )
    return answers, None


def _total(tokens: list[Tokens]) -> Tokens:
    return Tokens(*(sum(map(itemgetter(column), tokens)) for column in range(len(Tokens._fields))))


def _usage_row(tokens: Tokens) -> UsageRow:
    # A literal, not `Tokens._asdict()`: this runs once per request and _asdict is three times slower.
    return {
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "cached_input_tokens": tokens[2],
        "cache_write_tokens": tokens[3],
    }


def _unavailable(record: BatchRecord, reason: str) -> tuple[list[Answer | None], str]:
    logger.error("job %s: %s; its requests will be resubmitted", record.batch_id, reason)
    return [None] * record.size, reason  # a stream cut short is not trustworthy as a whole


def _absent(record: BatchRecord, position: int, unavailable: str | None) -> Answer:
    """The outcome of a request the provider reported nothing for, by the state of its job."""
    custom_id = record.custom_id(position)
    if unavailable:
        return failed(custom_id, Outcome.MISSING, "results_unavailable", unavailable, retryable=True)
    if record.state is JobState.FAILED:
        message = record.error or "the provider marked the whole job as failed"
        return failed(custom_id, Outcome.ERRORED, "batch_failed", message, retryable=True)
    if record.state is JobState.EXPIRED:
        return failed(custom_id, Outcome.EXPIRED, "batch_expired", "the job expired before this request ran")
    if record.state is JobState.CANCELLED:
        return failed(custom_id, Outcome.CANCELLED, "batch_cancelled", "the job was cancelled before this request ran")
    message = "the provider returned no result for this request"
    return failed(custom_id, Outcome.MISSING, "result_missing", message, retryable=True)

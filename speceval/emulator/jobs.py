"""Provider-neutral batch jobs: the stored record, its lifecycle and the outcome of each request.

Progress is a pure function of wall-clock time and the timestamps stored in the job (no timers, no threads), so a
new emulator loaded from a state directory continues a job exactly where the old one left it.

Lifecycle with turnaround T after `created_at`: queued for 0.1·T (validating / pending), running until 0.9·T,
finalizing until T, then terminal. A failing job fails at 0.1·T; an expiring job expires at T with only part
of its requests done; a cancel takes 0.1·T (at least 10 ms) to take effect.
"""

from __future__ import annotations

import functools
import math
import os
import random
import secrets
import string
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from speceval.emulator.faults import ERROR_MARKER, JobPlan, unit_hash
from speceval.emulator.prompt_cache import NO_CACHE, CacheUse, PrefixCache
from speceval.emulator.responder import Responder, estimate_tokens
from speceval.emulator.structured import answer_text

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits


# Ids need uniqueness, not secrecy: a fast PRNG seeded from the OS (result files hold ~3 ids per line,
# and `secrets.choice` per character made writing a 50k-line file take seconds).
_RANDOM = random.Random(secrets.randbits(128))
# Seeded again in a forked child (as `random`'s own generator is): a child inherits the generator's state, so two
# processes forked from one parent made the same ids, and a second offline run's new batch took the id of the
# first run's batch in the same `.emulator/` state (the study matrix's late clock, its commands forked: 40 of 532
# requests never sent).
os.register_at_fork(after_in_child=lambda: _RANDOM.seed(secrets.randbits(128)))


def random_id(prefix: str, length: int = 24, alphabet: str = _ALNUM) -> str:
    """A fresh random identifier such as `batch_…` (random, so ids never repeat across restarts)."""
    return prefix + "".join(_RANDOM.choices(alphabet, k=length))


def random_lower_id(prefix: str = "", length: int = 16) -> str:
    """A lowercase alphanumeric identifier, as Gemini resource names require."""
    return random_id(prefix, length, _LOWER_ALNUM)


class RequestItem(BaseModel):
    """One request of a job, reduced to what the emulator needs to answer it."""

    custom_id: str = Field(description="the client's id (OpenAI/Anthropic custom_id, Gemini key)")
    model: str = Field(description="model name the answer claims to come from")
    prompt: str = Field(description="all text of the request, concatenated")
    metadata: dict[str, Any] | None = Field(default=None, description="Gemini inline metadata, echoed back")
    error_type: str | None = Field(
        default=None,
        description="the provider's error type this request fails with (a server-side fault, or a retired model)",
    )
    cache_breakpoint: int | None = Field(
        default=None, description="Anthropic: characters of `prompt` up to the end of the last cache_control block"
    )
    response_schema: dict[str, Any] | None = Field(
        default=None, description="the JSON schema a structured-output request asks its answer to conform to"
    )
    max_tokens: int | None = Field(
        default=None, description="the request's output limit: no more output tokens are billed (reported)"
    )


def gemini_output_limit(request: object) -> int | None:
    """`generationConfig.maxOutputTokens` of a Gemini request (either spelling)."""
    config = request.get("generationConfig", request.get("generation_config")) if isinstance(request, dict) else None
    if not isinstance(config, dict):
        return None
    return output_limit(config.get("maxOutputTokens", config.get("max_output_tokens")))


def output_limit(value: object) -> int | None:
    """A request's output-token limit as its body gives it (None when absent or not a positive whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def within_limit(text: str, limit: int | None, *, at_limit: bool) -> str:
    """`text`, padded with `at_limit` to exactly `limit` output tokens: an answer that runs to its request's
    max_tokens (a budget's worst case). Otherwise unchanged: `output_tokens` caps what is billed."""
    if limit is None or not at_limit:
        return text
    return text.ljust(limit * 4)  # estimate_tokens counts four characters a token


def billed_output_tokens(text: str, limit: int | None) -> int:
    """Output tokens billed for `text`: never more than the request's max_tokens, as a provider bills. (The text
    itself is kept whole, so answers read the same whatever the limit.)"""
    tokens = estimate_tokens(text)
    return tokens if limit is None else min(tokens, limit)


class JobFailure(BaseModel):
    """A reason the whole job fails validation (OpenAI `errors.data[]` entry, Gemini operation error)."""

    code: str
    message: str
    param: str | None = None
    line: int | None = None


class Job(BaseModel):
    """A batch job as stored (and persisted) by the emulator."""

    provider: str
    id: str
    seq: int = 0
    created_at: float = Field(description="wall-clock creation time (unix seconds, float)")
    requests: list[RequestItem]
    plan: JobPlan
    failures: list[JobFailure] = Field(default_factory=list, description="non-empty: the job fails validation")
    cancel_requested_at: float | None = None
    deleted: bool = False
    archived_at: float | None = Field(default=None, description="when the results' retention ran out (None: kept)")
    finalized: bool = Field(default=False, description="terminal outputs (files) have been generated")
    params: dict[str, Any] = Field(default_factory=dict, description="provider-specific create parameters")
    outputs: dict[str, str] = Field(default_factory=dict, description="provider-specific generated file ids")
    summary: dict[str, int] = Field(
        default_factory=dict, description="final counts per outcome kind plus input_tokens/output_tokens"
    )


class Phase(StrEnum):
    """Provider-neutral lifecycle phase; each provider maps it to its own state names."""

    QUEUED = "queued"
    RUNNING = "running"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


TERMINAL = frozenset({Phase.COMPLETED, Phase.FAILED, Phase.EXPIRED, Phase.CANCELLED})


class Kind(StrEnum):
    """What happened to one request."""

    SUCCEEDED = "succeeded"
    INVALID = "invalid"
    SERVER_ERROR = "server_error"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Timeline:
    """The instants of a job's lifecycle (unix seconds)."""

    created: float
    start: float
    finalize: float
    end: float
    cancel_requested: float | None
    cancelled: float | None


def timeline(job: Job) -> Timeline:
    """The lifecycle instants of `job`."""
    turnaround = job.plan.turnaround_for(job.requests[0].model if job.requests else None)
    created = job.created_at
    cancelled = None
    if job.cancel_requested_at is not None:
        cancelled = job.cancel_requested_at + max(0.1 * turnaround, 0.01)
    return Timeline(
        created=created,
        start=created + 0.1 * turnaround,
        finalize=created + 0.9 * turnaround,
        end=created + turnaround,
        cancel_requested=job.cancel_requested_at,
        cancelled=cancelled,
    )


def phase(job: Job, now: float) -> Phase:
    """The phase of `job` at wall-clock time `now`."""
    times = timeline(job)
    if times.cancelled is not None:
        # A cancel is only accepted while the job is not terminal, so it always wins from then on.
        return Phase.CANCELLED if now >= times.cancelled else Phase.CANCELLING
    if job.failures:
        return Phase.FAILED if now >= times.start else Phase.QUEUED
    if now >= times.end:
        return Phase.EXPIRED if job.plan.expire else Phase.COMPLETED
    if now >= times.finalize and not job.plan.expire:
        return Phase.FINALIZING
    return Phase.RUNNING if now >= times.start else Phase.QUEUED


def _target_count(job: Job) -> int:
    """How many requests the job will have executed when it ends (before any cancel)."""
    n = len(job.requests)
    if job.failures:
        return 0
    if job.plan.expire:
        return math.floor(n * job.plan.complete_fraction_on_expiry)
    return n


def executed_count(job: Job, at: float) -> int:
    """How many requests have been executed by time `at` (a linear ramp while running)."""
    times = timeline(job)
    if times.cancel_requested is not None:
        at = min(at, times.cancel_requested)
    target = _target_count(job)
    if at < times.start or target == 0:
        return 0
    if at >= times.finalize or times.finalize <= times.start:
        return target
    return math.floor(target * (at - times.start) / (times.finalize - times.start))


def processing_order(job: Job) -> list[int]:
    """A seeded permutation of request indices: the order requests are executed (and, shuffled, emitted)."""
    return list(_permutation(job.plan.seed, job.id, len(job.requests)))


@functools.lru_cache(maxsize=256)
def _permutation(seed: int, job_id: str, size: int) -> tuple[int, ...]:
    # Cached: every poll of a large job needs it, and it never changes for a given job.
    order = list(range(size))
    random.Random(f"{seed}:{job_id}").shuffle(order)
    if size >= 2 and order == sorted(order):
        # A shuffle that happens to be the identity would hide order bugs: rotate it.
        order = order[1:] + order[:1]
    return tuple(order)


def output_order(job: Job) -> list[int]:
    """The order in which result lines are emitted."""
    if job.plan.shuffle_results:
        return processing_order(job)
    return list(range(len(job.requests)))


def executed_kind(job: Job, index: int) -> Kind:
    """The outcome kind of request `index`, given that it was executed."""
    item = job.requests[index]
    if ERROR_MARKER in item.prompt:
        return Kind.INVALID
    if item.error_type:
        return Kind.SERVER_ERROR
    if request_draw(job, index, "error") < job.plan.error_rate:
        return Kind.SERVER_ERROR
    return Kind.SUCCEEDED


def request_draw(job: Job, index: int, what: str) -> float:
    """A number in [0, 1) deciding fault `what` for request `index` of `job`.

    Drawn from the job's creation number, not its (random) id, so a scenario with a given seed misbehaves the same
    way on every run: a test of "some lines are dropped" cannot pass or fail by luck. A resubmission is a new job
    with a new number, so it gets fresh draws.
    """
    return unit_hash(job.plan.seed, job.seq, index, what)


@dataclass(frozen=True)
class Outcome:
    """The final result of one request."""

    index: int
    item: RequestItem
    kind: Kind
    text: str | None
    input_tokens: int
    output_tokens: int
    dropped: bool
    duplicated: bool
    cache: CacheUse = NO_CACHE
    """Of `input_tokens`, those read from and written to the prompt cache (`speceval.emulator.prompt_cache`)."""


def final_outcomes(
    job: Job, final_phase: Phase, responder: Responder, prompt_cache: PrefixCache | None = None
) -> list[Outcome]:
    """The outcome of every request of a terminal job, in input order.

    `prompt_cache` is the emulator's (shared by its jobs); without one the job sees a cold cache of its own.
    """
    order = processing_order(job)
    if final_phase is Phase.FAILED:
        done: set[int] = set()
    elif final_phase is Phase.CANCELLED:
        done = set(order[: executed_count(job, job.cancel_requested_at or job.created_at)])
    else:
        done = set(order[: _target_count(job)])
    unexecuted = Kind.CANCELLED if final_phase is Phase.CANCELLED else Kind.EXPIRED
    # Requests fill the prompt cache in the order they are executed; only answered ones are billed.
    prefixes = prompt_cache if prompt_cache is not None else PrefixCache()
    now = timeline(job).end
    cache: dict[int, CacheUse] = {}
    for index in order:
        if index in done and executed_kind(job, index) is Kind.SUCCEEDED:
            item = job.requests[index]
            cache[index] = prefixes.use(job.provider, item.model, item.prompt, item.cache_breakpoint, now)
    outcomes = []
    for index, item in enumerate(job.requests):
        kind = executed_kind(job, index) if index in done else unexecuted
        text = answer_text(responder, item.model, item.prompt, item.response_schema) if kind is Kind.SUCCEEDED else None
        if text is not None:
            text = within_limit(text, item.max_tokens, at_limit=job.plan.answer_at_max_tokens)
        executed = index in done
        outcomes.append(
            Outcome(
                index=index,
                item=item,
                kind=kind,
                text=text,
                input_tokens=estimate_tokens(item.prompt) if executed else 0,
                output_tokens=billed_output_tokens(text, item.max_tokens) if text is not None else 0,
                dropped=executed and request_draw(job, index, "drop") < job.plan.drop_rate,
                duplicated=executed and request_draw(job, index, "duplicate") < job.plan.duplicate_rate,
                cache=cache.get(index, NO_CACHE),
            )
        )
    return outcomes


def emitted(job: Job, outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes in the order their result lines are written, with drops removed and duplicates repeated."""
    lines = []
    for index in output_order(job):
        outcome = outcomes[index]
        if outcome.dropped:
            continue
        lines.append(outcome)
        if outcome.duplicated:
            lines.append(outcome)
    return lines


def progress_counts(job: Job, now: float) -> tuple[int, int, int]:
    """(executed, succeeded, errored) among the requests executed by `now`."""
    count = executed_count(job, now)
    key = (job.id, job.plan.seed, job.plan.error_rate)
    successes = _SUCCESS_PREFIX.get(key)
    if successes is None:
        # Prefix sums over the processing order, cached per job: polls of big jobs stay cheap.
        successes = [0]
        for index in processing_order(job):
            successes.append(successes[-1] + (executed_kind(job, index) is Kind.SUCCEEDED))
        if len(_SUCCESS_PREFIX) > 256:
            _SUCCESS_PREFIX.clear()
        _SUCCESS_PREFIX[key] = successes
    succeeded = successes[count]
    return count, succeeded, count - succeeded


_SUCCESS_PREFIX: dict[tuple[str, int, float], list[int]] = {}


def settled_counts(job: Job, now: float, current: Phase) -> tuple[int, int]:
    """(succeeded, failed) requests: the final counts once the job is terminal, else those executed by `now`."""
    if current in TERMINAL:
        failed = job.summary.get(Kind.INVALID.value, 0) + job.summary.get(Kind.SERVER_ERROR.value, 0)
        return job.summary.get(Kind.SUCCEEDED.value, 0), failed
    _, succeeded, failed = progress_counts(job, now)
    return succeeded, failed


def google_end_time(times: Timeline, current: Phase) -> float | None:
    """When a Gemini or Vertex job ended (a failed one at its start, when validation refused it); None: not yet."""
    return {
        Phase.COMPLETED: times.end,
        Phase.EXPIRED: times.end,
        Phase.FAILED: times.start,
        Phase.CANCELLED: times.cancelled,
    }.get(current)


def summarize(outcomes: list[Outcome]) -> dict[str, int]:
    """Counts per outcome kind (every kind present, zero when absent) and token totals."""
    summary = {kind.value: 0 for kind in Kind}
    for outcome in outcomes:
        summary[outcome.kind.value] += 1
    summary["input_tokens"] = sum(o.input_tokens for o in outcomes if o.kind is Kind.SUCCEEDED)
    summary["output_tokens"] = sum(o.output_tokens for o in outcomes if o.kind is Kind.SUCCEEDED)
    return summary

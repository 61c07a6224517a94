"""Typed records of the batch engine: what a job is, what a request's outcome is, and what we write to disk.

Every record that is a file of ours carries `schema_version`, so that later versions can migrate old runs.
Provider-specific identifiers (uploaded file ids, result locations) are typed fields of that provider's handle,
never free-form keys.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,  # pydantic reads TypedDicts from here before Python 3.12
)

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator
from typing_extensions import TypedDict

from speceval.batch.refmap import ItemRef, RefSpan, RequestMap
from speceval.wire.usage import Usage

__all__ = ["ItemRef", "RefSpan"]  # re-exported: they were defined here

SCHEMA_VERSION = 1
# Intents and batch records store their custom-id map as spans since version 2 (version 1 files still load).
MAP_SCHEMA_VERSION = 2


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC (all our timestamps are UTC)."""
    return datetime.now(UTC)


class Outcome(StrEnum):
    """The closed set of outcomes a request can have. Never encoded as text inside an output."""

    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    MISSING = "missing"


class JobState(StrEnum):
    """Provider job states, normalised across providers (the provider's raw state is kept beside it)."""

    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """True when the provider will not change this job any more."""
        return self in (JobState.COMPLETED, JobState.FAILED, JobState.EXPIRED, JobState.CANCELLED)


class RequestError(BaseModel):
    """Why a request did not succeed, in the provider's own words.

    Attributes:
        code: the provider's error code or type (e.g. 'invalid_request_error', 'batch_expired'), if any.
        message: the provider's message (credentials redacted).
        status_code: the HTTP status the provider attached to this request, if any.
        retryable: whether resubmitting the same request may succeed (server errors, rate limits, expiry).
    """

    code: str | None = None
    message: str
    status_code: int | None = None
    retryable: bool = False


class RequestOutcome(BaseModel):
    """The outcome of one request inside a provider job, keyed by the custom id we gave it."""

    custom_id: str
    outcome: Outcome
    output_text: str | None = None
    error: RequestError | None = None
    usage: Usage | None = None


# --- Provider handles: the provider-specific ids of one job, typed per provider. -------------------------


class OpenAIHandle(BaseModel):
    """OpenAI Batch API: the uploaded input file and, once known, the output and error files."""

    provider: Literal["openai"] = "openai"
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None


class AnthropicHandle(BaseModel):
    """Anthropic Message Batches: requests are sent inline; results are streamed from `results_url`."""

    provider: Literal["anthropic"] = "anthropic"
    results_url: str | None = None


class GeminiHandle(BaseModel):
    """Gemini Batch API: an uploaded JSONL (file mode) or inline requests, and where results landed."""

    provider: Literal["gemini"] = "gemini"
    input_file_name: str | None = None
    inline: bool = False
    responses_file_name: str | None = None


class VertexHandle(BaseModel):
    """Vertex AI batch prediction: GCS input object and the output directory the job itself reported."""

    provider: Literal["vertex"] = "vertex"
    input_uri: str | None = None
    output_dir: str | None = None


class RealtimeHandle(BaseModel):
    """Realtime (non-batch) endpoints: the 'job' is a local concurrent run; nothing remote to track."""

    provider: Literal["realtime"] = "realtime"


BUILT_IN_HANDLES = frozenset({"openai", "anthropic", "gemini", "vertex", "realtime"})
"""The `provider` tags of the typed handles above; every other tag is a `GenericHandle`."""


class GenericHandle(BaseModel):
    """The job ids of a provider added with `register_provider` (built-in providers have the typed handles above).

    Attributes:
        provider: the registered org (never one of the built-in handles' tags).
        ids: the provider's identifiers for this job (uploaded files, result locations, ...), by name.
    """

    provider: str
    ids: dict[str, str] = Field(default_factory=dict)

    @field_validator("provider")
    @classmethod
    def _not_built_in(cls, value: str) -> str:
        if value in BUILT_IN_HANDLES:
            raise ValueError(f"{value!r} has its own typed handle; a GenericHandle is for registered providers")
        return value


def _handle_tag(value: Any) -> str:
    """Which handle type a stored or given handle is: its built-in tag, else generic."""
    if isinstance(value, GenericHandle):
        return "generic"
    provider = value.get("provider") if isinstance(value, dict) else getattr(value, "provider", None)
    return provider if provider in BUILT_IN_HANDLES else "generic"


ProviderHandle = Annotated[
    Annotated[OpenAIHandle, Tag("openai")]
    | Annotated[AnthropicHandle, Tag("anthropic")]
    | Annotated[GeminiHandle, Tag("gemini")]
    | Annotated[VertexHandle, Tag("vertex")]
    | Annotated[RealtimeHandle, Tag("realtime")]
    | Annotated[GenericHandle, Tag("generic")],
    Discriminator(_handle_tag),
]
"""A job's provider ids: a typed handle per built-in provider, a `GenericHandle` for registered ones."""


class RemoteJob(BaseModel):
    """What an adapter reports about a job on the provider: its id, state and handle."""

    batch_id: str
    state: JobState
    raw_state: str
    handle: ProviderHandle
    created_at: datetime | None = None
    request_count: int | None = None
    error: str | None = None


class SubmissionIntent(RequestMap):
    """Written before a job is created remotely, retired once `metadata/<batch_id>.json` exists.

    A crash between the two leaves this file behind; on resume the engine asks the provider whether a job
    tagged with `idempotency_key` exists and adopts it instead of paying for a second one.

    Attributes:
        idempotency_key: unique per chunk; sent with the job (OpenAI metadata, Gemini display name) and used
            as the prefix of every custom id (Anthropic, which has no tag, is confirmed through those).
        request_file: path of the exact request file, relative to the run directory.
        refs: the inputs of the chunk in position order (custom ids follow from the key: see `RequestMap`).
        handle: provider ids obtained before creation (e.g. the uploaded input file), so a resume does not
            upload again.
        attempt: 1 for a first submission; n when its requests were already tried n-1 times.
        create_attempted: set (on disk) just before the create call; only then can a job exist remotely, so
            only then does a resume ask the provider before creating.
        estimated_cost_usd: the cost reserved against the budget for this job, once estimated.
    """

    schema_version: int = MAP_SCHEMA_VERSION
    idempotency_key: str
    provider: str
    model: str
    created_at: datetime = Field(default_factory=utcnow)
    request_file: str
    request_bytes: int
    handle: ProviderHandle | None = None
    attempt: int = 1
    create_attempted: bool = False
    estimated_cost_usd: float | None = None

    @property
    def request_count(self) -> int:
        """How many requests this chunk holds."""
        return self.size


class BatchRecord(RequestMap):
    """`metadata/<batch_id>.json`: everything needed to poll, collect and resume one provider job.

    Attributes:
        batch_id: the provider's job id (also the file name, made safe).
        state / raw_state: normalised and provider state at the last poll.
        refs: the inputs of the job in position order; with the key, the only way results are matched back to
            inputs (see `RequestMap`).
        collected: true once every request's outcome was written to `results/`.
        outcome_counts: outcomes per kind, once collected.
        collect_failures: downloads that failed (truncated, 5xx); after a few the missing ones are resubmitted.
        cancel_requested: set when a user cancelled this job through speceval.
        estimated_cost_usd: the cost reserved for this job before submission (when a budget was set).
        cost_usd: the cost computed from the usage the provider reported, once collected.
    """

    schema_version: int = MAP_SCHEMA_VERSION
    batch_id: str
    provider: str
    model: str
    idempotency_key: str
    attempt: int = 1
    state: JobState
    raw_state: str
    handle: ProviderHandle
    request_file: str
    request_count: int
    submitted_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    error: str | None = None
    collected: bool = False
    outcome_counts: dict[Outcome, int] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    collect_failures: int = 0
    cancel_requested: bool = False
    estimated_cost_usd: float | None = None
    cost_usd: float | None = None


def prompt_sha256(text: str) -> str:
    """The hash a record keeps in place of a prompt stored elsewhere (`ResultRecord.input_sha256`)."""
    return prompt_digest(text).hex()


def prompt_digest(text: str) -> bytes:
    """`prompt_sha256` as its 32 raw bytes (what a job's prompt hashes file holds, one after another)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class ResultRecord(BaseModel):
    """One entry of `results/<statement_id>.json` (a list ordered by `original_index`).

    `output_text` is null unless `outcome` is succeeded; `error` carries the provider's code and message.
    `attempts` counts the jobs this input was sent in, so a resume knows what may still be retried.
    A judge run's batch records (`judge_responses/`) keep the prompt's hash (`input_sha256`) instead of its text:
    the prompt is in the job's request file in `preprocessed/` already, and is most of a judge run's bytes.
    """

    original_index: int
    input_text: str = Field(
        default="",
        description="the request's prompt; empty when `input_sha256` stands for "
        "it (folders written before it was introduced always hold it)",
    )
    input_sha256: str | None = Field(default=None, description="sha256 of the prompt, which the request file holds")
    output_text: str | None
    batch_id: str | None
    outcome: Outcome
    error: RequestError | None = None
    usage: Usage | None = None
    attempts: int = 1
    custom_id: str | None = None
    seconds: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # batch records have none: their files do not grow by a key
        description="a realtime request's wall time, first send to final response, retries included (a batch "
        "job's time is its metadata record's submitted_at to ended_at)",
    )
    service_tier: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="a realtime answer's service tier as the provider reported it (`flex`, `default`, `standard`, "
        "...; priced at batch rates when `flex`); absent for batch records (served by a batch job) and when the "
        "response did not say",
    )

    def sent(self, prompt: str) -> bool:
        """Whether this record answers `prompt` (by its text, or by its hash when only that is kept)."""
        if self.input_sha256 is not None:
            return self.input_sha256 == prompt_sha256(prompt)
        return self.input_text == prompt


class ErrorRow(TypedDict):
    """`RequestError` as a plain dict (see `ResultRow`)."""

    code: NotRequired[str | None]
    message: str
    status_code: NotRequired[int | None]
    retryable: NotRequired[bool]


class UsageRow(TypedDict, total=False):
    """`Usage` as a plain dict (see `ResultRow`)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int


class ResultRow(TypedDict):
    """A `ResultRecord` as a plain dict: how the engine reads and writes results files.

    A statement's results file holds up to every input of the statement; reading it as one model per entry cost
    more than the rest of collecting. Validated against this shape once per file (`RunStore.load_rows`), entries
    stay dicts; the file format is exactly `ResultRecord`'s.
    """

    original_index: int
    input_text: NotRequired[str]
    input_sha256: NotRequired[str | None]
    output_text: str | None
    batch_id: str | None
    outcome: Outcome
    error: NotRequired[ErrorRow | None]
    usage: NotRequired[UsageRow | None]
    attempts: NotRequired[int]
    custom_id: NotRequired[str | None]
    seconds: NotRequired[float | None]
    service_tier: NotRequired[str | None]

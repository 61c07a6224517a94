"""Fault settings of the emulator and the deterministic decisions derived from them.

Every default describes a well-behaved, fast provider. Per-request decisions (which request errors, which result
is dropped or duplicated) are pure functions of a hash, so the same job always misbehaves the same way, also
after the emulator restarts over a persisted state directory.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, field_validator

#: A request whose prompt text contains this marker is answered with a provider "invalid request" error.
ERROR_MARKER = "[[emulator:error]]"
#: A request whose prompt contains this marker times out server-side the first time the emulator runs that prompt
#: (Anthropic `timeout_error`), and succeeds when it is sent again: a transient per-request failure.
TIMEOUT_ONCE_MARKER = "[[emulator:timeout-once]]"

PROVIDERS = ("openai", "anthropic", "gemini")
_ALIASES = {"google": "gemini"}


def canonical_provider(name: str) -> str:
    """Map a provider name (or the alias `google`) to one of `openai`, `anthropic`, `gemini`."""
    provider = _ALIASES.get(name.lower(), name.lower())
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {name!r}; expected one of {', '.join(PROVIDERS)}")
    return provider


class HttpFault(BaseModel):
    """Answer the next `count` matching HTTP requests with an error status in the provider's error shape."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = Field(default=None, description="openai, anthropic or gemini (alias google); None = any")
    method: str | None = Field(default=None, description="HTTP method to match (case-insensitive); None = any")
    path_regex: str = Field(default="", description="re.search pattern on the full request path, prefix included")
    status: int = Field(default=500, ge=400, le=599, description="HTTP status to answer with")
    count: int = Field(default=1, ge=0, description="how many matching requests get the fault")
    retry_after: float | None = Field(default=None, ge=0, description="value of the `retry-after` header (s)")
    retry_after_ms: int | None = Field(default=None, ge=0, description="value of the `retry-after-ms` header")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        return None if value is None else canonical_provider(value)

    @field_validator("path_regex")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        re.compile(value)
        return value

    def matches(self, provider: str, method: str, path: str) -> bool:
        """Whether a request (full path without query) is one this fault targets."""
        if self.provider is not None and self.provider != provider:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return re.search(self.path_regex, path) is not None


class FaultConfig(BaseModel):
    """How the emulated providers misbehave. The defaults are a well-behaved fast server."""

    model_config = ConfigDict(extra="forbid")

    turnaround_seconds: float = Field(default=0.5, ge=0, description="create → completed/ended/succeeded")
    turnaround_by_model: dict[str, NonNegativeFloat] = Field(
        default_factory=dict,
        description="turnaround of jobs for these models (model name as in the request), instead of the default",
    )
    shuffle_results: bool = Field(default=True, description="result lines in a (seeded) order unlike the input")
    seed: int = Field(default=0, description="seed of every hashed decision and of the shuffling")
    error_rate: float = Field(default=0.0, ge=0, le=1, description="share of requests answered with a 5xx-type error")
    drop_rate: float = Field(default=0.0, ge=0, le=1, description="share of results silently missing from output")
    duplicate_rate: float = Field(default=0.0, ge=0, le=1, description="share of result lines emitted twice")
    expire_jobs: bool = Field(default=False, description="every new job expires at its turnaround")
    expire_fraction: float = Field(default=0.0, ge=0, le=1, description="share of new jobs (by id hash) that expire")
    complete_fraction_on_expiry: float = Field(
        default=0.5, ge=0, le=1, description="share of an expiring job's requests that were done before expiry"
    )
    fail_validation: bool = Field(default=False, description="new jobs are accepted, then fail validation")
    answer_at_max_tokens: bool = Field(
        default=False, description="every batch answer runs to its request's max_tokens (the most a job can cost)"
    )
    http_faults: list[HttpFault] = Field(default_factory=list, description="HTTP-level error injections")
    create_delay_seconds: float = Field(
        default=0.0, ge=0, description="delay of the create response, after the job is already stored"
    )
    truncate_downloads: bool = Field(default=False, description="first download of each result file is cut in half")
    archive_results: bool = Field(default=False, description="results of ended jobs answer 404 (retention over)")
    vertex_echo: Literal["request_and_key", "request", "nothing"] = Field(
        default="request_and_key",
        description="what a Vertex output row repeats of its input line: all of it (the request with its labels, "
        "and the top-level key), only the request (as protobuf JSON: camelCase, no labels), or nothing",
    )
    gemini_refused_mime_types: list[str] = Field(
        default_factory=list,
        description="Gemini uploads declaring one of these MIME types get 400 'Unsupported MIME type' (seen live "
        "for both 'jsonl' and 'application/jsonl': python-genai #1547, gemini cookbook #1008)",
    )
    max_requests_per_batch: int | None = Field(
        default=None, ge=1, description="override of every provider's per-batch request limit"
    )
    create_limit_error_count: int = Field(
        default=0, ge=0, description="the next N batch creates hit the provider's enqueued-token limit"
    )
    realtime_rpm: int | None = Field(
        default=None, ge=1, description="realtime chat endpoints: requests per window (None = unlimited)"
    )
    realtime_tpm: int | None = Field(
        default=None, ge=1, description="realtime chat endpoints: input+output tokens per window (None = unlimited)"
    )
    realtime_window_seconds: float = Field(
        default=60.0, gt=0, description="length of the sliding rate-limit window (60 = real per-minute limits)"
    )
    realtime_latency_seconds: float = Field(default=0.0, ge=0, description="delay of every realtime answer")
    realtime_rate_headers: bool = Field(
        default=True, description="send rate-limit headers (False: like servers that only answer 429)"
    )
    flex_shed_rate: float = Field(
        default=0.0, ge=0, le=1, description="share of flex requests refused for want of capacity (seeded draws)"
    )
    flex_shed_every: int | None = Field(
        default=None, ge=1, description="refuse every k-th flex request of a provider (deterministic, for tests)"
    )
    flex_latency_seconds: float = Field(
        default=0.0, ge=0, description="median delay of a flex answer (log-normal around it; 0: none)"
    )
    flex_latency_spread: float = Field(
        default=0.5, ge=0, description="sigma of the log-normal flex latency (0: always the median)"
    )
    flex_models: dict[str, list[str]] | None = Field(
        default=None,
        description="model-name prefixes each provider serves at flex (openai, gemini); None: the shipped "
        "price table's flex list",
    )


class JobPlan(BaseModel):
    """The fault settings a job was created under; frozen into the job so later changes do not affect it."""

    turnaround_seconds: float
    turnaround_by_model: dict[str, float] = Field(default_factory=dict)
    shuffle_results: bool
    seed: int
    error_rate: float
    drop_rate: float
    duplicate_rate: float
    expire: bool
    complete_fraction_on_expiry: float
    answer_at_max_tokens: bool = False

    @classmethod
    def capture(cls, faults: FaultConfig, job_id: str) -> JobPlan:
        """Freeze `faults` for a new job (the expiry draw is made here, once)."""
        expire = faults.expire_jobs or unit_hash(faults.seed, job_id, "expire") < faults.expire_fraction
        return cls(
            turnaround_seconds=faults.turnaround_seconds,
            turnaround_by_model=dict(faults.turnaround_by_model),
            shuffle_results=faults.shuffle_results,
            seed=faults.seed,
            error_rate=faults.error_rate,
            drop_rate=faults.drop_rate,
            duplicate_rate=faults.duplicate_rate,
            expire=expire,
            complete_fraction_on_expiry=faults.complete_fraction_on_expiry,
            answer_at_max_tokens=faults.answer_at_max_tokens,
        )

    def turnaround_for(self, model: str | None) -> float:
        """The turnaround of a job whose requests name `model` (one slow model among fast ones, for benchmarks)."""
        if model is not None and model in self.turnaround_by_model:
            return self.turnaround_by_model[model]
        return self.turnaround_seconds


def unit_hash(*parts: object) -> float:
    """A deterministic number in [0, 1) from `parts` (stable across processes, unlike `hash()`)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64

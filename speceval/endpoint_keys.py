"""The YAML keys of a model served without a batch API: an endpoint (`openai-compatible`, `together`) or Ray.

They are the command-line flags of the same names (`base_url` is `--base-url`, `engine_args` is the repeated
`--engine-arg`), with the flags' ranges and messages (`speceval.settings_checks`). Which org takes which keys,
and the settings they become, is `speceval.engines.endpoints`; this module only reads them, so a config
schema can include it without importing anything of the realtime or Ray paths.

An API key is never one of them: `api_key_env` names the environment variable that holds it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from speceval.defaults import FlexFallback, Tier
from speceval.settings_checks import (
    FlexPatience,
    MaxConcurrency,
    RatePeriodSeconds,
    Replicas,
    RequestTimeout,
    RetryBackoffFactor,
    RetryInitialDelay,
    Rpm,
    TensorParallelSize,
    Tpm,
)

# A variable's name, not its value: a key pasted here by mistake (`sk-...` has a dash) is refused.
EnvVarName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


LIMIT_KEYS = ("rpm", "tpm", "rate_period_seconds", "max_concurrency")
"""The realtime rate limits among the keys (`RateLimitKeys`): what a plan's round and the realtime limiter count."""


class RateLimitKeys(BaseModel):
    """The realtime rate limits of one model (None: not given): a candidate's or judge's entry (`EndpointKeys`) and
    a simulated user (`speceval.conversations.SimulatedUser`) take them alike, with the flags' ranges."""

    rpm: Rpm | None = Field(default=None, description="requests per minute (ray: across all workers)")
    tpm: Tpm | None = Field(default=None, description="tokens per minute (openai-compatible, together)")
    max_concurrency: MaxConcurrency | None = Field(
        default=None, description="requests in flight at once (ray: HTTP workers)"
    )
    rate_period_seconds: RatePeriodSeconds | None = Field(
        default=None, description="the period rpm and tpm count over (openai-compatible, together; default 60)"
    )

    def limit_keys(self) -> dict[str, float | int]:
        """The rate limits given (key → value)."""
        return {name: value for name in LIMIT_KEYS if (value := getattr(self, name)) is not None}


class EndpointKeys(RateLimitKeys):
    """Endpoint and Ray settings of one model; None means not given (the flag's default, or the run's record)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (openai-compatible, together, ray)",
    )
    api_key_env: EnvVarName | None = Field(
        default=None, description="name of the environment variable holding the endpoint's key (never the key)"
    )
    retry_initial_delay: RetryInitialDelay | None = Field(
        default=None, description="seconds before the first retry (openai-compatible, together)"
    )
    retry_backoff_factor: RetryBackoffFactor | None = Field(
        default=None, description="growth of the retry delay (openai-compatible, together)"
    )
    request_timeout: RequestTimeout | None = Field(
        default=None, description="seconds before a call is abandoned (openai-compatible, together)"
    )
    flex_patience: FlexPatience | None = Field(
        default=None, description="tier flex: seconds a request keeps retrying flex refusals (default 600)"
    )
    on_flex_unavailable: FlexFallback | None = Field(
        default=None, description="tier flex: then wait (default), standard or batch (docs/service-tiers.md)"
    )
    tier: Tier | None = Field(
        default=None,
        description="batch, flex, standard or auto (docs/service-tiers.md); default: engine.tier, else the org's "
        "own path (batch where it has a batch API)",
    )
    vllm: bool | None = Field(default=None, description="ray: run vLLM engines on the cluster's GPUs")
    tensor_parallel_size: TensorParallelSize | None = Field(default=None, description="ray: GPUs per vLLM engine")
    replicas: Replicas | None = Field(default=None, description="ray: vLLM engines, one per group of GPUs")
    engine_args: dict[str, Any] | None = Field(default=None, description="ray: extra vLLM engine arguments")
    ray_address: str | None = Field(default=None, description="ray: cluster to join (default: a local Ray)")

    def endpoint_keys(self) -> dict[str, Any]:
        """The endpoint keys given (key → value)."""
        return {name: value for name in EndpointKeys.model_fields if (value := getattr(self, name)) is not None}

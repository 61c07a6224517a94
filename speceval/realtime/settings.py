"""Command-line options of realtime runs, how a run directory remembers them, and building the model.

A realtime run is chosen by `--realtime` (OpenAI, Anthropic or Gemini's own chat endpoints, at full price) or by
an org without a batch API (`--org openai-compatible --base-url URL`, `--org together`). Its settings are kept
in `run.json` under `parameters.realtime`, so `--resume RUN_DIR` continues with the same endpoint and pace;
pace flags given on resume replace the stored ones. API keys are never stored, only the variable's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from speceval.batch.manifest import REALTIME_KEY, RunManifest
from speceval.defaults import (
    DEFAULT_FLEX_PATIENCE,
    DEFAULT_MAX_CONCURRENCY,
    FLEX_REQUEST_TIMEOUT,
    FlexFallback,
)
from speceval.errors import ConfigError, MissingCredentialsError, first_problem
from speceval.providers.registry import ProviderEntry, load_class
from speceval.realtime.limiter import RateLimits
from speceval.realtime.model import RealtimeModel, RealtimeOptions
from speceval.redaction import register_secret_env
from speceval.settings_checks import (
    FlexPatience,
    MaxConcurrency,
    RatePeriodSeconds,
    RequestTimeout,
    RetryBackoffFactor,
    RetryInitialDelay,
    Rpm,
    Tpm,
)
from speceval.wire.params import GenerationParams

MANIFEST_KEY = REALTIME_KEY
_OPENAI_SHAPED = "speceval.realtime.clients:OpenAIChatModel"


class RealtimeSettings(BaseModel):
    """What a realtime run was started with (stored in `run.json` → `parameters.realtime`)."""

    base_url: str | None = Field(default=None, description="endpoint base URL (None: the SDK's default or env)")
    api_key_env: str | None = Field(default=None, description="variable holding the key (None: the org's own)")
    # The ranges of the flags (speceval.settings_checks): a value from run.json or a YAML key is checked alike.
    rpm: Rpm | None = Field(default=None, description="requests per period (None: from the provider's headers)")
    tpm: Tpm | None = Field(default=None, description="tokens per period (None: from the provider's headers)")
    max_concurrency: MaxConcurrency = Field(default=DEFAULT_MAX_CONCURRENCY, description="requests in flight at once")
    period_seconds: RatePeriodSeconds = Field(default=60.0, description="period of rpm and tpm")
    retry_initial_delay: RetryInitialDelay = Field(default=1.0, description="seconds before the first retry")
    retry_backoff_factor: RetryBackoffFactor = Field(default=2.0, description="growth of the retry delay")
    request_timeout: RequestTimeout = Field(default=600.0, description="seconds before a call is abandoned and retried")
    service_tier: Literal["flex"] | None = Field(
        default=None,
        description="the tier asked of the provider: flex (synchronous, at batch rates, best effort; "
        "docs/service-tiers.md), or None for its standard realtime tier",
    )
    flex_patience: FlexPatience = Field(
        default=DEFAULT_FLEX_PATIENCE,
        description="seconds one request keeps retrying flex refusals before on_flex_unavailable decides",
    )
    on_flex_unavailable: FlexFallback = Field(
        default=FlexFallback.WAIT, description="where a request flex keeps refusing goes: wait, standard or batch"
    )

    @model_validator(mode="before")
    @classmethod
    def _flex_timeout(cls, data: object) -> object:
        # A flex call is slow by design: OpenAI asks for a 15-minute client timeout (the SDK's default is 10).
        if isinstance(data, dict) and data.get("service_tier") == "flex" and data.get("request_timeout") is None:
            return {**data, "request_timeout": FLEX_REQUEST_TIMEOUT}
        return data

    def options(self) -> RealtimeOptions:
        """The engine's view of these settings."""
        return RealtimeOptions(
            limits=RateLimits(self.rpm, self.tpm, self.max_concurrency, self.period_seconds),
            retry_initial_delay=self.retry_initial_delay,
            retry_backoff_factor=self.retry_backoff_factor,
            request_timeout=self.request_timeout,
            service_tier=self.service_tier,
            flex_patience=self.flex_patience,
            on_flex_unavailable=self.on_flex_unavailable.value,
        )


# flag (and YAML key) name → settings field, for flags that may be given on a new run or changed on resume
FLAG_FIELDS = {
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "rpm": "rpm",
    "tpm": "tpm",
    "max_concurrency": "max_concurrency",
    "rate_period_seconds": "period_seconds",
    "retry_initial_delay": "retry_initial_delay",
    "retry_backoff_factor": "retry_backoff_factor",
    "request_timeout": "request_timeout",
    "flex_patience": "flex_patience",
    "on_flex_unavailable": "on_flex_unavailable",
}


def realtime_settings(
    flags: Mapping[str, Any],
    manifest: RunManifest,
    entry: ProviderEntry,
    *,
    realtime: bool,
    resume: Path | None,
    tier_fields: Mapping[str, Any] | None = None,
) -> RealtimeSettings | None:
    """The settings of this invocation (None for a batch run), stored into `manifest` (the caller saves it).

    `flags` are the realtime flags given (names of `FLAG_FIELDS`), `realtime` whether `--realtime` was, `resume`
    the run directory of `--resume`, `tier_fields` what `--tier` sets (`speceval.engines.tiers.realtime_fields`).
    """
    stored = manifest.parameters.get(MANIFEST_KEY)
    given = {field: flags[flag] for flag, field in FLAG_FIELDS.items() if flags.get(flag) is not None}
    given.update(tier_fields or {})
    if resume is not None and stored is None:
        if realtime or given:
            raise ConfigError(f"{resume} is a batch run; it cannot be resumed as a realtime run")
        return None
    if stored is None and not (realtime or not entry.batch):
        if given:
            names = ", ".join(f"--{flag.replace('_', '-')}" for flag, f in FLAG_FIELDS.items() if f in given)
            raise ConfigError(f"{names} apply to realtime runs: add --realtime (or use an org without a batch API)")
        return None
    if entry.realtime_adapter is None:
        raise ConfigError(f"{entry.org} has no realtime endpoint in speceval")
    try:  # flags are checked as they are parsed; this covers values from run.json
        settings = RealtimeSettings.model_validate({**(stored or {}), **given})
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise ConfigError(f"run.json parameters.{MANIFEST_KEY}.{field}: {message}") from None
    if settings.base_url is None and stored is None:
        settings.base_url = entry.default_base_url
    if entry.org == "openai-compatible" and settings.base_url is None and not manifest.offline:
        raise ConfigError("--org openai-compatible needs --base-url (e.g. http://localhost:8000/v1 for vLLM)")
    manifest.parameters[MANIFEST_KEY] = settings.model_dump()
    return settings


def create_realtime_model(
    model_name: str,
    entry: ProviderEntry,
    params: GenerationParams,
    settings: RealtimeSettings,
    **provider_options: Any,
) -> RealtimeModel:
    """The realtime adapter of the provider `entry`, already resolved by `speceval.engines.factory.build_model`
    (provider options, e.g. from `--offline`, override the settings)."""
    if entry.realtime_adapter is None:
        raise ConfigError(f"{entry.org} has no realtime endpoint in speceval")
    cls = _adapter(entry, entry.realtime_adapter)
    kwargs: dict[str, Any] = {"base_url": settings.base_url, **provider_options}
    if settings.api_key_env:
        register_secret_env(settings.api_key_env)  # not one of the SDKs' variables: redaction must learn it
    if entry.realtime_adapter == _OPENAI_SHAPED:
        key_env = (settings.api_key_env,) if settings.api_key_env else entry.key_env
        # vLLM and Ollama serve without keys; a hosted service (OpenAI, Together) needs one.
        kwargs.update(org=entry.org, key_env=key_env, key_required=entry.org != "openai-compatible")
    elif settings.api_key_env and "api_key" not in provider_options:
        key = os.environ.get(settings.api_key_env)
        if not key:
            raise MissingCredentialsError(entry.org, (settings.api_key_env,))
        kwargs["api_key"] = key
    return cls(model_name, params, settings.options(), **kwargs)


def _adapter(entry: ProviderEntry, target: str) -> type[RealtimeModel]:
    """Import a realtime adapter, with an install hint if its SDK is missing."""
    cls: type[RealtimeModel] = load_class(entry, target)
    return cls

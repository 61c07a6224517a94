"""What a Ray run is started with, how `run.json` remembers it, and the Ray Data processor it becomes.

`processor_config` is a pure function of the settings (no cluster needed), so the vLLM-engine configuration is
tested on machines without a GPU and runs unchanged on machines with one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from speceval.batch.manifest import RAY_KEY
from speceval.errors import ConfigError
from speceval.settings_checks import MaxConcurrency, Replicas, Rpm, TensorParallelSize

logger = logging.getLogger(__name__)

MANIFEST_KEY = RAY_KEY
INSTALL_HINT = "pip install 'speceval[ray]'"
# Rows per Ray batch: small enough that a kill loses little, large enough to keep a worker busy.
DEFAULT_BATCH_SIZE = 16
DEFAULT_CONCURRENCY = 4
HTTP_WORKER_CPUS = 0.1


class RaySettings(BaseModel):
    """How a `--org ray` run reaches its model (stored in `run.json` → `parameters.ray`; never a key)."""

    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint (HTTP processor)")
    vllm: bool = Field(default=False, description="run vLLM engines on the cluster's GPUs instead")
    tensor_parallel_size: TensorParallelSize = Field(default=1, description="GPUs per vLLM engine")
    replicas: Replicas = Field(default=1, description="vLLM engines (data parallel)")
    engine_args: dict[str, Any] = Field(default_factory=dict, description="extra vLLM engine arguments")
    ray_address: str | None = Field(default=None, description="cluster to join (None: a local Ray)")
    api_key_env: str | None = Field(default=None, description="variable holding the endpoint's key, if any")
    rpm: Rpm | None = Field(default=None, description="requests per minute across all workers")
    max_concurrency: MaxConcurrency = Field(
        default=DEFAULT_CONCURRENCY, description="HTTP workers (requests in flight)"
    )
    batch_size: int = Field(default=DEFAULT_BATCH_SIZE, ge=1, description="rows per Ray batch")

    def check(self, offline: bool = False) -> None:
        """Refuse settings that cannot run (before anything is written or sent)."""
        if self.vllm and self.base_url:
            raise ConfigError("--org ray takes either --base-url (an endpoint) or --vllm (engines on the cluster)")
        if not self.vllm and not self.base_url and not offline:
            raise ConfigError(
                "--org ray needs --base-url URL (an OpenAI-compatible endpoint such as vLLM) or --vllm "
                "(vLLM engines on the cluster's GPUs)"
            )

    def pacing(self) -> tuple[int, int | None]:
        """(workers, requests per second per worker) for the HTTP processor from `--max-concurrency`/`--rpm`.

        Ray's HTTP stage paces each worker in whole requests per second, so a total rate is split over the
        workers and never rounded above what was asked, except that one worker at 1 request per second is the
        slowest pace it can express.
        """
        if self.rpm is None:
            return self.max_concurrency, None
        per_second = self.rpm / 60.0
        workers = max(1, min(self.max_concurrency, math.floor(per_second)))
        qps = max(1, math.floor(per_second / workers))
        if workers * qps > per_second:
            logger.warning(
                "--rpm %g is below what Ray's HTTP processor can pace (1 request per second per worker); "
                "sending at 60 per minute",
                self.rpm,
            )
        return workers, qps


FLAG_FIELDS = (
    "base_url",
    "api_key_env",
    "rpm",
    "max_concurrency",
    "vllm",
    "tensor_parallel_size",
    "replicas",
    "engine_args",
    "ray_address",
)
"""The settings a run gives as flags (`--engine-arg` repeated gives `engine_args`) or YAML keys."""


def processor_config(settings: RaySettings, model_name: str, headers: dict[str, str]) -> Any:
    """The Ray Data LLM processor configuration these settings describe (imports ray.data.llm)."""
    try:
        from ray.data import llm
    except ImportError:
        raise ConfigError(f"--org ray needs Ray Data: {INSTALL_HINT}") from None
    if settings.vllm:
        return llm.vLLMEngineProcessorConfig(
            model_source=model_name,
            engine_kwargs={"tensor_parallel_size": settings.tensor_parallel_size, **settings.engine_args},
            concurrency=settings.replicas,
            batch_size=settings.batch_size,
            # A row the engine cannot answer becomes a typed outcome, not the end of the run.
            should_continue_on_error=True,
        )
    workers, qps = settings.pacing()
    assert settings.base_url is not None  # check() guarantees it
    return llm.HttpRequestProcessorConfig(
        url=settings.base_url.rstrip("/") + "/chat/completions",
        headers=headers,
        concurrency=workers,
        qps=qps,
        batch_size=settings.batch_size,
        # Ray retries 429/408/502/503/504 and lost connections itself, with exponential back-off.
        max_retries=3,
        # An HTTP worker waits on the network: a whole CPU each would cap the workers at the cluster's cores.
        http_request_stage={"num_cpus": HTTP_WORKER_CPUS},
    )


def engine_args(pairs: list[str]) -> dict[str, Any]:
    """`--engine-arg KEY=VALUE` pairs as vLLM engine arguments (values read as YAML scalars)."""
    import yaml  # values read as YAML scalars: 0.9 → float, true → bool, text stays text

    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--engine-arg takes KEY=VALUE, got {pair!r}")
        parsed[key.strip()] = yaml.safe_load(value)
    return parsed


def ray_settings(
    given: Mapping[str, Any],
    stored: dict[str, Any] | None,
    *,
    offline: bool = False,
    file_keys: dict[str, Any] | None = None,
) -> RaySettings:
    """This invocation's settings: the stored ones (on resume), then keys of a YAML file, then the flags given now
    (`given`: settings fields, `FLAG_FIELDS`, of the flags given)."""
    try:
        settings = RaySettings.model_validate({**(stored or {}), **(file_keys or {}), **given})
    except ValueError as exc:  # pydantic's message names the field; say which flag it is
        raise ConfigError(f"--org ray: {exc}") from None
    settings.check(offline)
    return settings

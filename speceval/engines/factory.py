"""One model factory: the client a model name, an org and its endpoint settings ask for, and the engine that
drives it.

Every caller builds models here: the generation and judge commands, experiments, the judge pipelines, the
simulated user and the library. Which transport a model uses follows from its settings alone:

- no endpoint settings: the org's batch adapter (`speceval.providers.registry.batched_model_of`);
- `RealtimeSettings`: the org's realtime client (`--realtime`, or an org without a batch API);
- `RaySettings` (or org `ray`): Ray Data LLM.

`make_engine` pairs a model with its engine. The realtime and Ray packages never choose between each other,
so neither imports the other's engine.
"""

from __future__ import annotations

from typing import Any

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineObserver
from speceval.batch.store import RunStore
from speceval.engines.flex_fallback import FlexThenBatchEngine
from speceval.providers.registry import ProviderEntry, batched_model_of, resolve_org
from speceval.raydata.engine import RayEngine
from speceval.raydata.model import RayModel
from speceval.raydata.settings import RaySettings
from speceval.realtime.engine import RealtimeEngine
from speceval.realtime.model import RealtimeModel
from speceval.realtime.settings import RealtimeSettings, create_realtime_model
from speceval.wire.params import GenerationParams

AnyModel = BatchedModel | RealtimeModel | RayModel
"""A model any engine can drive."""

EndpointSettings = RealtimeSettings | RaySettings
"""How a model without a batch API (or run with `--realtime`) is reached."""


def build_model(
    model_name: str,
    org: str | ProviderEntry | None,
    params: GenerationParams,
    endpoint: EndpointSettings | None = None,
    **provider_options: Any,
) -> AnyModel:
    """The client of `model_name` served by `org`.

    Args:
        model_name: the provider's model name.
        org: the provider (None: resolved from the model name by the registry), or its entry when the caller
            resolved it already. The provider is resolved here once; the adapters are built from the entry.
        params: the sampling settings every request carries.
        endpoint: realtime or Ray settings; None for the org's batch API (org `ray` takes default Ray settings).
        provider_options: passed to the client (api_key, base_url, Vertex project, ...). Offline, the emulator's
            `base_url` stands in for a Ray cluster's endpoint (never recorded: its port changes).
    """
    entry = org if isinstance(org, ProviderEntry) else resolve_org(model_name, org)
    if endpoint is None and entry.org == "ray":
        endpoint = RaySettings()
    if isinstance(endpoint, RaySettings):
        if provider_options.get("base_url"):
            endpoint = endpoint.model_copy(update={"base_url": provider_options["base_url"], "vllm": False})
        endpoint.check(offline=bool(provider_options.get("base_url")))
        return RayModel(model_name, params, endpoint, api_key=provider_options.get("api_key"))
    if isinstance(endpoint, RealtimeSettings):
        model = create_realtime_model(model_name, entry, params, endpoint, **provider_options)
        if endpoint.service_tier == "flex" and endpoint.on_flex_unavailable == "batch":
            model.batch_fallback = batched_model_of(entry, model_name, params, **provider_options)
        return model
    return batched_model_of(entry, model_name, params, **provider_options)


def make_engine(
    model: AnyModel,
    store: RunStore,
    options: EngineOptions | None = None,
    observer: EngineObserver | None = None,
) -> BatchEngine | RealtimeEngine | FlexThenBatchEngine:  # RayEngine is a RealtimeEngine
    """The engine that drives `model`: Ray for a `RayModel`, realtime for a `RealtimeModel` (then batch jobs for
    what flex kept refusing, with `on_flex_unavailable: batch`), batch otherwise."""
    if isinstance(model, RayModel):
        return RayEngine(model, store, options, observer)
    if isinstance(model, RealtimeModel):
        realtime = RealtimeEngine(model, store, options, observer)
        if model.batch_fallback is not None:
            return FlexThenBatchEngine(realtime, model.batch_fallback, observer)
        return realtime
    return BatchEngine(model, store, options, observer)

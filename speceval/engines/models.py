"""The model a pipeline runs: built from the pipeline's own config, or checked against it.

A pipeline's config (`GenerationConfig`, `JudgeSettings`) is the one source of truth for the model name, the
provider and the sampling parameters: `run.json`, output paths and verdict files are written from it. So a
pipeline builds its model from the config (pointed at the in-process emulator when the config says offline), and
a model passed in is accepted only if it is the model the config describes; otherwise `ModelMismatchError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from speceval.defaults import Tier
from speceval.engines.endpoints import endpoint_settings
from speceval.engines.factory import AnyModel, EndpointSettings, build_model
from speceval.errors import ConfigError, ModelMismatchError
from speceval.offline import offline_provider
from speceval.providers.registry import adapter_class, resolve_org
from speceval.raydata.model import RayModel
from speceval.raydata.settings import RaySettings
from speceval.realtime import RealtimeModel
from speceval.realtime.settings import RealtimeSettings
from speceval.wire.params import GenerationParams


class UserModelConfig(Protocol):
    """What building a simulated user's model reads of it (`speceval.conversations.SimulatedUser`): the engines
    sit below the pipelines, so they name the fields, not the pipeline's class."""

    @property
    def model(self) -> str: ...
    @property
    def org(self) -> str | None: ...
    @property
    def params(self) -> GenerationParams: ...
    @property
    def tier(self) -> Tier | None: ...
    def limit_keys(self) -> dict[str, float | int]: ...


class JudgeModelConfig(Protocol):
    """What building a judge's model reads of its settings (`speceval.pipelines.judge_run.JudgeSettings`)."""

    judge_model: str
    params: GenerationParams
    offline: bool
    vertex: dict[str, str]
    ray: RaySettings | None
    realtime: RealtimeSettings | None


def check_model(model: AnyModel, *, role: str, model_name: str, org: str, params: GenerationParams) -> None:
    """Raise `ModelMismatchError` unless `model` is `model_name` served by `org` with exactly `params`."""
    differences: list[tuple[str, object, object]] = []
    if model.model_name != model_name:
        differences.append(("model name", model.model_name, model_name))
    if not _serves(org, model):
        served_by = model.org if isinstance(model, RealtimeModel) else getattr(model, "provider", None)
        differences.append(("provider", f"{type(model).__name__} ({served_by})", org))
    given, wanted = asdict(model.params), asdict(params)
    differences.extend((f"params.{key}", given[key], wanted[key]) for key in wanted if given[key] != wanted[key])
    if differences:
        raise ModelMismatchError(role, differences)


def _serves(org: str, model: AnyModel) -> bool:
    """Whether `model` is an adapter of the provider `org` (realtime adapters say their org themselves)."""
    if isinstance(model, RealtimeModel):
        return model.org == org
    entry = resolve_org(model.model_name, org)
    try:
        return isinstance(model, adapter_class(entry))
    except ConfigError:  # that provider's adapter cannot even be imported here, so this model is not it
        return False


@contextmanager
def use_model(
    given: AnyModel | None,
    *,
    role: str,
    model_name: str,
    org: str,
    params: GenerationParams,
    offline_dir: Path | None,
    provider_options: dict[str, Any] | None = None,
    endpoint: EndpointSettings | None = None,
) -> Iterator[AnyModel]:
    """The model to run: `given` once checked against the config, else one built from it.

    Args:
        given: a model the caller built, or None.
        role / model_name / org / params: what the config describes.
        offline_dir: for an offline config, the folder whose emulator state the run uses (None: a real provider).
        provider_options: passed to the adapter when building (api_key, base_url, ...); offline ones win.
        endpoint: realtime or Ray settings of a model not reached through a batch API (see `build_model`).
    """
    if given is not None:
        if provider_options:
            raise ConfigError("provider options apply when the pipeline builds its model, not to a model given")
        check_model(given, role=role, model_name=model_name, org=org, params=params)
        yield given
        return
    options = dict(provider_options or {})
    if offline_dir is None:
        yield build_model(model_name, org, params, endpoint, **options)
        return
    with offline_provider(offline_dir, org) as emulator:
        yield build_model(model_name, org, params, endpoint, **{**options, **emulator})


def simulated_user_model(
    user: UserModelConfig, candidate: AnyModel, provider_options: dict[str, Any], given: AnyModel | None = None
) -> AnyModel:
    """The simulated user's model: `given` once checked against `user`, else built to be reached as the candidate
    is: realtime when the candidate is called realtime (at its provider's own endpoint), else through a batch API.
    Sent realtime, its requests go no faster than its own limits (`user.limit_keys()`: the same settings, and so
    the same limiter, as a candidate's `--rpm`); limits where it goes through a batch API are a `ConfigError`
    (checked before anything is sent). `provider_options` (offline: the emulator's) go to the adapter built."""
    entry = resolve_org(user.model, user.org)
    if given is not None:
        check_model(given, role="simulated user", model_name=user.model, org=entry.org, params=user.params)
        return given
    tier = user.tier
    if tier is None and isinstance(candidate, RealtimeModel):
        tier = Tier.STANDARD  # the candidate's path: its org's realtime endpoint
    limits = user.limit_keys()
    where = f"the simulated user {user.model}"
    if tier in (None, Tier.BATCH) and entry.batch and limits:
        named = ", ".join(limits)
        raise ConfigError(
            f"{where}: {named} apply to its realtime turns, and they go through {entry.org}'s batch API: give it "
            "tier flex or standard (or drop the limits)"
        )
    endpoint: EndpointSettings | None = None
    if tier is not None or limits:  # its own tier and limits, checked before anything is sent
        given_keys: dict[str, Any] = {**limits, **({"tier": tier.value} if tier is not None else {})}
        endpoint = endpoint_settings(entry, given_keys, None, offline=True, where=where, model_name=user.model)
    return build_model(user.model, entry, user.params, endpoint, **provider_options)


@contextmanager
def judge_model(
    settings: JudgeModelConfig,
    provider: str,
    output_dir: Path,
    given: AnyModel | None,
    provider_options: dict[str, Any],
) -> Iterator[AnyModel]:
    """The judge of a judge pipeline: `given` once checked against `settings`, else built from them.

    Offline, the emulator keeps its state in `output_dir` (the judge folder), shared by all its run directories.
    A `ray` judge is built from `settings.ray` (offline: the emulator's chat endpoint stands in for the cluster's),
    a judge without a batch API from `settings.realtime`.
    """
    with use_model(
        given,
        role="judge",
        model_name=settings.judge_model,
        org=provider,
        params=settings.params,
        offline_dir=output_dir if settings.offline else None,
        # A judge built here reaches Vertex AI with the settings' project, location and buckets.
        provider_options=provider_options if given is not None else {**settings.vertex, **provider_options},
        endpoint=_judge_endpoint(settings, provider),
    ) as model:
        if isinstance(model, RayModel) and given is None:
            # What run.json records: offline, the emulator this run reaches (an earlier run's address is gone).
            settings.ray = model.settings
        yield model


def _judge_endpoint(settings: JudgeModelConfig, provider: str) -> EndpointSettings | None:
    """How a judge without a batch API is reached: its Ray settings (org `ray`) or its realtime endpoint."""
    if provider == "ray":
        return settings.ray or RaySettings()
    return settings.realtime

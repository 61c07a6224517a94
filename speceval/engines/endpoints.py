"""Models without a batch API configured from YAML keys (`speceval.endpoint_keys`): which org takes which keys,
the settings they become, what `run.json` records of them, and the model they build.

The settings are the flags' own records (`RealtimeSettings`, `RaySettings`), so a run started from a YAML file
records, resumes and runs exactly as one started with the flags. Keys apply in this order: what a run directory
recorded (on a rerun), then the YAML keys, then flags given now. The model they reach is built by
`speceval.engines.factory.build_model`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from speceval.engines.factory import EndpointSettings
from speceval.errors import ConfigError
from speceval.providers.registry import ProviderEntry
from speceval.raydata.settings import FLAG_FIELDS as RAY_KEYS
from speceval.raydata.settings import MANIFEST_KEY as RAY_MANIFEST_KEY
from speceval.raydata.settings import RaySettings
from speceval.realtime.settings import FLAG_FIELDS as REALTIME_FIELDS
from speceval.realtime.settings import MANIFEST_KEY as REALTIME_MANIFEST_KEY
from speceval.realtime.settings import RealtimeSettings

REALTIME_KEYS = tuple(REALTIME_FIELDS)
NO_BATCH_ORGS = "ray, openai-compatible, together"


def accepted_keys(entry: ProviderEntry) -> tuple[str, ...]:
    """The endpoint keys a model of `entry`'s org takes (none for an org with a batch API)."""
    if entry.org == "ray":
        return RAY_KEYS
    return () if entry.batch else REALTIME_KEYS


def refused_keys(entry: ProviderEntry, given: Iterable[str]) -> tuple[list[str], str]:
    """The keys of `given` that `entry`'s org does not take, and why (empty list: all apply)."""
    accepted = accepted_keys(entry)
    refused = [key for key in given if key not in accepted]
    if not refused:
        return [], ""
    if entry.org == "ray":
        return refused, "not taken by org ray (it takes " + ", ".join(RAY_KEYS) + ")"
    if not entry.batch:
        return refused, f"only for org ray (org {entry.org} takes " + ", ".join(REALTIME_KEYS) + ")"
    return refused, f"only for models without a batch API ({NO_BATCH_ORGS}); org {entry.org} has one"


def endpoint_settings(
    entry: ProviderEntry,
    given: dict[str, Any],
    stored: dict[str, Any] | None,
    *,
    offline: bool,
    where: str,
    base_url_name: str = "base_url",
) -> EndpointSettings | None:
    """The settings of a `ray` or realtime model (None for a batch org); `given` holds only keys it accepts.

    `where` names the model in messages (e.g. `exp.yaml, candidates[1]`), `base_url_name` the key or flag that
    sets the endpoint.
    """
    try:
        if entry.org == "ray":
            ray = RaySettings.model_validate({**(stored or {}), **given})
            ray.check(offline)
            return ray
        if entry.batch:
            return None
        fields = {REALTIME_FIELDS[key]: value for key, value in given.items()}
        realtime = RealtimeSettings.model_validate({**(stored or {}), **fields})
    except (ValidationError, ConfigError) as exc:
        raise ConfigError(f"{where}: {_first_line(exc)}") from None
    if realtime.base_url is None:
        realtime.base_url = entry.default_base_url
    if realtime.base_url is None and not offline:
        raise ConfigError(f"{where} needs {base_url_name} (e.g. http://localhost:8000/v1 for vLLM)")
    return realtime


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
    return str(exc)


def record_endpoint(parameters: dict[str, Any], settings: EndpointSettings | None) -> None:
    """Record the settings in a manifest's parameters (`ray` or `realtime`; a key's variable, never a key)."""
    if isinstance(settings, RaySettings):
        parameters[RAY_MANIFEST_KEY] = settings.model_dump()
    elif settings is not None:
        parameters[REALTIME_MANIFEST_KEY] = settings.model_dump()

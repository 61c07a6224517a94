"""Models without a batch API configured from YAML keys (`speceval.endpoint_keys`): which org takes which keys,
the settings they become, what `run.json` records of them, and the model they build.

The settings are the flags' own records (`RealtimeSettings`, `RaySettings`), so a run started from a YAML file
records, resumes and runs exactly as one started with the flags. Keys apply in this order: what a run directory
recorded (on a rerun), then the YAML keys, then flags given now. The model they reach is built by
`speceval.engines.factory.build_model`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from speceval.batch.costs import PriceTable
from speceval.defaults import Tier
from speceval.engines.factory import EndpointSettings
from speceval.engines.tiers import check_tier, realtime_fields
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
_FLEX_KEYS = ("flex_patience", "on_flex_unavailable")


def accepted_keys(entry: ProviderEntry, tier: Tier | None = None) -> tuple[str, ...]:
    """The endpoint keys a model of `entry`'s org takes at `tier` (an org with a batch API takes the realtime keys
    only at a realtime tier, flex or standard; the flex keys go with flex alone)."""
    if entry.org == "ray":
        return RAY_KEYS
    realtime = tier in (Tier.FLEX, Tier.STANDARD) or not entry.batch
    keys = tuple(k for k in REALTIME_KEYS if tier is Tier.FLEX or k not in _FLEX_KEYS) if realtime else ()
    return (*keys, "tier")


def refused_keys(entry: ProviderEntry, given: Iterable[str] | Mapping[str, Any]) -> tuple[list[str], str]:
    """The keys of `given` (names, or a mapping of keys given, whose `tier` counts) that `entry`'s org does not
    take, and why (empty list: all apply)."""
    tier_value = given.get("tier") if isinstance(given, Mapping) else None
    tier = Tier.of(str(tier_value)) if tier_value is not None else None
    accepted = accepted_keys(entry, tier)
    refused = [key for key in given if key not in accepted]
    if not refused:
        return [], ""
    if entry.org == "ray":
        return refused, "not taken by org ray (it takes " + ", ".join(RAY_KEYS) + ")"
    if any(key in _FLEX_KEYS for key in refused) and tier is not Tier.FLEX:
        return refused, "only with tier flex"
    if not entry.batch:
        return refused, f"only for org ray (org {entry.org} takes " + ", ".join(accepted) + ")"
    return refused, (
        f"only for models without a batch API ({NO_BATCH_ORGS}) or at tier flex or standard; org {entry.org} has one"
    )


def endpoint_settings(
    entry: ProviderEntry,
    given: dict[str, Any],
    stored: dict[str, Any] | None,
    *,
    offline: bool,
    where: str,
    base_url_name: str = "base_url",
    model_name: str | None = None,
    prices: PriceTable | None = None,
) -> EndpointSettings | None:
    """The settings of a `ray` or realtime model (None for the batch path); `given` holds only keys it accepts.

    `where` names the model in messages (e.g. `exp.yaml, candidates[1]`), `base_url_name` the key or flag that
    sets the endpoint. A `tier` given is checked against the org and `model_name` (by `prices`, default the
    shipped table) before anything is sent: `flex` and `standard` reach a batch org's realtime endpoint.
    """
    given = dict(given)
    tier_value = given.pop("tier", None)
    tier = Tier.of(str(tier_value)) if tier_value is not None else None
    if tier is not None:
        check_tier(entry, model_name or "", tier, where=where, prices=prices or PriceTable.load())
    tier_fields = realtime_fields(tier)
    try:
        if entry.org == "ray":
            ray = RaySettings.model_validate({**(stored or {}), **given})
            ray.check(offline)
            return ray
        if entry.batch and tier_fields is None:
            return None
        fields = {REALTIME_FIELDS[key]: value for key, value in given.items()} | (tier_fields or {})
        realtime = RealtimeSettings.model_validate({**(stored or {}), **fields})
    except (ValidationError, ConfigError) as exc:
        raise ConfigError(f"{where}: {_first_line(exc)}") from None
    if realtime.base_url is None:
        realtime.base_url = entry.default_base_url
    if realtime.base_url is None and not offline and not entry.batch:
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

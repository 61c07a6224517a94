"""Service tiers as a setting: which tiers a model may be sent at, checked before anything is sent, and the
realtime settings a tier becomes (docs/service-tiers.md).

`batch` is the provider's Batch API (the default for an org that has one); `standard` its realtime endpoint at
full price (what `--realtime` asks); `flex` the same endpoint with `service_tier: "flex"`, synchronous at batch
rates but best effort. A tier is decided once per model entry, here, for every caller: the generation command, the
judge commands, `speceval inputs` and experiments. `auto` is resolved to one of the three by the plan
(`speceval.engines.tier_plan`) before it reaches this module.
"""

from __future__ import annotations

from typing import Any

from speceval.batch.costs import PriceTable
from speceval.defaults import PRICES_ENV, Tier
from speceval.errors import ConfigError
from speceval.providers.registry import ProviderEntry


def check_tier(entry: ProviderEntry, model_name: str, tier: Tier, *, where: str, prices: PriceTable) -> None:
    """Refuse, before anything is sent, a tier `entry`'s org or `model_name` is not served at.

    `where` names the entry in the message (`exp.yaml, candidates[2]`, `--tier`).
    """
    if tier is Tier.AUTO:
        raise ConfigError(f"{where}: tier auto is resolved by the study's plan; give deadline_hours (or a tier)")
    if tier is Tier.BATCH and not entry.batch:
        raise ConfigError(f"{where}: tier batch: org {entry.org} has no batch API (use tier standard)")
    if tier in (Tier.FLEX, Tier.STANDARD) and entry.realtime_adapter is None:
        raise ConfigError(f"{where}: tier {tier}: org {entry.org} has no realtime endpoint in speceval")
    if tier is not Tier.FLEX:
        return
    offered = sorted(prices.flex)
    if entry.org not in prices.flex:
        raise ConfigError(
            f"{where}: tier flex: org {entry.org} has no flex tier (flex is sold by: {', '.join(offered) or 'none'}; "
            "Anthropic's cheaper tier is its Message Batches API); use tier batch or standard"
        )
    if not prices.offers_flex(entry.org, model_name):
        served = ", ".join(f"{prefix}*" for prefix in prices.flex[entry.org])
        raise ConfigError(
            f"{where}: tier flex: {entry.org} does not serve {model_name} at flex by the price table "
            f"({prices.source}, as of {prices.as_of}; flex models: {served}); use tier batch or standard, or, "
            f"if the provider now serves it, give a newer table with --prices FILE or ${PRICES_ENV} "
            '(its "flex" list replaces the shipped one for that provider)'
        )


def realtime_fields(tier: Tier | None) -> dict[str, Any] | None:
    """The `RealtimeSettings` fields a tier sets: None for batch (or no tier: the org's own default path)."""
    if tier is Tier.FLEX:
        return {"service_tier": "flex"}
    if tier is Tier.STANDARD:
        return {}
    return None

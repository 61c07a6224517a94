"""`--tier auto` over a conversation run's rounds in the generation command: each round of the candidate at the
tier the plan picks for it (round 1 through the Batch API, a later round at flex, ...), as an experiment's
`tier: auto` candidate does (docs/service-tiers.md#auto-and-the-plan).

The plan is kept in the run's `run.json` (`parameters.round_tiers`), with the realtime settings of the tiers sent
realtime (an endpoint and pace, never a key), so `--resume` sends each round that has not started as planned; a
round that started keeps the tier it started at (its own `rounds/<k>/run.json`, read by the conversation runner).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from speceval.batch.manifest import RunManifest
from speceval.batch.model import BatchedModel
from speceval.conversations.transport import ModelOfRound, RoundModel
from speceval.defaults import Tier
from speceval.engines.factory import build_model
from speceval.engines.tiers import realtime_fields
from speceval.errors import ConfigError, RunStateError, first_problem
from speceval.providers.registry import ProviderEntry
from speceval.realtime.model import RealtimeModel
from speceval.realtime.settings import RealtimeSettings, realtime_settings
from speceval.wire.params import GenerationParams

MANIFEST_KEY = "round_tiers"


class RoundTiers(BaseModel):
    """A run's tier per conversation round (`tiers[k - 1]` is round k's), as `--tier auto` planned them, and the
    realtime settings each realtime tier sends with (keyed by tier: `flex`, `standard`)."""

    schema_version: int = 1
    tiers: list[Tier]
    deadline_hours: float
    realtime: dict[Tier, RealtimeSettings] = {}


def plan_round_tiers(
    tiers: list[Tier], deadline_hours: float, flags: Mapping[str, Any], manifest: RunManifest, entry: ProviderEntry
) -> RoundTiers:
    """The record of a per-round plan, each realtime tier's settings from the command's realtime flags (checked
    as `realtime_settings` checks them; `manifest` is only read)."""
    settings: dict[Tier, RealtimeSettings] = {}
    for tier in dict.fromkeys(tiers):
        fields = realtime_fields(tier)
        if fields is None:
            continue
        scratch = manifest.model_copy(deep=True)
        scratch.parameters.pop(MANIFEST_KEY, None)
        built = realtime_settings(flags, scratch, entry, realtime=True, resume=None, tier_fields=fields)
        assert built is not None  # realtime=True
        settings[tier] = built
    return RoundTiers(tiers=tiers, deadline_hours=deadline_hours, realtime=settings)


def stored_round_tiers(manifest: RunManifest, where: str) -> RoundTiers | None:
    """The per-round plan a run's `run.json` holds (None: one tier for every round)."""
    stored = manifest.parameters.get(MANIFEST_KEY)
    if stored is None:
        return None
    try:
        return RoundTiers.model_validate(stored)
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise ConfigError(f"{where}: parameters.{MANIFEST_KEY}.{field}: {message}") from None


def round_models(
    plan: RoundTiers, model_name: str, entry: ProviderEntry, params: GenerationParams, options: dict[str, Any]
) -> ModelOfRound:
    """The candidate's client per round: at the tier round k started at, else the plan's. One client per tier,
    shared by its rounds."""
    built: dict[Tier, RoundModel] = {}

    def of(number: int, started: Tier | None) -> RoundModel:
        if started is None and not 1 <= number <= len(plan.tiers):
            # The plan covers every round the inputs allow (`max_rounds`): another round means the inputs changed.
            raise RunStateError(
                f"round {number} is not in the run's plan of {len(plan.tiers)} rounds (run.json "
                f"parameters.{MANIFEST_KEY}): the inputs changed since the run started"
            )
        tier = started or plan.tiers[number - 1]
        if tier not in built:
            endpoint = plan.realtime.get(tier)
            if tier is not Tier.BATCH and endpoint is None:
                raise ConfigError(f"round {number} is planned at tier {tier} but the plan has no settings for it")
            model = build_model(model_name, entry, params, endpoint, **options)
            assert isinstance(model, BatchedModel | RealtimeModel)  # a batch or realtime org: check_tier allowed it
            built[tier] = model
        return built[tier]

    return of

"""How one half of a conversation round is reached, as its `run.json` records it, and the model a round is sent by.

A conversation run may send its rounds at different tiers (`tier: auto`: round 1 through the Batch API, a later one
at flex; docs/service-tiers.md#auto-and-the-plan). Each round is an engine run of its own (`rounds/<k>/`) whose
`run.json` says how it was reached: `parameters.realtime` (with its `service_tier`) when realtime, no such key when
through a batch API. That record is what `speceval cost`, `speceval jobs`, `speceval status` and the report read to
price and reopen the round, and what a resumed run reads to keep the round on the transport it started with.
"""

from __future__ import annotations

from collections.abc import Callable

from speceval.batch.manifest import REALTIME_KEY, RunManifest
from speceval.batch.model import BatchedModel
from speceval.defaults import FlexFallback, Tier
from speceval.providers.registry import resolve_org
from speceval.realtime.model import RealtimeModel
from speceval.realtime.settings import RealtimeSettings

RoundModel = BatchedModel | RealtimeModel

ModelOfRound = Callable[[int, Tier | None], RoundModel]
"""The model that sends conversation round k, given the tier round k started at (read from its `run.json`; None: it
has not started). A round that started keeps its tier, even when a re-planned schedule now says otherwise."""


def started_tier(manifest: RunManifest) -> Tier:
    """The tier a round's half was sent at, from its `run.json`: batch without a realtime record, else flex or
    standard as the record's `service_tier` says."""
    recorded = manifest.parameters.get(REALTIME_KEY)
    if not isinstance(recorded, dict):
        return Tier.BATCH
    return Tier.FLEX if recorded.get("service_tier") == Tier.FLEX.value else Tier.STANDARD


def record_transport(manifest: RunManifest, model: RoundModel) -> None:
    """Record in a new round half's `run.json` how `model` reaches its provider: a realtime model's settings as
    sent (its org's endpoint, never a key; an offline emulator's port is not recorded), nothing for a batch one."""
    manifest.parameters.pop(REALTIME_KEY, None)
    if not isinstance(model, RealtimeModel):
        return
    options = model.options
    settings = RealtimeSettings(
        base_url=resolve_org(model.model_name, model.org).default_base_url,
        rpm=options.limits.rpm,
        tpm=options.limits.tpm,
        max_concurrency=options.limits.max_concurrency,
        period_seconds=options.limits.period_seconds,
        retry_initial_delay=options.retry_initial_delay,
        retry_backoff_factor=options.retry_backoff_factor,
        request_timeout=options.request_timeout,
        service_tier="flex" if options.service_tier == Tier.FLEX.value else None,
        flex_patience=options.flex_patience,
        on_flex_unavailable=FlexFallback(options.on_flex_unavailable),
    )
    manifest.parameters[REALTIME_KEY] = settings.model_dump()

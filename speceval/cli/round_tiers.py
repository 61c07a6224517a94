"""`--tier auto` over a conversation run's rounds in the generation command: each round of the candidate at the
tier the plan picks for it (round 1 through the Batch API, a later round at flex, ...), as an experiment's
`tier: auto` candidate does (docs/service-tiers.md#auto-and-the-plan).

The plan is kept in the run's `run.json` (`parameters.round_tiers`), with the realtime settings of the tiers a
round may be sent at (an endpoint and pace, never a key). As each later round starts, the rounds left are planned
again against the hours left of the deadline, with the turnaround of the batch jobs finished by then: round 1's job
taking 9 hours where 6 were expected moves round 2 off the Batch API. A re-plan moves a round to a faster tier when
the deadline needs it, or to a cheaper one (standard to flex or batch) when there is time; never from flex back to
batch (the same price, only slower). A round that started keeps the tier it started at (its own
`rounds/<k>/run.json`, read by the conversation runner); `--resume` re-plans the rounds not started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import ValidationError

from speceval.batch.costs import PriceTable
from speceval.batch.manifest import RunManifest
from speceval.batch.model import BatchedModel
from speceval.cli.console import console
from speceval.cli.tier_flags import FLEX_FLAGS
from speceval.conversations.simulated_user import SimulatedUser
from speceval.conversations.transport import ModelOfRound, RoundModel
from speceval.defaults import Tier
from speceval.engines.factory import build_model
from speceval.engines.tier_plan import Replan, RoundLoad, TierTimes, UserRounds, interleaved, replanned
from speceval.engines.tiers import realtime_fields
from speceval.errors import ConfigError, RunStateError, first_problem
from speceval.json_keys import OmitsUnsetFields
from speceval.providers.registry import ProviderEntry
from speceval.realtime.model import RealtimeModel
from speceval.realtime.settings import RealtimeSettings, realtime_settings
from speceval.wire.params import GenerationParams

MANIFEST_KEY = "round_tiers"


class RoundTiers(OmitsUnsetFields):
    """A run's tier per conversation round (`tiers[k - 1]` is round k's: planned, or as sent once it started), as
    `--tier auto` planned them, the realtime settings each realtime tier sends with (keyed by tier: `flex`,
    `standard`), and what a re-plan reads: each round's load, the expected times, whether the model is served at
    flex, when round 1 started (the deadline's clock) and the seconds of one hour on it."""

    schema_version: int = 1
    tiers: list[Tier]
    deadline_hours: float
    realtime: dict[Tier, RealtimeSettings] = {}
    loads: list[RoundLoad] = []
    times: TierTimes | None = None
    flex_ok: bool = False
    started_at: datetime | None = None
    hour_seconds: float = 3600.0
    replans: list[Replan] = []
    user: UserRounds | None = None
    """The simulated user's turns, planned between the rounds, and the tier they are sent at (kept: the user's
    client is built once, before round 1)."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ("user",)  # plans stored before it read and write the same


def plan_round_tiers(
    tiers: list[Tier],
    deadline_hours: float,
    flags: Mapping[str, Any],
    manifest: RunManifest,
    entry: ProviderEntry,
    *,
    loads: list[RoundLoad] | None = None,
    times: TierTimes | None = None,
    flex_ok: bool = False,
    hour: float = 3600.0,
    user: UserRounds | None = None,
) -> RoundTiers:
    """The record of a per-round plan, with the settings of every realtime tier a round may be sent at (the plan's,
    and those a re-plan may pick: flex where the model is served at it, standard) from the command's realtime flags
    (checked as `realtime_settings` checks them; the flex flags are flex's only; `manifest` is only read)."""
    settings: dict[Tier, RealtimeSettings] = {}
    standard = bool(loads) and entry.realtime_adapter is not None
    reachable = [*tiers, *([Tier.FLEX] if flex_ok else []), *([Tier.STANDARD] if standard else [])]
    for tier in dict.fromkeys(reachable):
        fields = realtime_fields(tier)
        if fields is None:
            continue
        scratch = manifest.model_copy(deep=True)
        scratch.parameters.pop(MANIFEST_KEY, None)
        given = flags if tier is Tier.FLEX else {k: v for k, v in flags.items() if k not in FLEX_FLAGS}
        built = realtime_settings(given, scratch, entry, realtime=True, resume=None, tier_fields=fields)
        assert built is not None  # realtime=True
        settings[tier] = built
    return RoundTiers(
        tiers=tiers,
        deadline_hours=deadline_hours,
        realtime=settings,
        loads=loads or [],
        times=times,
        flex_ok=flex_ok,
        hour_seconds=hour,
        user=user,
    )


def user_at_planned_tier(user: SimulatedUser, plan: RoundTiers | None) -> SimulatedUser:
    """The simulated user at the tier the plan chose for its turns (its own where it names one)."""
    if plan is None or plan.user is None or plan.user.tier is None or user.tier is not None:
        return user
    return user.model_copy(update={"tier": plan.user.tier})


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


def _now() -> datetime:
    return datetime.now(UTC)


def round_models(
    plan: RoundTiers,
    model_name: str,
    entry: ProviderEntry,
    params: GenerationParams,
    options: dict[str, Any],
    *,
    prices: PriceTable | None = None,
    learn: Callable[[TierTimes, float], TierTimes] = lambda times, _hour: times,
    record: Callable[[RoundTiers], None] = lambda _plan: None,
    now: Callable[[], datetime] = _now,
) -> ModelOfRound:
    """The candidate's client per round: at the tier round k started at, else the one a re-plan picks as it starts
    (module docstring; with `prices`, and `learn` to read what the output folder's finished work took, on the
    plan's clock). `record` saves the
    plan (round 1's start, each round's tier as sent) into run.json. One client per tier, shared by its rounds."""
    built: dict[Tier, RoundModel] = {}

    def of(number: int, started: Tier | None) -> RoundModel:
        if started is None and not 1 <= number <= len(plan.tiers):
            # The plan covers every round the inputs allow (`max_rounds`): another round means the inputs changed.
            raise RunStateError(
                f"round {number} is not in the run's plan of {len(plan.tiers)} rounds (run.json "
                f"parameters.{MANIFEST_KEY}): the inputs changed since the run started"
            )
        if started is None and number == 1 and plan.started_at is None:
            plan.started_at = now()  # the deadline counts from round 1's start, not from a dry run's
            record(plan)
        elif started is None and prices is not None:
            _replan(plan, number, prices, learn, now(), record)
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


def _replan(
    plan: RoundTiers,
    number: int,
    prices: PriceTable,
    learn: Callable[[TierTimes, float], TierTimes],
    at: datetime,
    record: Callable[[RoundTiers], None],
) -> None:
    """Round `number` (starting now) at the tier the rounds left need to meet the deadline, kept in `plan`."""
    left = plan.loads[number - 1 :]
    if not left or plan.times is None or plan.started_at is None:
        return  # a plan stored before re-plans (no loads): sent as planned
    times = learn(plan.times, plan.hour_seconds)
    hours_left = plan.deadline_hours - (at - plan.started_at).total_seconds() / plan.hour_seconds
    planned = plan.tiers[number - 1]
    # The user's turns of the later rounds count too, at the tier its client was built at.
    order = interleaved(left, plan.user, first=number, user_fixed=True)
    was = dict(zip(order.candidate, plan.tiers[number - 1 :], strict=True))
    user_tier = plan.user.tier if plan.user is not None and plan.user.tier is not None else Tier.BATCH
    tiers, meets = replanned(
        order.loads,
        hours_left,
        prices,
        times,
        planned=[was.get(i, user_tier) for i in range(len(order.loads))],
        flex_ok=order.flex_ok(plan.flex_ok, plan.user is not None and plan.user.flex_ok),
        groups=order.groups,
        fixed=order.fixed,
    )
    tier = tiers[order.candidate[0]]
    if tier is not Tier.BATCH and tier not in plan.realtime:
        tier = planned  # no settings for it (cannot happen with a plan from plan_round_tiers)
    if tier is planned and meets:
        return
    turnaround = times.batch_turnaround_hours.get(left[0].provider, 0.0)
    plan.tiers[number - 1] = tier
    plan.replans.append(
        Replan(
            round=number,
            planned=planned,
            sent=tier,
            hours_left=hours_left,
            batch_turnaround_hours=turnaround,
            meets_deadline=meets,
        )
    )
    record(plan)
    console.print(plan.replans[-1].line("the candidate's", plan.deadline_hours))

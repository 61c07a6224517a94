"""`tier: auto`: the cheapest service tier per round that meets a deadline, and the plan a dry run prints.

A study's work comes in rounds that cannot overlap: a conversation's round k+1 is built from round k's answers,
and a judge waits for the answers it judges. Each round goes to one tier:

- `batch`: one Batch API round trip, `batch_turnaround_hours` for the provider (settable; learned from the study's
  own finished jobs when it has some, see `learned_turnaround`), at the provider's batch rates;
- `flex`: synchronous calls at batch rates, `flex_seconds` per request, `max_concurrency` at a time (only where the
  provider serves the model at flex: `speceval.engines.tiers.check_tier`);
- `standard`: the same at full price, `standard_seconds` per request.

Batch and flex cost the same, so the plan starts all-batch (no shedding, the highest limits) and moves rounds to
flex, then to standard, one at a time, until the expected total meets the deadline: the fewest rounds leave the
batch tier, and standard is used only where flex cannot meet it. Among rounds that gain alike, flex takes the latest
(the early rounds' jobs teach the turnaround a re-plan reads) and standard the cheapest (the earliest, whose
requests carry the fewest earlier answers). A deadline nothing meets is refused before
anything is sent, naming the fastest expected total.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from statistics import median
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from speceval.batch.costs import PriceTable
from speceval.batch.records import BatchRecord
from speceval.defaults import DEFAULT_MAX_CONCURRENCY, Tier
from speceval.errors import ConfigError
from speceval.wire.usage import Usage

DEFAULT_BATCH_TURNAROUND_HOURS = {"openai": 6.0, "google": 6.0, "vertex": 6.0, "anthropic": 1.0}
"""Expected hours of one batch round trip when the study has no finished job of the provider to learn from:
Anthropic says most batches end within an hour; OpenAI and Gemini promise 24 h and usually take a few."""


PositiveSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""Seconds one call takes: a finite number above 0."""


class TierTimes(BaseModel):
    """How long each tier is expected to take until the study's own jobs say (an experiment's `engine.tier_times`,
    the commands' `--batch-turnaround-hours` and `--flex-seconds`; the dry run prints the plan it gives)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt expectation would silently plan with the default

    batch_turnaround_hours: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_BATCH_TURNAROUND_HOURS),
        description="hours of one batch round trip per provider (openai, anthropic, google, vertex); the others "
        "keep their defaults",
    )
    flex_seconds: float = Field(default=120.0, gt=0, description="one flex call, queueing included (minutes)")
    standard_seconds: float = Field(default=10.0, gt=0, description="one standard call")
    flex_seconds_by_model: dict[str, PositiveSeconds] = Field(
        default_factory=dict,
        description="one flex call of a named model, where it differs from flex_seconds (learned from the study's "
        "own calls of that model where it has some)",
    )
    standard_seconds_by_model: dict[str, PositiveSeconds] = Field(
        default_factory=dict, description="one standard call of a named model, likewise"
    )
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, description="calls in flight at once")

    @field_validator("batch_turnaround_hours")
    @classmethod
    def _known_providers(cls, given: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(given) - set(DEFAULT_BATCH_TURNAROUND_HOURS))
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)}: not a batch provider ({', '.join(DEFAULT_BATCH_TURNAROUND_HOURS)})"
            )
        if any(not math.isfinite(hours) or hours <= 0 for hours in given.values()):
            raise ValueError("a batch round trip takes a number of hours above 0")
        return {**DEFAULT_BATCH_TURNAROUND_HOURS, **given}

    def hours(self, tier: Tier, provider: str, requests: int, model: str | None = None) -> float:
        """Expected hours of one round of `requests` to `model` at `tier`."""
        if tier is Tier.BATCH:
            return self.batch_turnaround_hours.get(provider, max(DEFAULT_BATCH_TURNAROUND_HOURS.values()))
        if tier is Tier.FLEX:
            per_call = self.flex_seconds_by_model.get(model or "", self.flex_seconds)
        else:
            per_call = self.standard_seconds_by_model.get(model or "", self.standard_seconds)
        return math.ceil(requests / self.max_concurrency) * per_call / 3600

    def of(self, tier: Tier, load: RoundLoad) -> float:
        """Expected hours of the round `load` at `tier`: realtime calls at the entry's own concurrency, and no
        faster than its declared rate limits let them go (`rpm`, `tpm` over its bounded tokens)."""
        if tier is Tier.BATCH:
            return self.hours(tier, load.provider, load.requests, load.model)
        own = self.model_copy(update={"max_concurrency": load.max_concurrency}) if load.max_concurrency else self
        paced = [own.hours(tier, load.provider, load.requests, load.model)]
        period_hours = (load.rate_period_seconds or 60.0) / 3600
        if load.rpm:
            paced.append(load.requests / load.rpm * period_hours)
        if load.tpm:
            paced.append((load.input_tokens + load.output_tokens) / load.tpm * period_hours)
        return max(paced)


class RoundLoad(BaseModel):
    """One round's requests to one model, and their tokens (an upper bound for rounds not yet built).

    Loads with the same `stage` run side by side (the candidates of one round, the judges of one study); stages run
    one after another. None: a stage of its own."""

    label: str
    stage: int | None = None
    entry: str | None = None
    """The experiment file's entry (`judges[1]`): two entries of one model (a turn judge and a whole-conversation
    judge) are two rounds, each at its own tier."""
    provider: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int
    # The entry's own realtime limits (an experiment entry's `rpm`, `tpm`, `max_concurrency`): a round sent
    # realtime goes no faster than they let it (the plan's hours ignored them: 40 calls at 1 a minute, "0.01 h").
    rpm: float | None = None
    tpm: float | None = None
    rate_period_seconds: float | None = None
    max_concurrency: int | None = None


class UserRounds(BaseModel):
    """The simulated user's turns of a conversation run, planned beside the candidate's rounds: round k's turns are
    written before round k's answers (k >= 2), so their hours count against the deadline as the answers' do. One
    user model sends them all: one tier for all of them, the one given it (`--simulated-user-tier`), else the
    plan's (a user at batch takes a whole batch round trip per round; a plan that left them out promised 18 h for a
    run of three rounds that took 30)."""

    rounds: list[int] = Field(description="the round of each load (2, 3, ...)")
    loads: list[RoundLoad]
    tier: Tier | None = Field(default=None, description="given, else as planned (None: not planned yet)")
    given: bool = Field(
        default=False,
        description="the plan may not move the tier: given, or the only kind the user's rate limits allow (realtime)",
    )
    flex_ok: bool = False


class Interleaved(BaseModel):
    """The candidate's rounds (the first is round `first`) and the user's turns of the rounds from `first` on, in
    the order they run, as `auto_plan` takes them: each candidate round its own group, the user's turns one group
    (one client), kept at the user's tier where it was given or, on a re-plan, once the user was built."""

    loads: list[RoundLoad]
    groups: list[int]
    fixed: list[Tier | None]
    candidate: list[int] = Field(description="the positions of the candidate's rounds in `loads`, in round order")
    user: int | None = Field(default=None, description="the position of one of the user's turns, if any")

    def flex_ok(self, candidate: bool, user: bool) -> list[bool]:
        return [candidate if i in self.candidate else user for i in range(len(self.loads))]


def interleaved(
    rounds: Sequence[RoundLoad], user: UserRounds | None, *, first: int = 1, user_fixed: bool = False
) -> Interleaved:
    """`rounds` (the candidate's, round `first` on) with the user's turns of those rounds before each (module
    docstring of `UserRounds`); `user_fixed`: the user's tier is kept whether given or planned (a re-plan: its
    client is built once, before round 1)."""
    turns = {} if user is None else dict(zip(user.rounds, user.loads, strict=True))
    found = Interleaved(loads=[], groups=[], fixed=[], candidate=[])
    kept = None if user is None or not (user.given or user_fixed) else user.tier
    for offset, load in enumerate(rounds):
        number = first + offset
        if number in turns and number > first:  # round `first`'s turns are written already when it is planned
            found.user = len(found.loads)
            found.loads.append(turns[number])
            found.groups.append(len(rounds))
            found.fixed.append(kept)
        found.candidate.append(len(found.loads))
        found.loads.append(load)
        found.groups.append(offset)
        found.fixed.append(None)
    return found


class RoundPlan(BaseModel):
    """A round at its tier: requests, cost (None: no price for the model) and expected hours."""

    label: str
    stage: int | None = None
    entry: str | None = Field(default=None, description="the experiment file's entry (`judges[1]`), if any")
    model: str
    tier: Tier
    requests: int
    cost_usd: float | None
    hours: float


class TierPlan(BaseModel):
    """Every round at its tier, with totals (hours add up: rounds run one after another)."""

    rounds: list[RoundPlan]

    @property
    def hours(self) -> float:
        """Expected hours of the whole plan: stages one after another, the loads of a stage side by side."""
        return stage_hours([(r.stage, r.hours) for r in self.rounds])

    @property
    def cost_usd(self) -> float | None:
        """Cost of the whole plan; None when a model has no price."""
        costs = [r.cost_usd for r in self.rounds]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def stage_hours(rows: Iterable[tuple[int | None, float]]) -> float:
    """Hours of (stage, hours) rows: the longest of each stage, summed (a row without a stage stands alone)."""
    longest: dict[object, float] = {}
    for n, (stage, hours) in enumerate(rows):
        key: object = stage if stage is not None else ("alone", n)
        longest[key] = max(longest.get(key, 0.0), hours)
    return sum(longest.values())


def _row(load: RoundLoad, tier: Tier, prices: PriceTable, times: TierTimes) -> RoundPlan:
    usage = Usage(input_tokens=load.input_tokens, output_tokens=load.output_tokens)
    return RoundPlan(
        label=load.label,
        stage=load.stage,
        entry=load.entry,
        model=load.model,
        tier=tier,
        requests=load.requests,
        cost_usd=prices.cost(load.model, load.provider, usage, tier=tier.value),
        hours=times.of(tier, load),
    )


def fixed_plan(loads: Sequence[RoundLoad], tier: Tier, prices: PriceTable, times: TierTimes) -> TierPlan:
    """Every round at `tier` (the all-batch and all-standard plans shown beside the chosen one)."""
    return TierPlan(rounds=[_row(load, tier, prices, times) for load in loads])


def auto_plan(
    loads: Sequence[RoundLoad],
    deadline_hours: float,
    prices: PriceTable,
    times: TierTimes,
    *,
    flex_ok: Sequence[bool],
    groups: Sequence[int] | None = None,
    fixed: Sequence[Tier | None] | None = None,
) -> TierPlan:
    """The cheapest plan expected to end within `deadline_hours` (module docstring).

    `loads` run one after another unless they share a `stage`; `flex_ok[i]`: whether round i's model is
    served at flex; `groups[i]`: rounds with the same group id share one tier (the rounds of a run with one
    endpoint, e.g. the generation command's; default: each round its own, as an experiment's `auto` candidate);
    `fixed[i]`: a tier round i's group keeps (an entry that names its own). Raises `ConfigError` when even the
    fastest plan does not meet the deadline.
    """
    group_of = list(groups) if groups is not None else list(range(len(loads)))
    members: dict[int, list[int]] = {}
    for i, group in enumerate(group_of):
        members.setdefault(group, []).append(i)
    pinned = {group_of[i]: tier for i, tier in enumerate(fixed or []) if tier is not None}
    tiers = {group: pinned.get(group, Tier.BATCH) for group in members}

    def hours(group: int, tier: Tier) -> float:
        return sum(times.of(tier, loads[i]) for i in members[group])

    def total() -> float:
        return stage_hours((load.stage, times.of(tiers[group_of[i]], load)) for i, load in enumerate(loads))

    def extra_cost(group: int, target: Tier) -> float:
        now = [_row(loads[i], tiers[group], prices, times).cost_usd or 0.0 for i in members[group]]
        to = [_row(loads[i], target, prices, times).cost_usd or 0.0 for i in members[group]]
        return sum(to) - sum(now)

    def order(target: Tier) -> Callable[[int], tuple[float, float, int]]:
        # Biggest gain first. Among equal gains: at flex (the price of batch) the latest group first, so the early
        # rounds stay at batch and their jobs teach the turnaround a later re-plan reads (`learned_turnaround`); at
        # standard the cheapest first (a later round carries the earlier answers: it costs more).
        def key(group: int) -> tuple[float, float, int]:
            gain = hours(group, tiers[group]) - hours(group, target)
            tie = -max(members[group]) if target is Tier.FLEX else 0
            return (-round(gain, 9), extra_cost(group, target) if target is Tier.STANDARD else 0.0, tie)

        return key

    # Same price for batch and flex: leave the batch tier only where the deadline needs it, biggest gain first.
    moves: list[tuple[int, Tier]] = []  # (group, the tier it left), in the order made
    for target in (Tier.FLEX, Tier.STANDARD):
        allowed = [
            g for g in members if g not in pinned and (target is Tier.STANDARD or all(flex_ok[i] for i in members[g]))
        ]
        for group in sorted(allowed, key=order(target)):
            if total() <= deadline_hours:
                break
            if hours(group, target) < hours(group, tiers[group]):
                moves.append((group, tiers[group]))
                tiers[group] = target
    # A move judged by its own hours may not have shortened the study: a round beside a slower one of its stage (two
    # judges side by side, one of them larger) ends no sooner. Undo, latest first, each move the deadline does not
    # need: a round back on the Batch API is one a re-plan learns from, and back from standard, half the price.
    if total() <= deadline_hours:
        for group, was in reversed(moves):
            moved_to, tiers[group] = tiers[group], was
            if total() > deadline_hours:
                tiers[group] = moved_to
    if total() > deadline_hours:
        # Each round named, and those whose entry names its own tier marked: a bare list of tiers did not say which
        # rounds could not move (a study's generated inputs at batch took 14 h of a 13 h deadline).
        chosen = ", ".join(
            f"{_named(load)} {tiers[group_of[i]].value}" + (" (its entry's own tier)" if group_of[i] in pinned else "")
            for i, load in enumerate(loads)
        )
        raise ConfigError(
            f"tier auto: no plan is expected to end within deadline_hours {deadline_hours:g}: the fastest takes "
            f"{total():.1f} h ({chosen}); raise deadline_hours, give an entry kept at its own tier a faster one "
            "(the inputs stage's: `inputs: tier: flex`), or raise max_concurrency if your rate limits allow it"
        )
    return TierPlan(rounds=[_row(load, tiers[group_of[i]], prices, times) for i, load in enumerate(loads)])


def _named(load: RoundLoad) -> str:
    """A round as a message names it: its label, after its entry where the label does not say it."""
    if load.entry is None or load.entry.split()[0] in load.label:
        return load.label
    return f"{load.entry} {load.label}"


HOUR_SECONDS_ENV = "SPECEVAL_HOUR_SECONDS"
"""Seconds that count as one hour on the deadline's clock and in learned turnarounds (default 3600). A rehearsal
against the emulator, whose batch jobs and flex calls are scaled alike (benchmarks/tiers.py: 1 h = 2 s), sets it so
the plan reads the scaled clock; a real run never needs it."""


def hour_seconds() -> float:
    """`$SPECEVAL_HOUR_SECONDS` (checked), else 3600."""
    given = os.environ.get(HOUR_SECONDS_ENV)
    if not given:
        return 3600.0
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"${HOUR_SECONDS_ENV} must be a number of seconds above 0, got {given!r}")
    return value


def learned_turnaround(
    records: Iterable[BatchRecord], defaults: dict[str, float], hour: float | None = None
) -> dict[str, float]:
    """Per provider, the median hours (of `hour` seconds, default `hour_seconds()`) from submission to end of the
    study's own finished jobs (the defaults where it has none): what this study's batches actually took, not what a
    provider promises."""
    hour = hour or hour_seconds()
    taken: dict[str, list[float]] = {}
    for record in records:
        ended, submitted = record.ended_at, record.submitted_at
        org = _JOB_PROVIDER_ORGS.get(record.provider, record.provider)
        if isinstance(ended, datetime) and isinstance(submitted, datetime) and org in defaults:
            taken.setdefault(org, []).append((ended - submitted).total_seconds() / hour)
    return {**defaults, **{provider: median(hours) for provider, hours in taken.items()}}


# A job record names its adapter's provider, the plan an org: the Gemini API's jobs say `gemini`, its org is `google`.
# Keyed as recorded, a folder's finished Gemini jobs taught no Google turnaround and made the times invalid (a second
# `--tier auto` run there was refused). Jobs of an org the plan has no turnaround for (a plugin's) teach nothing.
_JOB_PROVIDER_ORGS = {"gemini": "google"}


class Replan(BaseModel):
    """A round sent at another tier than the plan had for it, and why: the hours of the deadline left as it started
    and what a batch round trip was taking by then."""

    round: int
    planned: Tier
    sent: Tier
    hours_left: float
    batch_turnaround_hours: float
    meets_deadline: bool
    entry: str | None = None
    """In an experiment: the candidate, simulated user or judge as the file lists it; a generation run has one."""
    run: str | None = None
    """In an experiment: the run folder (under the output folder) whose round it was; each run and variation of an
    entry re-plans its own round as it starts. None for a judge: one tier for all its runs."""
    judging: bool = False
    """The judges' round (after the conversations' last), re-planned as a judge's first task starts."""

    @field_validator("hours_left", "batch_turnaround_hours")
    @classmethod
    def _rounded(cls, hours: float) -> float:
        """Hours rounded for reading (the record is shown and kept, not computed with)."""
        return round(hours, 4)

    def line(self, who: str, deadline_hours: float) -> str:
        """What a run prints when a round goes at another tier than planned."""
        what = "judging" if self.judging else f"round {self.round}"
        return (
            f"tier auto: {who} {what} at {self.sent.value} (planned {self.planned.value}): "
            f"{max(self.hours_left, 0):.1f} h of the {deadline_hours:g} h deadline left, a batch round trip here "
            f"takes {self.batch_turnaround_hours:.1f} h"
            + ("" if self.meets_deadline else "; no plan meets the deadline now: the fastest tier at the planned price")
        )


def learned_times(
    times: TierTimes,
    jobs: Iterable[BatchRecord],
    call_seconds: Mapping[str, Mapping[str, Sequence[float]]],
    hour: float | None = None,
) -> TierTimes:
    """`times` with what the study's own finished work says, each where it has some: the batch turnaround of its
    jobs, and the median seconds a flex and a standard call took (`call_seconds`: tier → model → real seconds, read
    on the clock of `hour` seconds an hour), over all models and per model: what flex took here for each model (an
    o3 call is not a gpt-5-mini call), not what was assumed."""
    hour = hour or hour_seconds()
    learned = times.model_copy(deep=True)
    learned.batch_turnaround_hours = learned_turnaround(jobs, times.batch_turnaround_hours, hour)

    def on_clock(seconds: Sequence[float]) -> float:
        return max(median(seconds) * 3600 / hour, 1e-9)

    for tier, by_model in call_seconds.items():
        every = [s for seconds in by_model.values() for s in seconds]
        if not every or tier not in (Tier.FLEX.value, Tier.STANDARD.value):
            continue
        learned_by_model = {model: on_clock(seconds) for model, seconds in by_model.items() if model and seconds}
        if tier == Tier.FLEX.value:
            learned.flex_seconds = on_clock(every)
            learned.flex_seconds_by_model = {**times.flex_seconds_by_model, **learned_by_model}
        else:
            learned.standard_seconds = on_clock(every)
            learned.standard_seconds_by_model = {**times.standard_seconds_by_model, **learned_by_model}
    return learned


def replanned(
    loads: Sequence[RoundLoad],
    hours_left: float,
    prices: PriceTable,
    times: TierTimes,
    *,
    planned: Sequence[Tier],
    flex_ok: Sequence[bool],
    groups: Sequence[int] | None = None,
    fixed: Sequence[Tier | None] | None = None,
) -> tuple[list[Tier], bool]:
    """The tiers of the rounds not started yet (`loads`, planned at `planned`) when they must end within
    `hours_left`, and whether they are expected to. The cheapest plan that meets it, except that a round planned at
    flex never goes back to batch (the same price, only slower). Where no plan meets it any more, each round at its
    fastest tier of no higher price than planned (batch to flex is free; a deadline already lost is not a reason to
    pay full price the plan did not ask for), and nothing is refused mid-run: what was sent is paid for."""
    try:
        plan = auto_plan(loads, hours_left, prices, times, flex_ok=flex_ok, groups=groups, fixed=fixed)
    except ConfigError:
        pinned = list(fixed or [None] * len(loads))

        def fastest(i: int) -> Tier:
            # Never flex back to batch here either: what a flex call took on this clock may look slower than a
            # batch round trip, but a round planned at flex was planned there to be sure of its hours.
            dearer = [Tier.STANDARD] if planned[i] is Tier.STANDARD else []
            cheap = [Tier.FLEX] if planned[i] is Tier.FLEX else [Tier.BATCH, *([Tier.FLEX] if flex_ok[i] else [])]
            allowed = [*cheap, *dearer]
            return pinned[i] or min(allowed, key=lambda tier: times.of(tier, loads[i]))

        return [fastest(i) for i in range(len(loads))], False
    pairs = zip(planned, (row.tier for row in plan.rounds), strict=True)
    return [Tier.FLEX if was is Tier.FLEX and now is Tier.BATCH else now for was, now in pairs], True

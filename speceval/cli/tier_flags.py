"""`--tier` of a command: checked against the model before anything is sent, `auto` resolved by the plan, and
turned into the realtime flags the endpoint settings read (docs/service-tiers.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from speceval.batch.costs import PriceTable
from speceval.cli.console import stdout
from speceval.defaults import DEFAULT_MAX_CONCURRENCY, Tier
from speceval.endpoint_keys import LIMIT_KEYS
from speceval.engines.tier_plan import RoundLoad, TierPlan, TierTimes, UserRounds, auto_plan, fixed_plan, interleaved
from speceval.engines.tiers import check_tier, realtime_fields
from speceval.errors import ConfigError
from speceval.providers.registry import ProviderEntry

FLEX_FLAGS = ("flex_patience", "on_flex_unavailable")
PLAN_FLAGS = ("batch_turnaround_hours", "flex_seconds")


@dataclass
class TierChoice:
    """What `--tier` decided: the tier (None: not given), the realtime flags it adds, and for `auto` the plan."""

    tier: Tier | None
    flags: dict[str, Any]
    realtime: bool
    fields: dict[str, Any] = field(default_factory=dict)
    plan: TierPlan | None = None
    round_tiers: list[Tier] = field(default_factory=list)
    """Per conversation round (`[k - 1]` is round k's), when `auto` sends the rounds at tiers of their own."""
    loads: list[RoundLoad] = field(default_factory=list)
    """The rounds `auto` planned (what a re-plan between rounds reads), with `times` and `flex_ok`."""
    times: TierTimes | None = None
    flex_ok: bool = False
    beside: dict[str, TierPlan] = field(default_factory=dict)
    deadline_hours: float | None = None
    user: UserRounds | None = None
    """A conversation run's simulated user's turns, as `auto` planned them beside the rounds (their tier)."""


def choose_tier(
    args: argparse.Namespace,
    entry: ProviderEntry,
    model_name: str,
    realtime_flags: dict[str, Any],
    loads: Callable[[], Sequence[RoundLoad]],
    learn: Callable[[TierTimes], TierTimes] = lambda times: times,
    *,
    per_round: bool = False,
    user: Callable[[], UserRounds | None] = lambda: None,
) -> TierChoice:
    """The tier of this run from `--tier` (and `--realtime`), refused before anything is sent where the provider
    or model does not serve it; `loads` are the run's rounds, read only for `--tier auto`, as are `learn`
    (finished batch jobs beside this run, whose turnaround the plan learns) and `user` (a simulated user's turns,
    planned between the rounds at one tier). `per_round`: `auto` may send each load (a conversation round) at a
    tier of its own (`TierChoice.round_tiers`), else one tier for them all."""
    given = getattr(args, "tier", None)
    tier = Tier.of(given) if given else None
    deadline = getattr(args, "deadline_hours", None)
    if deadline is not None and tier is not Tier.AUTO:
        raise ConfigError("--deadline-hours applies to --tier auto (the tier is chosen to meet it)")
    if tier is not Tier.AUTO:
        refuse_plan_flags(args)
    if args.realtime and tier not in (None, Tier.STANDARD):
        raise ConfigError(f"--realtime is the standard tier; it does not go with --tier {tier}")
    choice = TierChoice(tier, dict(realtime_flags), bool(args.realtime), deadline_hours=deadline)
    if tier is None:
        _refuse_flex_flags(realtime_flags)
        return choice  # no tier asked: the price table is not read (a run without one never needed it)
    prices = PriceTable.load(getattr(args, "prices", None))
    flex_served = False
    if tier is Tier.AUTO:
        if deadline is None:
            raise ConfigError("--tier auto needs --deadline-hours: the hours the run must end within")
        rounds = list(loads())
        times = tier_times(args, entry.org)
        times = learn(times)
        flex_ok = flex_served = entry.org in prices.flex and prices.offers_flex(entry.org, model_name)
        users = user() if per_round else None
        if users is not None and users.loads:
            served = users.loads[0]
            users.flex_ok = served.provider in prices.flex and prices.offers_flex(served.provider, served.model)
            if users.tier is None and served.model_dump(include=set(LIMIT_KEYS), exclude_none=True):
                # Rate limits pace realtime calls, and are refused on a batch API: a user given them and no tier
                # is kept at the cheapest realtime tier it is served at, not planned into a batch job.
                users.tier, users.given = (Tier.FLEX if users.flex_ok else Tier.STANDARD), True
        # A conversation run's rounds each get their own tier (`per_round`); otherwise one endpoint for them all.
        order = interleaved(rounds, users)
        groups = order.groups if per_round else [0] * len(rounds)
        flex = order.flex_ok(flex_ok, users is not None and users.flex_ok)
        choice.plan = auto_plan(order.loads, deadline, prices, times, flex_ok=flex, groups=groups, fixed=order.fixed)
        choice.beside = {t.value: fixed_plan(order.loads, t, prices, times) for t in (Tier.BATCH, Tier.STANDARD)}
        planned = [choice.plan.rounds[i].tier for i in order.candidate]
        if users is not None and order.user is not None:
            users.tier = choice.plan.rounds[order.user].tier
            choice.user = users
        if per_round:  # kept even when every round has one tier: a re-plan between rounds may move the later ones
            choice.round_tiers, choice.loads, choice.times, choice.flex_ok = planned, rounds, times, flex_ok
        tier = choice.tier = planned[0] if planned else Tier.BATCH
    for each in dict.fromkeys(choice.round_tiers or [tier]):
        check_tier(entry, model_name, each, where="--tier", prices=prices)
    # At auto the flex settings say what a round sent at flex does: this plan's, a re-plan's mid-run, or the next
    # run's on the folder's learned times. Refused only where no round can go there: a plan that began all-batch
    # made the same command exit 2 once the folder's finished jobs changed the plan.
    if Tier.FLEX not in (choice.round_tiers or [tier]) and not flex_served:
        _refuse_flex_flags(realtime_flags)
    if flex_served and not choice.round_tiers and tier is not Tier.FLEX:  # one round, planned elsewhere: unused
        choice.flags = {key: value for key, value in choice.flags.items() if key not in FLEX_FLAGS}
    fields = realtime_fields(tier)
    if fields is not None:
        choice.fields = fields
        choice.realtime = True
    return choice


def tier_times(args: argparse.Namespace, provider: str) -> TierTimes:
    """What `--tier auto` expects each tier to take: the defaults, the run's `--max-concurrency`, and
    `--batch-turnaround-hours` (for the run's provider) and `--flex-seconds` where given."""
    times = TierTimes(max_concurrency=getattr(args, "max_concurrency", None) or DEFAULT_MAX_CONCURRENCY)
    if getattr(args, "batch_turnaround_hours", None) is not None:
        times.batch_turnaround_hours[provider] = args.batch_turnaround_hours
    if getattr(args, "flex_seconds", None) is not None:
        times.flex_seconds = args.flex_seconds
    return times


def round_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The command's realtime limits as a `RoundLoad` takes them (`--rpm`, `--tpm`, `--rate-period-seconds`; those
    given): a round sent realtime goes no faster than they let it."""
    keys = ("rpm", "tpm", "rate_period_seconds")
    return {key: getattr(args, key) for key in keys if getattr(args, key, None) is not None}


def refuse_plan_flags(args: argparse.Namespace) -> None:
    """The plan's expectations without `--tier auto` are a usage error, not something to ignore."""
    _refuse_given(PLAN_FLAGS, vars(args), "--tier auto")


def _refuse_flex_flags(realtime_flags: dict[str, Any]) -> None:
    """The flex settings without `--tier flex` are a usage error, not something to ignore."""
    _refuse_given(FLEX_FLAGS, realtime_flags, "--tier flex")


def _refuse_given(names: tuple[str, ...], values: dict[str, Any], tier: str) -> None:
    given = [f"--{name.replace('_', '-')}" for name in names if values.get(name) is not None]
    if given:
        raise ConfigError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to {tier}")


def show_tier_plan(choice: TierChoice, budget_usd: float | None) -> None:
    """Print the plan of `--tier auto` (nothing without one)."""
    if choice.plan is not None and choice.deadline_hours is not None:
        print_tier_plan(choice.plan, choice.beside, choice.deadline_hours, budget_usd)


def print_tier_plan(
    plan: TierPlan, beside: dict[str, TierPlan], deadline_hours: float, budget_usd: float | None
) -> None:
    """Print a `tier: auto` plan: per round its tier, requests, cost and hours, against the deadline and the
    budget, with the same work all-batch and all-standard beside it."""
    table = Table(title=f"tier auto: the cheapest plan expected within {deadline_hours:g} h", title_justify="left")
    # An experiment's rounds name their entry: two judges of one model may go at two tiers.
    entries = any(row.entry is not None for row in plan.rounds)
    for column in ("round", *(("entry",) if entries else ()), "model", "tier", "requests", "cost", "hours"):
        table.add_column(column, justify="left" if column in ("round", "entry", "model", "tier") else "right")
    for row in plan.rounds:
        table.add_row(
            row.label,
            *((row.entry or "",) if entries else ()),
            row.model,
            row.tier.value,
            f"{row.requests:,}",
            _money(row.cost_usd),
            f"{row.hours:.2f}",
        )
    stdout.print(table)
    lines = [_total_line("this plan", plan, deadline_hours, budget_usd)]
    lines += [_total_line(f"all-{name}", other, deadline_hours, budget_usd) for name, other in beside.items()]
    stdout.print("\n".join(lines))
    stdout.print(
        "Hours are expectations (batch turnaround per provider, flex and standard per-call latency at the run's "
        "concurrency); costs are upper bounds (every answer at max_tokens)."
    )


def _total_line(name: str, plan: TierPlan, deadline: float | None, budget: float | None) -> str:
    meets = "meets" if deadline is not None and plan.hours <= deadline else "misses"
    within = ""
    if budget is not None and plan.cost_usd is not None:
        # The plan's cost is an upper bound (every answer at max_tokens); the budget holds jobs on their bounds and
        # stops on what was spent, so a bound over it does not mean the study will not fit (it said "over the budget"
        # for a study expected to cost a fifth of it).
        within = f", upper bound {'within' if plan.cost_usd <= budget else 'over'} the budget ${budget:,.2f}"
    return f"  {name}: {_money(plan.cost_usd)}, {plan.hours:.2f} h ({meets} the deadline{within})"


def _money(value: float | None) -> str:
    return f"${value:,.4f}" if value is not None else "unknown (no price)"

"""Tiers of a study: each candidate and judge entry's tier (its own `tier`, else `engine.tier` for an org with a
batch API), `tier: auto` resolved by one plan over the whole study, and that plan for the dry run
(docs/service-tiers.md).

The study's work, as the plan sees it: the candidates answer round by round (round k of every candidate side by
side; a conversation's round k+1 is built from round k), then the judges judge (side by side). Each entry is one
group of `speceval.engines.tier_plan.auto_plan`, except that an `auto` candidate's rounds (and the simulated user's)
are groups of their own: each round of a conversation run is an engine run of its own (`rounds/<k>/`), so round 1
may go to the Batch API and round 3 to flex (`speceval.conversations.runner.ConversationRun` takes a model per
round). A candidate that names its tier keeps it for every round.
Counts are upper bounds: every conversation to its last turn, every answer at max_tokens, every earlier answer in
each later request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from speceval.batch.costs import REQUEST_FRAMING_TOKENS, PriceTable
from speceval.batch.records import utcnow
from speceval.defaults import Tier
from speceval.engines.tier_plan import (
    Replan,
    RoundLoad,
    TierPlan,
    TierTimes,
    auto_plan,
    fixed_plan,
    hour_seconds,
    replanned,
)
from speceval.experiments.config import ExperimentConfig, ModelEntry, user_entry
from speceval.experiments.dry_plan import judge_tallies, later_round_bounds, max_answer_tokens, prompt_tokens
from speceval.experiments.grid import Group
from speceval.experiments.plan_inputs import inputs_rounds, read_inputs
from speceval.operations.learned_times import learned_here
from speceval.providers.registry import resolve_org

logger = logging.getLogger(__name__)

USER = "simulated_user"
"""The plan's name of the simulated users' turns (every variation's user model: one group per model)."""


def entries(config: ExperimentConfig) -> list[tuple[str, ModelEntry]]:
    """(name as the file lists it, entry) of every candidate and judge."""
    named: list[tuple[str, ModelEntry]] = [(f"candidates[{i}]", c) for i, c in enumerate(config.candidates)]
    return named + [(f"judges[{i}]", j) for i, j in enumerate(config.judges)]


def user_entries(config: ExperimentConfig) -> list[tuple[str, ModelEntry]]:
    """(plan name, entry) of each distinct simulated user model of the study's variations."""
    users = [config.simulated_user_of(settings) for settings in config.variations.combinations()]
    found = {user_entry(u).model_dump_json(): user_entry(u) for u in users if u is not None}
    return [(f"{USER} {entry.model}", entry) for entry in found.values()]


def limits_of(entry: ModelEntry) -> dict[str, Any]:
    """The entry's realtime limits as a `RoundLoad` takes them (those it sets)."""
    return entry.limit_keys()


def given_tier(config: ExperimentConfig, entry: ModelEntry) -> Tier | None:
    """The tier an entry asks for: its own, else the study's default for an org with a batch API."""
    if entry.tier is not None:
        return entry.tier
    return config.engine.tier if resolve_org(entry.model, entry.org).batch else None


def study_loads(
    config: ExperimentConfig, base: Path, groups: list[Group], prices: PriceTable, offline: bool = False
) -> list[tuple[str, RoundLoad]]:
    """The study's rounds per entry (name, load), stages numbered in the order they run: in round k, the simulated
    users' turns (stage 2k - 1) before the candidates' answers (stage 2k); the judges after the last round (when
    the study has a judging stage: a study of `stages: [generation]` plans no judge's hours), each with every
    request the dry run counts for it (`dry_plan.judge_tallies`)."""
    notes: list[str] = []
    specs = {spec.name: read_inputs(config, base, spec, notes) for spec in config.specs}
    # Rounds 2.. as the dry run bounds them, per run, summed per entry and round (`dry_plan.later_round_bounds`).
    later: dict[tuple[str, int], RoundLoad] = {}
    users = {entry.model: name for name, entry in user_entries(config)}
    for name, entry in entries(config)[: len(config.candidates)]:
        for group in groups:
            for run in (r for r in group.runs if r.candidate == entry):
                for bound in later_round_bounds(config, run, specs[group.spec.name]):
                    answers = bound.role == "candidate"
                    key = (name if answers else users[bound.entry.model], bound.round)
                    _add(
                        later,
                        key,
                        (bound.requests, bound.usage.input_tokens, bound.usage.output_tokens),
                        entry=key[0],
                        **limits_of(entry if answers else bound.entry),
                        label=f"round {bound.round}" + ("" if answers else " (user turns)"),
                        stage=2 * bound.round - (0 if answers else 1),
                        provider=resolve_org(bound.entry.model, bound.entry.org).org,
                        model=bound.entry.model,
                    )
    turns = max((number for _, number in later), default=1)
    loads: list[tuple[str, RoundLoad]] = []
    for name, entry in entries(config)[: len(config.candidates)]:
        runs = [(g, r) for g in groups for r in g.runs if r.candidate == entry]
        requests = sum(specs[g.spec.name].count for g, _ in runs)
        # As the dry run bounds round 1: each variation's system prompt and max_tokens, each request's framing.
        prompt = sum(prompt_tokens(r, specs[g.spec.name]) for g, r in runs) + REQUEST_FRAMING_TOKENS * requests
        answer_tokens = sum(max_answer_tokens(config, r) * specs[g.spec.name].count for g, r in runs)
        first = RoundLoad(
            entry=name,
            **limits_of(entry),
            label="round 1" if turns > 1 else "answers",
            stage=2,
            provider=resolve_org(entry.model, entry.org).org,
            model=entry.model,
            requests=requests,
            input_tokens=prompt,
            output_tokens=answer_tokens,
        )
        loads += [(name, first)] + [(name, later[(name, n)]) for n in range(2, turns + 1) if (name, n) in later]
    user_rounds = sorted((number, name) for name, number in later if name in users.values())
    loads += [(name, later[(name, number)]) for number, name in user_rounds]
    loads[:0] = inputs_loads(config, base, offline)  # sent first: the stages after it read what it wrote
    judged = any(stage in config.stages for stage in ("compliance", "ranking"))
    judging = judge_tallies(config, specs, groups, prices) if judged else []  # no judging stage: no hours
    for (name, entry), tally in zip(entries(config)[len(config.candidates) :], judging, strict=False):
        loads.append(
            (
                name,
                RoundLoad(
                    entry=name,
                    **limits_of(entry),
                    label="judging",
                    stage=2 * turns + 1,
                    provider=resolve_org(entry.model, entry.org).org,
                    model=entry.model,
                    requests=tally.requests,
                    input_tokens=tally.bound_input_tokens,
                    output_tokens=tally.bound_output_tokens,
                ),
            )
        )
    return loads


def _add(loads: dict[Any, RoundLoad], key: Any, counts: tuple[int, int, int], **fields: Any) -> None:
    """Add (requests, input tokens, output tokens) to the load at `key`, made from `fields` the first time (a round's
    load sums every run's, or every spec's, share of it)."""
    load = loads.setdefault(key, RoundLoad(requests=0, input_tokens=0, output_tokens=0, **fields))
    load.requests += counts[0]
    load.input_tokens += counts[1]
    load.output_tokens += counts[2]


INPUTS = "inputs"
"""The plan's name of the `inputs` stage's rounds (`inputs generator`, `inputs rater`)."""


def inputs_entries(config: ExperimentConfig, base: Path, offline: bool) -> list[tuple[str, ModelEntry]]:
    """(plan name, entry) of the `inputs` stage's generator and rater, each at the stage's own tier (never auto:
    the block refuses it), batch when it names none."""
    found: dict[str, ModelEntry] = {}
    for r in inputs_rounds(config, base, offline):
        found.setdefault(f"{INPUTS} {r.role}", r.entry.model_copy(update={"tier": r.entry.tier or Tier.BATCH}))
    return list(found.items())


def inputs_loads(config: ExperimentConfig, base: Path, offline: bool) -> list[tuple[str, RoundLoad]]:
    """The `inputs` stage's rounds, before the study's own (stages below 1: generator then rater, round by round),
    at the stage's own tier. The plan had none: a study of generated inputs was planned as if they were there, up
    to 2 x max_rounds batch round trips short of its hours."""
    found = inputs_rounds(config, base, offline)
    if not found:
        return []
    last = max(r.number for r in found)
    loads: dict[tuple[int, str], RoundLoad] = {}
    for r in found:
        name = f"{INPUTS} {r.role}"
        # generator of round k at stage 2(k - last) - 1, its rater at 2(k - last): all before round 1's stage 2
        stage = 2 * (r.number - last) - (1 if r.role == "generator" else 0)
        _add(
            loads,
            (stage, name),
            (r.requests, r.bound.input_tokens, r.bound.output_tokens),
            entry=name,
            label=f"inputs round {r.number} ({r.role})",
            stage=stage,
            provider=resolve_org(r.entry.model, r.entry.org).org,
            model=r.entry.model,
        )
    return [(name, loads[(stage, name)]) for stage, name in sorted(loads)]


class StudyTiers:
    """The tier of every entry, `auto` planned once over the study (None: no entry asks for auto)."""

    def __init__(
        self,
        config: ExperimentConfig,
        base: Path,
        groups: list[Group],
        prices: PriceTable | None = None,
        output_dir: Path | None = None,
        started: bool = False,
        offline: bool = False,
    ):
        """Plan the study when an entry asks for `auto` (refused before anything is sent if no plan meets the
        deadline; a batch round trip takes what the finished jobs in `output_dir` took, where it has some). A study
        `started` already (experiment.json `tiers_started_at`) goes on from the plan it started with, never refused:
        what its jobs took enters as each round still to start is re-planned against the hours left (`replan`; a
        round already started keeps the tier it started at)."""
        self.config = config
        self.prices = prices or PriceTable.load()
        self.times = (config.engine.tier_times or TierTimes()).model_copy(deep=True)
        self.plan: TierPlan | None = None
        self.beside: dict[str, TierPlan] = {}
        self._chosen: dict[tuple[str, int], Tier] = {}
        self._planned: dict[tuple[str, int], Tier] = {}
        """Each round's tier as the plan chose it (`_said_tier`)."""
        self.output_dir = output_dir
        self.started_at: datetime | None = None
        """When the study's first task started (experiment.json `tiers_started_at`): the deadline's clock."""
        self.replans: list[Replan] = []
        self.say: Callable[[str], None] = lambda message: logger.info("%s", message)
        self._lock = threading.Lock()
        named = entries(config) + user_entries(config)
        if not any(given_tier(config, entry) is Tier.AUTO for _, entry in named):
            return
        named += inputs_entries(config, base, offline)
        assert config.engine.deadline_hours is not None  # EngineSettings refuses auto without it
        configured = self.times.model_copy(deep=True)
        if output_dir is not None and output_dir.is_dir():
            self.times = learned_here(self.times, output_dir)
        loaded = study_loads(config, base, groups, self.prices, offline)
        by_name = dict(named)
        loads = [load for _, load in loaded]

        # An entry that names its tier keeps it (an org without a batch API: standard); only auto entries move.
        def pinned(name: str) -> Tier | None:
            entry = by_name[name]
            tier = given_tier(config, entry)
            if tier is Tier.AUTO:
                return None
            return tier or (Tier.BATCH if resolve_org(entry.model, entry.org).batch else Tier.STANDARD)

        flex_ok = [
            self.prices.offers_flex(resolve_org(by_name[name].model, by_name[name].org).org, by_name[name].model)
            for name, _ in loaded
        ]
        self._loaded, self._flex_ok, self._pinned = loaded, flex_ok, [pinned(name) for name, _ in loaded]
        groups_of, fixed = _groups(loaded, lambda name: pinned(name) is None), [pinned(name) for name, _ in loaded]
        # A study that has sent already goes on from the plan it started with (from the expectations as configured:
        # the deadline and the times cannot change once started), and each round still to start is re-planned with
        # what its jobs took against the hours *left* (`replan`). Planning it afresh from what its jobs took would
        # give the whole deadline again: a study already past it found a plan that "meets" it at standard, twice the
        # price, where the re-plan keeps the planned price (found by the study matrix: judges at `auto`, a budget
        # raised on a late clock). It is never refused for its deadline: what it sent is paid for.
        planned_with = configured if started else self.times
        self.plan = auto_plan(
            loads,
            config.engine.deadline_hours,
            self.prices,
            planned_with,
            flex_ok=flex_ok,
            groups=groups_of,
            fixed=fixed,
        )
        for (name, load), row in zip(loaded, self.plan.rounds, strict=True):
            self._chosen[(name, round_of(load))] = row.tier
        self._planned = dict(self._chosen)
        # Beside it, the same work on the same expectations (a started study's all-batch line read 0.00 h, from the
        # jobs it had finished offline, beside its plan's 12 h).
        self.beside = {t.value: fixed_plan(loads, t, self.prices, planned_with) for t in (Tier.BATCH, Tier.STANDARD)}

    def tier_of(self, name: str, entry: ModelEntry, round: int = 1) -> Tier | None:
        """The tier `entry` (listed as `name`; a simulated user by its model) is sent at in conversation round
        `round` (a judge's one round: 1): `auto` resolved by the plan; None: the org's own path."""
        tier = given_tier(self.config, entry)
        if tier is not Tier.AUTO:
            return tier
        planned = sorted((r, t) for (n, r), t in self._chosen.items() if n == _plan_name(name, entry))
        if not planned:
            return Tier.BATCH
        # The round's own tier; a round the plan has no row for (a judge's, or past the plan's last): the tier of
        # the latest planned round before it, else the first.
        return next((t for r, t in reversed(planned) if r <= round), planned[0][1])

    def replan(
        self,
        name: str,
        entry: ModelEntry,
        number: int,
        now: datetime | None = None,
        run: str | None = None,
        judging: bool = False,
    ) -> None:
        """As round `number` (2 or later) of `entry` starts: plan the study's stages from that round's on again,
        against the hours left of the deadline and the turnaround of the batch jobs finished by then
        (`speceval.engines.tier_plan.replanned`: a round planned at flex never goes back to batch; a started round
        keeps its tier through the caller's `started`). A change of this round's tier is said and kept in
        `replans`, naming the `run` folder whose round it is (`judging`: a judge's round, for all its runs)."""
        deadline = self.config.engine.deadline_hours
        if self.plan is None or self.started_at is None or deadline is None:
            return
        with self._lock:  # the candidates' tasks start their rounds side by side
            stage = next(
                (load.stage for n, load in self._loaded if n == _plan_name(name, entry) and round_of(load) == number),
                None,
            )
            if stage is None or given_tier(self.config, entry) is not Tier.AUTO:
                return
            at = [i for i, (_, load) in enumerate(self._loaded) if load.stage is not None and load.stage >= stage]
            left = [self._loaded[i] for i in at]
            times = self.times.model_copy(deep=True)
            if self.output_dir is not None:
                times = learned_here(times, self.output_dir)
            hours_left = deadline - ((now or utcnow()) - self.started_at).total_seconds() / hour_seconds()
            moves = {n for (n, _), tier in zip(self._loaded, self._pinned, strict=True) if tier is None}
            tiers, meets = replanned(
                [load for _, load in left],
                hours_left,
                self.prices,
                times,
                planned=[self._chosen[(n, round_of(load))] for n, load in left],
                flex_ok=[self._flex_ok[i] for i in at],
                groups=_groups(left, lambda n: n in moves),
                fixed=[self._pinned[i] for i in at],
            )
            before = self._said_tier(name, entry, number)
            self._chosen.update({(n, round_of(load)): tier for (n, load), tier in zip(left, tiers, strict=True)})
            after = self.tier_of(name, entry, number)
            if before is None or after is None or (before is after and meets):
                return
            if before is after and self._said(name, run, number, after):
                return  # a judge's later tasks, still past the deadline at the same tier: said once is enough
            turnaround = times.batch_turnaround_hours.get(resolve_org(entry.model, entry.org).org, 0.0)
            change = Replan(
                entry=name,
                run=run,
                round=number,
                judging=judging,
                planned=before,
                sent=after,
                hours_left=hours_left,
                batch_turnaround_hours=turnaround,
                meets_deadline=meets,
            )
            self.replans.append(change)
        self.say(change.line(name, deadline))

    def _said_tier(self, name: str, entry: ModelEntry, number: int) -> Tier | None:
        """The tier this round of `name` was last said to go at: its latest re-plan's (this invocation's or, on a
        resume, an earlier one's), else the plan's. Not the tier it holds now: a re-plan moves every round still to
        start, and a round moved by another entry's re-plan was then sent at its new tier with no word (a judge
        planned at standard went through the Batch API, and no re-plan said so)."""
        said = next((r.sent for r in reversed(self.replans) if (r.entry, r.round) == (name, number)), None)
        return said or self._planned.get((_plan_name(name, entry), number)) or self.tier_of(name, entry, number)

    def _said(self, name: str, run: str | None, number: int, tier: Tier) -> bool:
        """Whether a re-plan already says this round of `name` (in `run`) goes at `tier` past the deadline."""
        return any(
            (r.entry, r.run, r.round, r.sent, r.meets_deadline) == (name, run, number, tier, False)
            for r in self.replans
        )

    def judging_tier(self, name: str, entry: ModelEntry, started: Tier | None) -> Tier | None:
        """A judge entry's tier as its judging starts: the tier it was sent at by an earlier invocation (`started`,
        from its run.json: its batch jobs in flight are collected, never sent again at flex), else its round of the
        plan re-planned against the hours left and the pace of the jobs finished by then (a study that ran late
        sends its judges at flex, the batch price, where the plan had them on the Batch API)."""
        if started is not None:
            return started
        number = next((round_of(load) for n, load in self._loaded if n == _plan_name(name, entry)), 1)
        self.replan(name, entry, number, judging=True)
        return self.tier_of(name, entry, number)

    def varies(self, name: str, entry: ModelEntry) -> bool:
        """Whether `entry` is sent at `auto` with a plan that may give its rounds different tiers (the caller
        then builds its model per round)."""
        return self.plan is not None and given_tier(self.config, entry) is Tier.AUTO


def _plan_name(name: str, entry: ModelEntry) -> str:
    """The plan's name of an entry's rounds: as the file lists it (`candidates[1]`), else (a simulated user, which
    the context names by its model) as a simulated user. Either, not both: a candidate of the user's model took
    the user's rounds' tiers (sent at flex, or at standard's full price, where the plan said batch)."""
    return name if name.startswith(("candidates[", "judges[")) else f"{USER} {entry.model}"


def round_of(load: RoundLoad) -> int:
    """The conversation round of a load (stage 2k - 1 or 2k is round k; a judge's stage comes after the last)."""
    return (load.stage + 1) // 2 if load.stage is not None else 1


def _groups(loaded: list[tuple[str, RoundLoad]], moves: Callable[[str], bool]) -> list[int]:
    """The plan's groups: an entry that moves (`auto`) a group per round, any other one group for all its rounds."""
    ids: dict[object, int] = {}
    return [ids.setdefault((name, round_of(load)) if moves(name) else name, len(ids)) for name, load in loaded]

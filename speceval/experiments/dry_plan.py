"""What an experiment will send and cost, and how precise it will be, before anything is sent (`--dry-run`).

Counts come from the same plan the run follows (`runner.plan`: every spec × variation × repeat × candidate) and the
inputs on disk: generation sends one request per input and run; compliance one per answer and judge, plus the
spec's example responses once per spec and judge (canaries); ranking one per input, pair and order. Nothing is
written and no provider is contacted.

Costs are at batch prices. *Expected*: the inputs' tokens (UTF-8 bytes / 4, as `speceval.batch.costs` counts them),
answers of `EXPECTED_OUTPUT_TOKENS` (or max_tokens when lower), and a judge prompt's shared prefix (template,
statement, examples) read from the prompt cache by every request of its statement after the first. *Upper bound*:
every answer at max_tokens, nothing cached, each request's JSON framing counted: what the budget reserves.
Conversations: round 1 as above; rounds 2 and later (built from the answers before them) at their upper bound, per
round, the simulated user's turns included.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from speceval.batch.costs import PriceTable, estimate_prompt_tokens
from speceval.conversations.estimate import later_rounds
from speceval.defaults import Mode, Scope
from speceval.engines.tier_plan import RoundPlan
from speceval.experiments.config import ExperimentConfig, JudgeEntry, ModelEntry, first_of_model, user_entry
from speceval.experiments.grid import GenerationRun, Group
from speceval.experiments.plan_inputs import SpecInputs, inputs_stages, read_inputs
from speceval.experiments.plan_tally import EXPECTED_OUTPUT_TOKENS, StagePlan, Tally, usage_of
from speceval.experiments.precision import Assumptions, PairPlan, pair_plan, reached
from speceval.judging.canaries import spec_canaries
from speceval.judging.prompts import render_category, render_compliance, render_ranking, split_shared_prefix
from speceval.spec import Statement
from speceval.wire.usage import Usage


class ExperimentPlan(BaseModel):
    """`speceval run --dry-run --json`: the stages, their costs and the precision plan."""

    experiment_name: str
    stages: list[StagePlan]
    expected_usd: float | None
    upper_bound_usd: float | None
    budget_usd: float | None
    assumptions: Assumptions
    precision: list[PairPlan]
    notes: list[str] = Field(default_factory=list)
    tier_plan: list[RoundPlan] | None = Field(
        default=None, description="`tier: auto`: every entry's rounds at the tier the plan chose, with hours"
    )


def plan_experiment(
    config: ExperimentConfig,
    base: Path,
    groups: list[Group],
    assumptions: Assumptions,
    prices: PriceTable | None = None,
    offline: bool = False,
) -> ExperimentPlan:
    """The dry-run plan of `config` (paths relative to `base`) over the planned `groups` (`runner.plan`); `offline`:
    the emulator answers (the inputs stage's default rater is then any other provider's)."""
    prices = prices or PriceTable.load()
    notes: list[str] = []
    specs = {spec.name: read_inputs(config, base, spec, notes) for spec in config.specs}
    tier = config.engine.tier
    tallies: dict[str, Tally] = {
        stage: Tally(default_tier=tier) for stage in ("generation", "compliance", "ranking") if stage in config.stages
    }
    batch_size = config.engine.batch_size
    later: dict[int, Tally] = {}  # round number → its requests and bound (conversations)
    for group in groups:
        inputs = specs[group.spec.name]
        for run in group.runs:
            max_tokens = max_answer_tokens(config, run)
            if "generation" in tallies:
                prompt = prompt_tokens(run, inputs)
                tallies["generation"].add(
                    inputs.count,
                    batch_size,
                    run.candidate,
                    prices,
                    usage_of(prompt, 0, inputs.count, min(max_tokens, EXPECTED_OUTPUT_TOKENS)),
                    usage_of(prompt, 0, inputs.count, max_tokens, framing=True),
                )
                _later_rounds(later, config, run, inputs, batch_size, prices)
    _judging(config, specs, groups, prices, lambda stage, _: tallies[stage])
    stages = [tally.plan(stage) for stage, tally in tallies.items()]
    stages[1:1] = [later[n].plan(f"generation round {n}") for n in sorted(later)] if "generation" in tallies else []
    stages[:0] = inputs_stages(config, base, prices, offline)  # sent first: before the generation it feeds
    if later:
        notes.append(
            "conversations: generation rounds 2 and later are upper bounds (every conversation to its last round, "
            "every answer at max_tokens, every earlier answer in each later request); each is built from the "
            "answers before it, so only its bound can be planned"
        )
    stages += _card_stages(config, specs, groups, prices)
    known = all(s.expected_usd is not None for s in stages)
    precision = _precision(config, specs, assumptions) if "compliance" in config.stages and config.judges else []
    if not precision:
        notes.append("no precision plan: rates come from compliance judging, and this experiment has none")
    return ExperimentPlan(
        experiment_name=config.experiment_name,
        stages=stages,
        expected_usd=sum(s.expected_usd or 0.0 for s in stages) if known else None,
        upper_bound_usd=sum(s.upper_bound_usd or 0.0 for s in stages) if known else None,
        budget_usd=config.budget_usd,
        assumptions=assumptions,
        precision=precision,
        notes=notes,
    )


TallyFor = Callable[[str, int], Tally]
"""(stage, the judge's index in `config.judges`) → the tally its requests are counted in: a stage's (the dry run's
table) or a judge's (the tier plan's judging round)."""


def judge_tallies(
    config: ExperimentConfig, specs: dict[str, SpecInputs], groups: list[Group], prices: PriceTable
) -> list[Tally]:
    """Each judge entry's requests and bound over the whole study, in `config.judges` order: its compliance and
    ranking targets, the spec's examples it judges and its judge card's retests and rewordings, counted as the dry
    run's stages count them (the tier plan's judging rounds; they counted one plain request per answer, missing
    canaries, the card, a turn judge's turns and ranking's pairs in both orders)."""
    tallies = [Tally(default_tier=config.engine.tier) for _ in config.judges]
    _judging(config, specs, groups, prices, lambda _, j: tallies[j])
    if _card_applies(config):
        _card_judging(config, specs, groups, prices, lambda _, j: tallies[j])
    return tallies


def _judging(
    config: ExperimentConfig, specs: dict[str, SpecInputs], groups: list[Group], prices: PriceTable, into: TallyFor
) -> None:
    """Every judging request of the study, counted `into` its tally: compliance per run, ranking per ordered pair,
    and each spec's examples (canaries) once per judge model and mode."""
    batch_size, judge_tokens = config.engine.batch_size, config.engine.max_tokens
    rankers = first_of_model(config.judges)  # as the runner: a model listed at several scopes ranks once
    for group in groups:
        inputs = specs[group.spec.name]
        for j, judge in enumerate(config.judges):
            if "compliance" in config.stages:
                for run in group.runs:
                    answers, shape = max_answer_tokens(config, run), _transcript(config, run, inputs)
                    _judge_requests(
                        into("compliance", j), inputs, judge, 1, answers, judge_tokens, batch_size, prices, shape
                    )
            if "ranking" in config.stages and any(judge is ranker for ranker in rankers):
                for a, b in itertools.combinations(group.runs, 2):
                    answers = max(max_answer_tokens(config, a), max_answer_tokens(config, b))
                    for _ in range(2):  # both orders, each its own target
                        _judge_requests(into("ranking", j), inputs, judge, 2, answers, judge_tokens, batch_size, prices)
    if "compliance" in config.stages:
        # As build_tasks: none for a categorical judge (no known category to check an example against), and one
        # model's examples judged once per mode (by its first entry), shared with its other scopes.
        firsts = first_of_model(config.judges, by_mode=True)
        canaried = [
            j
            for j, judge in enumerate(config.judges)
            if judge.mode != Mode.CATEGORIES and any(judge is first for first in firsts)
        ]
        for inputs in specs.values():
            for j in canaried:
                _canary_requests(into("compliance", j), inputs, config.judges[j], judge_tokens, batch_size, prices)


def prompt_tokens(run: GenerationRun, inputs: SpecInputs) -> int:
    """The tokens of a run's first-round prompts: every input, and the variation's system prompt with each."""
    system = estimate_prompt_tokens(run.settings["system_prompt"]) if run.settings.get("system_prompt") else 0
    return _sum(inputs) + system * inputs.count


def max_answer_tokens(config: ExperimentConfig, run: GenerationRun) -> int:
    """An answer's bound in `run`: its variation's max_tokens, else the study's."""
    return int(run.settings.get("max_tokens", config.engine.max_tokens))


class RoundBound(BaseModel):
    """One model's requests in one later round of one run, at most, and their tokens at most."""

    round: int
    role: Literal["candidate", "simulated user"]
    entry: ModelEntry
    requests: int
    usage: Usage


def later_round_bounds(config: ExperimentConfig, run: GenerationRun, inputs: SpecInputs) -> list[RoundBound]:
    """A run's conversation rounds 2.. per round and role, as sent (a round's user turns before its answers): the
    bound of `speceval.conversations.estimate` (expected = bound: no answer length is known yet), each answer with
    its variation's system prompt. The dry run's rounds and the tier plan's later rounds are both this (the plan
    had a coarser copy, over the dry run's bound by half in a study with a simulated user)."""
    if inputs.inputs is None:
        return []
    user = config.simulated_user_of(run.settings)
    follow_ups = run.settings.get("follow_ups")
    conversations = inputs.inputs.with_follow_ups(
        follow_ups if isinstance(follow_ups, list) else []
    ).with_simulated_user(user.max_turns if user is not None else None)
    if not conversations.has_conversations or conversations.max_rounds < 2:
        return []
    statements = {s.id: s for s in inputs.spec.statements}
    system = run.settings.get("system_prompt")
    found = []
    max_tokens = max_answer_tokens(config, run)
    for bound in later_rounds(
        conversations,
        run.candidate.model,
        max_tokens,
        user,
        statements,
        per_round=True,
        system_prompt=str(system) if system else None,
    ):
        assert bound.round is not None  # per_round bounds name their round
        answers = bound.role == "candidate"
        model = run.candidate if answers or user is None else user_entry(user).model_copy(update={"model": bound.model})
        usage = Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens)
        found.append(RoundBound(round=bound.round, role=bound.role, entry=model, requests=bound.requests, usage=usage))
    return found


def _later_rounds(
    later: dict[int, Tally],
    config: ExperimentConfig,
    run: GenerationRun,
    inputs: SpecInputs,
    batch_size: int,
    prices: PriceTable,
) -> None:
    """Add a run's conversation rounds 2.. (candidate answers, and its simulated user's turns) to `later`, per
    round (`later_round_bounds`)."""
    for bound in later_round_bounds(config, run, inputs):
        later.setdefault(bound.round, Tally(default_tier=config.engine.tier)).add(
            bound.requests, batch_size, bound.entry, prices, bound.usage, bound.usage
        )


def _transcript(config: ExperimentConfig, run: GenerationRun, inputs: SpecInputs) -> tuple[int, int]:
    """A run's conversations as the judges see them, at most: (assistant turns, tokens of a user turn after the
    first: the simulated user's max_tokens, else the longest scripted follow-up)."""
    user = config.simulated_user_of(run.settings)
    follow_ups = run.settings.get("follow_ups")
    scripted = [str(f) for f in follow_ups] if isinstance(follow_ups, list) else []
    turns = most_turns(config, run.settings)
    if inputs.inputs is not None and inputs.inputs.has_conversations:
        turns = max(turns, inputs.inputs.with_follow_ups(scripted).max_rounds)
    if user is not None:
        return turns, int(user.max_tokens)
    return turns, max((estimate_prompt_tokens(f) for f in scripted), default=0)


def _card_stages(
    config: ExperimentConfig, specs: dict[str, SpecInputs], groups: list[Group], prices: PriceTable
) -> list[StagePlan]:
    """What the judge card adds (`judge_card:`): its paraphrases, once per spec; per judging target, the drawn
    share re-sent unchanged, and judged again under each wording. Every answer is assumed to succeed (the share is
    drawn from the answers that did, so a failed answer makes the card smaller, never larger)."""
    card = config.judge_card
    if card is None or not _card_applies(config):
        return []
    tier = config.engine.tier
    paraphrases, retest, worded = Tally(default_tier=tier), Tally(default_tier=tier), Tally(default_tier=tier)
    batch_size, judge_tokens = config.engine.batch_size, config.engine.max_tokens
    if card.paraphrases and card.paraphrases_file is None:
        first = config.judges[0]
        paraphraser = ModelEntry(
            model=card.paraphraser or first.model, org=card.paraphraser_org if card.paraphraser else first.org
        )
        for inputs in specs.values():
            texts = [s.text for s in inputs.spec.statements if inputs.tokens.get(s.id)]
            requests = len(texts) * card.paraphrases
            prompt = card.paraphrases * sum(estimate_prompt_tokens(t) + 60 for t in texts)  # 60: the instruction
            output = min(judge_tokens, EXPECTED_OUTPUT_TOKENS)
            paraphrases.add(
                requests,
                batch_size,
                paraphraser,
                prices,
                usage_of(prompt, 0, requests, output),
                usage_of(prompt, 0, requests, judge_tokens, framing=True),
            )
    _card_judging(config, specs, groups, prices, lambda stage, _: retest if stage == "retest" else worded)
    found = [retest.plan(f"judge card: retest ({card.retest:g} of each judge's answers, re-sent unchanged)")]
    if card.paraphrases:
        if paraphrases.runs:
            found.append(paraphrases.plan(f"judge card: paraphrases ({card.paraphrases} per statement, once)"))
        found.append(worded.plan(f"judge card: rewordings (the retest's answers under {card.paraphrases} wordings)"))
    return found


def _card_applies(config: ExperimentConfig) -> bool:
    card = config.judge_card
    return card is not None and bool(card.retest) and "compliance" in config.stages and bool(config.judges)


def _card_judging(
    config: ExperimentConfig, specs: dict[str, SpecInputs], groups: list[Group], prices: PriceTable, into: TallyFor
) -> None:
    """The judge card's judging requests, counted `into` their tally ("retest", "worded"): per judging target,
    the drawn share re-sent unchanged, and judged again under each wording."""
    card = config.judge_card
    assert card is not None and card.retest
    batch_size, judge_tokens = config.engine.batch_size, config.engine.max_tokens
    for group in groups:
        drawn = _drawn(specs[group.spec.name], card.retest)
        for j, judge in enumerate(config.judges):
            for run in group.runs:
                answers, shape = max_answer_tokens(config, run), _transcript(config, run, specs[group.spec.name])
                _judge_requests(into("retest", j), drawn, judge, 1, answers, judge_tokens, batch_size, prices, shape)
                for _ in range(card.paraphrases):
                    _judge_requests(
                        into("worded", j), drawn, judge, 1, answers, judge_tokens, batch_size, prices, shape
                    )


def _drawn(inputs: SpecInputs, share: float) -> SpecInputs:
    """The share of a candidate's answers the card draws (as `card_tasks` counts it: round(share × N), at least 1),
    spread over the statements by largest remainders; each statement's first inputs stand for its drawn ones."""
    total = inputs.count
    count = min(total, max(1, round(share * total))) if total else 0
    exact = {sid: len(t) * count / total for sid, t in inputs.tokens.items()} if total else {}
    taken = {sid: int(value) for sid, value in exact.items()}
    for sid in sorted(exact, key=lambda k: taken[k] - exact[k])[: count - sum(taken.values())]:
        taken[sid] += 1
    return SpecInputs(
        inputs.spec, {sid: t[: taken[sid]] for sid, t in inputs.tokens.items()}, inputs.conversations, inputs.inputs
    )


def _sum(inputs: SpecInputs) -> int:
    return sum(sum(t) for t in inputs.tokens.values())


def _judge_prompt(judge: JudgeEntry, statement: Statement, answers: int) -> tuple[int, int]:
    """(tokens of a judge prompt around its input and answers, tokens of its shared prefix) for `statement`."""
    if answers == 2:
        prompt = render_ranking(statement, "", "", "")
    elif judge.mode == Mode.CATEGORIES and judge.categories:
        prompt = render_category(statement, "", "", judge.categories)
    else:
        prompt = render_compliance(statement, "", "", likert=judge.mode == Mode.LIKERT)
    split = split_shared_prefix(prompt)
    return estimate_prompt_tokens(prompt), estimate_prompt_tokens(split[0]) if split else 0


def _judge_requests(
    tally: Tally,
    inputs: SpecInputs,
    judge: JudgeEntry,
    answers: int,
    answer_tokens: int,
    judge_tokens: int,
    batch_size: int,
    prices: PriceTable,
    shape: tuple[int, int] = (1, 0),
) -> None:
    """One judge target: a request per input, each with `answers` answers (1: compliance, 2: ranking); in a
    conversation run (`shape`: its turns and the tokens of a user turn) every conversation to its last turn, judged
    once whole, or at `scope: turn` once per assistant turn with the transcript up to it (was: one plain answer a
    conversation, a third of what a 3-turn study's turn judge sent)."""
    turns, user = shape
    per_input = turns if judge.scope is Scope.TURN else 1
    seen = range(1, turns + 1) if judge.scope is Scope.TURN else [turns]  # assistant turns in each request
    expected_answer = min(answer_tokens, EXPECTED_OUTPUT_TOKENS)
    expected_prompt = bound_prompt = cached = requests = 0
    for statement in inputs.spec.statements:
        tokens = inputs.tokens.get(statement.id, [])
        if not tokens:
            continue
        around, prefix = _judge_prompt(judge, statement, answers)
        requests += len(tokens) * per_input
        expected_user = min(user, EXPECTED_OUTPUT_TOKENS)
        for t in seen:
            expected_prompt += len(tokens) * (around + answers * t * expected_answer + (t - 1) * expected_user)
            bound_prompt += len(tokens) * (around + answers * t * answer_tokens + (t - 1) * user)
        expected_prompt += sum(tokens) * per_input
        bound_prompt += sum(tokens) * per_input
        cached += (len(tokens) * per_input - 1) * prefix  # the first request writes the cache, the rest read it
    output = min(judge_tokens, EXPECTED_OUTPUT_TOKENS)
    tally.add(
        requests,
        batch_size,
        judge,
        prices,
        usage_of(expected_prompt, cached, requests, output),
        usage_of(bound_prompt, 0, requests, judge_tokens, framing=True),
    )


def _canary_requests(
    tally: Tally, inputs: SpecInputs, judge: JudgeEntry, judge_tokens: int, batch_size: int, prices: PriceTable
) -> None:
    canaries = spec_canaries(inputs.spec, [sid for sid, tokens in inputs.tokens.items() if tokens])
    if not canaries:
        return
    statements = {s.id: s for s in inputs.spec.statements}
    prompt = sum(
        estimate_prompt_tokens(
            render_compliance(statements[c.statement_id], c.user_query, c.response, likert=judge.mode == Mode.LIKERT)
        )
        for c in canaries
    )
    output = min(judge_tokens, EXPECTED_OUTPUT_TOKENS)
    tally.add(
        len(canaries),
        batch_size,
        judge,
        prices,
        usage_of(prompt, 0, len(canaries), output),
        usage_of(prompt, 0, len(canaries), judge_tokens, framing=True),
    )


def _precision(config: ExperimentConfig, specs: dict[str, SpecInputs], assumptions: Assumptions) -> list[PairPlan]:
    """Every comparison the report makes: candidates within each variation, variations within each candidate."""
    variations = list(config.variations.named_combinations())
    candidates = [c.model for c in config.candidates]
    runs = config.runs_per_variation
    plans = []
    for name, inputs in specs.items():
        for variation in variations:
            plans += [
                pair_plan(name, "candidates", a, b, variation, inputs.count, runs, assumptions)
                for a, b in itertools.combinations(candidates, 2)
            ]
        for candidate in candidates:
            plans += [
                pair_plan(name, "variations", a, b, candidate, inputs.count, runs, assumptions)
                for a, b in itertools.combinations(variations, 2)
            ]
        if len(candidates) == 1 and len(variations) == 1:
            plans.append(pair_plan(name, "rate", candidates[0], "", variations[0], inputs.count, runs, assumptions))
        plans += _conversation_plans(config, name, inputs.count, candidates, assumptions)
    return plans


def _conversation_plans(
    config: ExperimentConfig, spec: str, inputs: int, candidates: list[str], assumptions: Assumptions
) -> list[PairPlan]:
    """Per conversation variation: the last turn's rate (over the conversations expected to reach it) and the flip
    rate (one indicator per conversation that reaches turn 2; a conversation that ends at turn 1 cannot flip), for
    each pair of candidates (or the one candidate). Flips are planned at the assumed rate of non-compliance, 1 -
    rate: a flip needs a non-compliant later turn, so flips are at most that common."""
    runs = config.runs_per_variation
    found = []
    pairs = list(itertools.combinations(candidates, 2)) or [(candidates[0], "")]
    flip = assumptions.model_copy(update={"rate": 1 - assumptions.rate})
    for variation, settings in config.variations.named_combinations().items():
        turns = most_turns(config, settings)
        if turns < 2:
            continue
        last = reached(inputs, turns, assumptions.continue_rate)
        second = reached(inputs, 2, assumptions.continue_rate)
        for a, b in pairs:
            found.append(pair_plan(spec, f"turn {turns} rate", a, b, variation, last, runs, assumptions))
            found.append(pair_plan(spec, "flips", a, b, variation, second, runs, flip))
    return found


def most_turns(config: ExperimentConfig, settings: dict[str, object]) -> int:
    """The most turns a variation's conversations have: its simulated user's max_turns, else 1 + its follow-ups."""
    user = config.simulated_user_of(settings)
    if user is not None:
        return int(user.max_turns)
    follow_ups = settings.get("follow_ups")
    return 1 + len(follow_ups) if isinstance(follow_ups, list) else 1

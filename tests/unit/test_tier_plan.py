"""The tier checks and the `auto` plan: cheapest tier per group that meets a deadline, learned turnaround, and the
price table's flex list (shipped, and replaced by a newer table)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from speceval.batch.costs import PriceTable
from speceval.batch.records import BatchRecord, GeminiHandle, JobState, OpenAIHandle
from speceval.defaults import Tier
from speceval.engines.tier_plan import RoundLoad, TierPlan, TierTimes, auto_plan, fixed_plan, learned_turnaround
from speceval.engines.tiers import check_tier
from speceval.errors import ConfigError
from speceval.providers.registry import resolve_org


def rounds(n: int, requests: int = 100, provider: str = "openai", model: str = "o4-mini") -> list[RoundLoad]:
    return [
        RoundLoad(
            label=f"round {i}",
            provider=provider,
            model=model,
            requests=requests,
            input_tokens=50 * requests,
            output_tokens=200 * requests,
        )
        for i in range(1, n + 1)
    ]


def test_auto_stays_at_batch_when_batch_meets_the_deadline_and_leaves_it_only_as_far_as_needed() -> None:
    prices, times = PriceTable.load(), TierTimes()  # batch 6 h a round at OpenAI; flex 4 calls of 120 s a round
    loads = rounds(4)
    relaxed = auto_plan(loads, 30, prices, times, flex_ok=[True] * 4)
    assert [r.tier for r in relaxed.rounds] == [Tier.BATCH] * 4 and relaxed.hours == 24
    tight = auto_plan(loads, 13, prices, times, flex_ok=[True] * 4)
    assert sorted(r.tier for r in tight.rounds).count(Tier.FLEX) == 2  # 2 rounds at batch (12 h) + 2 at flex
    assert tight.hours <= 13
    # Flex costs what batch costs; standard costs twice as much.
    assert tight.cost_usd == pytest.approx(relaxed.cost_usd)
    standard = fixed_plan(loads, Tier.STANDARD, prices, times)
    assert standard.cost_usd == pytest.approx(2 * relaxed.cost_usd)


def test_auto_uses_standard_only_where_flex_is_not_served_and_refuses_a_deadline_nothing_meets() -> None:
    prices, times = PriceTable.load(), TierTimes()
    loads = rounds(2, model="gpt-4.1-mini")
    plan = auto_plan(loads, 1, prices, times, flex_ok=[False, False])
    assert [r.tier for r in plan.rounds] == [Tier.STANDARD, Tier.STANDARD]
    with pytest.raises(ConfigError, match="no plan is expected to end within deadline_hours 0.001"):
        auto_plan(loads, 0.001, prices, times, flex_ok=[False, False])
    # One run has one endpoint: rounds of one group share a tier.
    shared = auto_plan(rounds(3), 13, prices, times, flex_ok=[True] * 3, groups=[0, 0, 0])
    assert len({r.tier for r in shared.rounds}) == 1 and shared.rounds[0].tier is Tier.FLEX


def test_the_turnaround_is_learned_from_the_studys_own_finished_jobs() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    jobs = [
        BatchRecord(
            batch_id=f"b{i}",
            provider="openai",
            model="o4-mini",
            idempotency_key=f"k{i}",
            state=JobState.COMPLETED,
            raw_state="completed",
            handle=OpenAIHandle(),
            request_file="r.jsonl",
            request_count=1,
            submitted_at=start,
            ended_at=start + timedelta(hours=hours),
        )
        for i, hours in enumerate([0.5, 1.0, 3.0])
    ]
    learned = learned_turnaround(jobs, TierTimes().batch_turnaround_hours)
    assert learned["openai"] == 1.0 and learned["anthropic"] == 1.0 and learned["google"] == 6.0


def test_gemini_jobs_teach_the_google_turnaround_and_the_learned_times_stay_valid() -> None:
    """A Gemini API job's record names its adapter (`gemini`), the plan its org (`google`): the learned turnaround is
    Google's, and the times validate when run.json is read back. Keyed `gemini`, a second `--tier auto` run in a
    folder with finished Gemini jobs was refused (exit 2, `gemini: not a batch provider`; the generation matrix)."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    job = BatchRecord(
        batch_id="batches/b0",
        provider="gemini",
        model="gemini-2.5-flash",
        idempotency_key="k0",
        state=JobState.COMPLETED,
        raw_state="JOB_STATE_SUCCEEDED",
        handle=GeminiHandle(),
        request_file="r.jsonl",
        request_count=1,
        submitted_at=start,
        ended_at=start + timedelta(hours=2),
    )
    learned = learned_turnaround([job], TierTimes().batch_turnaround_hours)
    assert learned["google"] == 2.0 and set(learned) == set(TierTimes().batch_turnaround_hours)
    assert TierTimes.model_validate({"batch_turnaround_hours": learned}).batch_turnaround_hours["google"] == 2.0


def test_flex_is_refused_for_providers_and_models_without_it_naming_the_table_and_how_to_replace_it(tmp_path) -> None:
    prices = PriceTable.load()
    check_tier(resolve_org("o4-mini", "openai"), "o4-mini", Tier.FLEX, where="x", prices=prices)
    with pytest.raises(ConfigError, match="org anthropic has no flex tier"):
        check_tier(resolve_org("claude-haiku-4-5", None), "claude-haiku-4-5", Tier.FLEX, where="x", prices=prices)
    with pytest.raises(ConfigError, match=r"does not serve gpt-4.1-mini at flex.*--prices FILE"):
        check_tier(resolve_org("gpt-4.1-mini", None), "gpt-4.1-mini", Tier.FLEX, where="x", prices=prices)
    newer = tmp_path / "prices.json"
    newer.write_text(json.dumps({"as_of": "2026-12", "models": {}, "flex": {"openai": ["gpt-4.1-mini"]}}))
    replaced = PriceTable.load(newer)
    check_tier(resolve_org("gpt-4.1-mini", None), "gpt-4.1-mini", Tier.FLEX, where="x", prices=replaced)
    assert not replaced.offers_flex("openai", "o4-mini")  # a provider's list given replaces the shipped one
    assert replaced.as_of == "2026-12" and str(newer) in replaced.source
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {}, "flex": {"openai": "o4-mini"}}))
    with pytest.raises(Exception, match="flex"):
        PriceTable.load(bad)


def test_auto_keeps_the_early_rounds_at_batch_and_sends_the_later_ones_at_flex_or_standard() -> None:
    prices, times = PriceTable.load(), TierTimes()  # 6 h a batch round trip at OpenAI
    staged = [load.model_copy(update={"stage": n}) for n, load in enumerate(rounds(4), 1)]
    # Each round its own group (an `auto` conversation candidate): 24 h all-batch misses 13 h; two rounds must leave
    # the Batch API. Flex costs what batch does, so the latest go: rounds 1-2 stay batch (their jobs teach the
    # turnaround a re-plan reads).
    plan = auto_plan(staged, 13, prices, times, flex_ok=[True] * 4)
    assert [r.tier for r in plan.rounds] == [Tier.BATCH, Tier.BATCH, Tier.FLEX, Tier.FLEX]
    assert plan.hours <= 13 and plan.cost_usd == pytest.approx(fixed_plan(staged, Tier.BATCH, prices, times).cost_usd)
    # Not served at flex: standard, where it costs least. A later round carries the earlier answers (more input
    # tokens), so the cheapest rounds to pay full price for are the earliest.
    growing = [
        load.model_copy(update={"input_tokens": load.input_tokens * n, "model": "gpt-4.1-mini"})
        for n, load in enumerate(staged, 1)
    ]
    listed = [growing[i] for i in (2, 0, 3, 1)]  # listed out of order: the choice is by cost, not position
    standard = auto_plan(listed, 13, prices, times, flex_ok=[False] * 4)
    assert {r.label: r.tier for r in standard.rounds} == {
        "round 1": Tier.STANDARD,
        "round 2": Tier.STANDARD,
        "round 3": Tier.BATCH,
        "round 4": Tier.BATCH,
    }
    later = [(r.cost_usd or 0) for r in fixed_plan(growing, Tier.STANDARD, prices, times).rounds]
    assert later[0] < later[-1]


def test_a_flex_call_takes_what_the_studys_own_flex_calls_took() -> None:
    """The median seconds of the study's answered flex calls (not the assumed 120), read on the plan's clock (on a
    clock of 2 s an hour, 0.5 s of wall time are a quarter hour); a tier without calls keeps its expectation."""
    from speceval.engines.tier_plan import TierTimes, learned_times

    seen = {"flex": {"": [200.0, 300.0, 900.0]}, "standard": {"": [20.0]}}
    learned = learned_times(TierTimes(), [], seen, hour=3600)
    assert (learned.flex_seconds, learned.standard_seconds) == (300, 20)
    assert learned.batch_turnaround_hours == TierTimes().batch_turnaround_hours
    assert learned_times(TierTimes(), [], {"flex": {"": [0.5]}}, hour=2).flex_seconds == 900
    assert learned_times(TierTimes(), [], {}, hour=3600).flex_seconds == 120


def test_each_models_flex_calls_plan_that_models_rounds() -> None:
    """Per model: o3's flex calls took 600 s and gpt-5-mini's 30 s here, so a round of o3 is planned at o3's pace
    and gpt-5-mini's at its own (one median over both would make o3 look fast and gpt-5-mini slow); a model with no
    calls yet keeps the median over all."""
    from speceval.defaults import Tier
    from speceval.engines.tier_plan import RoundLoad, TierTimes, learned_times

    seen = {"flex": {"o3": [600.0, 600.0], "gpt-5-mini": [30.0, 30.0, 30.0]}}
    learned = learned_times(TierTimes(max_concurrency=10), [], seen, hour=3600)
    assert learned.flex_seconds_by_model == {"o3": 600.0, "gpt-5-mini": 30.0} and learned.flex_seconds == 30.0

    def load(model: str) -> RoundLoad:
        return RoundLoad(label="round 1", provider="openai", model=model, requests=100, input_tokens=1, output_tokens=1)

    assert learned.of(Tier.FLEX, load("o3")) == 10 * 600 / 3600
    assert learned.of(Tier.FLEX, load("gpt-5-mini")) == 10 * 30 / 3600
    assert learned.of(Tier.FLEX, load("o4-mini")) == 10 * 30 / 3600  # no calls of its own: the median over all


def test_the_calls_a_folder_answered_are_read_from_its_journals(tmp_path: Path) -> None:
    """`realtime_call_seconds`: every answered call's seconds per tier from the realtime journals at or below a
    folder (a provider's `default` is standard); failed calls and batch runs teach nothing."""
    from speceval.batch.journal import Journal, JournalEntry
    from speceval.batch.manifest import RunManifest
    from speceval.batch.records import Outcome, ResultRecord
    from speceval.operations.runs import realtime_call_seconds

    run = tmp_path / "run"
    run.mkdir()
    RunManifest(
        kind="generation",
        command=["test"],
        spec_name="s",
        spec_path="s.jsonl",
        spec_sha256="0",
        inputs_path="inputs",
        inputs_sha256="0",
        model_name="o3",
        provider="openai",
    ).save(run)
    journal = Journal(run)
    journal.open()
    for index, (tier, seconds, outcome) in enumerate(
        [("flex", 2.0, Outcome.SUCCEEDED), ("default", 0.5, Outcome.SUCCEEDED), ("flex", 9.0, Outcome.ERRORED)]
    ):
        record = ResultRecord(
            original_index=index,
            input_text="q",
            output_text="a",
            batch_id="realtime-1",
            outcome=outcome,
            seconds=seconds,
            service_tier=tier,
        )
        journal.append(JournalEntry(statement_id="s", record=record))
    journal.close()
    assert realtime_call_seconds(tmp_path) == {"flex": {"o3": [2.0]}, "standard": {"o3": [0.5]}}


def test_the_plans_total_says_its_cost_is_an_upper_bound_beside_the_budget() -> None:
    from speceval.cli.tier_flags import _total_line

    # The plan's cost is every answer at max_tokens: "over the budget" read as "will not fit" for a study expected
    # to cost a fifth of its budget (the budget holds jobs on their bounds and stops on what was spent).
    line = _total_line("this plan", TierPlan(rounds=[]), 8.0, 5.0)
    assert "upper bound within the budget $5.00" in line


def test_a_round_beside_a_slower_one_of_its_stage_stays_at_batch() -> None:
    """Two judges side by side, one with 8 times the requests: taking the smaller to flex first (the larger gain of
    its own hours) ended the study no sooner, and the plan kept it there (off the Batch API for nothing) while the
    larger judge stayed at batch. Moves the deadline does not need are undone."""
    prices, times = PriceTable.load(), TierTimes()
    answers = [r.model_copy(update={"stage": 1}) for r in rounds(1)]
    small, large = (
        r.model_copy(update={"label": "judging", "stage": 2, "model": "gpt-5"})
        for r in (*rounds(1, 100), *rounds(1, 800))
    )
    plan = auto_plan([*answers, large, small], 8, prices, times, flex_ok=[True] * 3)
    # answers at flex (6 h saved), both judges at batch (6 h): within 8 h; the small judge at flex saves nothing
    assert [r.tier for r in plan.rounds] == [Tier.FLEX, Tier.BATCH, Tier.BATCH] and plan.hours <= 8
    # Where the stage must shrink, both judges leave it.
    fast = auto_plan([*answers, large, small], 2, prices, times, flex_ok=[True] * 3)
    assert [r.tier for r in fast.rounds] == [Tier.FLEX, Tier.FLEX, Tier.FLEX]


def test_a_realtime_round_goes_no_faster_than_its_entrys_own_limits() -> None:
    """An entry's `rpm`, `tpm` and `max_concurrency` bound how fast its round can go realtime: the plan's hours
    ignored them (40 calls at 1 a minute planned at 0.01 h)."""
    times = TierTimes()  # standard: 10 s a call, 32 in flight
    [load] = rounds(1, requests=40)
    assert times.of(Tier.STANDARD, load) == pytest.approx(2 * 10 / 3600)
    assert times.of(Tier.STANDARD, load.model_copy(update={"rpm": 1})) == pytest.approx(40 / 60)
    assert times.of(Tier.STANDARD, load.model_copy(update={"rpm": 1, "rate_period_seconds": 1})) == pytest.approx(
        40 / 3600
    )
    tokens = load.input_tokens + load.output_tokens  # 250 a call
    assert times.of(Tier.FLEX, load.model_copy(update={"tpm": 100})) == pytest.approx(tokens / 100 / 60)
    assert times.of(Tier.STANDARD, load.model_copy(update={"max_concurrency": 1})) == pytest.approx(40 * 10 / 3600)
    assert times.of(Tier.BATCH, load.model_copy(update={"rpm": 1})) == times.of(Tier.BATCH, load)  # one job

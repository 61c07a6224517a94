"""Position consistency over repeated runs (issue 42): a row per run and a pooled row that counts every run, its
interval clustered by input (the runs of one input are not independent), its rate never outside the runs' rates."""

from __future__ import annotations

import logging
import random

import pytest

from speceval.analysis.reading.rows import RankingRow
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.registry import WILSON, method
from speceval.analysis.statistics.stats import wilson_interval
from speceval.analysis.tables.judge_card import judge_card
from speceval.analysis.tables.rankings import judge_position_consistency, position_consistency
from tests.analysis.test_clustered import ranking


def comparison(index: int, run: int, consistent: bool, statement: str = "st", pair=("m1", "m2")) -> list[RankingRow]:
    """Both orders of one input in one run: the same winner (m1) when `consistent`, else the one shown first."""
    a, b = pair
    where = {"statement_id": statement, "input": f"{statement}-q{index}"}
    return [
        ranking(a, b, index, 1, run).model_copy(update=where),
        ranking(b, a, index, -1 if consistent else 1, run).model_copy(update=where),
    ]


def test_every_run_is_counted_and_the_pooled_row_is_clustered_by_input():
    # Run 1: 4 of 5 consistent, run 2: 3 of 5, run 3: 5 of 5; inputs 0-4 in two statements.
    plan = {1: {4}, 2: {0, 3}, 3: set()}
    rows = [
        r
        for run, flips in plan.items()
        for i in range(5)
        for r in comparison(i, run, i not in flips, statement="a" if i < 2 else "b")
    ]
    found = position_consistency(rows)
    assert [(c.run, c.runs, c.inputs, c.consistent, c.compared) for c in found] == [
        (1, 1, 5, 4, 5),
        (2, 1, 5, 3, 5),
        (3, 1, 5, 5, 5),
        (None, 3, 5, 12, 15),
    ]
    *runs, pooled = found
    assert all(r.ci_method == WILSON for r in runs)  # one run, one pair: every input compared once
    assert pooled.ci_method is not None and "clusters = inputs, stratified by statement" in pooled.ci_method
    # The interval is the package's clustered one over the 15 indicators, one cluster per input across its runs.
    values = [float(i not in plan[run]) for run in plan for i in range(5)]
    clusters = [f"{'a' if i < 2 else 'b'}-q{i}" for _ in plan for i in range(5)]
    strata = {f"{'a' if i < 2 else 'b'}-q{i}": "a" if i < 2 else "b" for i in range(5)}
    expected = rate_interval(values, clusters, strata)
    assert expected is not None
    assert (pooled.ci_low, pooled.ci_high, pooled.ci_method) == pytest.approx(expected)
    assert min(r.rate for r in runs) <= pooled.rate <= max(r.rate for r in runs)  # type: ignore[operator]


def test_identical_repeated_runs_do_not_narrow_the_pooled_interval():
    one = [r for i in range(12) for r in comparison(i, 1, i % 4 != 0)]

    def pooled(copies: int):
        rows = [r.model_copy(update={"run": k}) for k in range(1, copies + 1) for r in one]
        return position_consistency(rows)[-1]

    two, five = pooled(2), pooled(5)
    assert (two.run, five.run, two.compared, five.compared) == (None, None, 24, 60)
    assert (two.ci_low, two.ci_high) == pytest.approx((five.ci_low, five.ci_high))
    assert method("position_consistency_pooled").split(",")[0] in str(two.ci_method)


def test_a_pooled_rate_never_lies_outside_its_runs_rates():
    """A property of the estimator (consistent over compared, summed over runs: a mean of the runs' rates weighted
    by their comparisons), checked on random runs of unequal sizes, not only on a constructed case."""
    rng = random.Random(42)
    for _ in range(200):
        rows = []
        for run in range(1, rng.randint(2, 4) + 1):
            for i in range(rng.randint(1, 8)):
                rows += comparison(i, run, rng.random() < 0.7)
        *runs, pooled = position_consistency(rows)
        assert pooled.run is None and pooled.runs == len(runs)
        assert pooled.compared == sum(r.compared for r in runs)
        assert min(r.rate for r in runs) <= pooled.rate <= max(r.rate for r in runs)  # type: ignore[operator]
        assert pooled.ci_low is not None and pooled.ci_high is not None
        assert pooled.ci_low <= pooled.rate <= pooled.ci_high


def test_one_run_has_no_pooled_row_and_several_pairs_of_one_run_are_clustered():
    rows = [r for i in range(6) for pair in (("m1", "m2"), ("m1", "m3")) for r in comparison(i, 1, i != 0, pair=pair)]
    (only,) = position_consistency(rows)
    assert (only.run, only.inputs, only.consistent, only.compared) == (1, 6, 10, 12)
    # Each input is compared for two pairs: not independent, so the clustered interval, not Wilson over 12.
    assert only.ci_method != WILSON and "clusters = inputs" in str(only.ci_method)


def test_the_judge_cards_position_consistency_pools_every_variation_and_run_clustered_by_input():
    one = [r for i in range(12) for r in comparison(i, 1, i % 4 != 0)]
    rows = [
        r.model_copy(update={"run": run, "variation": variation})
        for variation in ("v", "w")
        for run in (1, 2, 3)
        for r in one
    ]
    (row,) = judge_position_consistency(rows)
    assert (row.variation, row.run, row.runs, row.inputs, row.consistent, row.compared) == ("all", None, 6, 12, 54, 72)
    (single,) = judge_position_consistency(one)
    assert single.run == 1 and single.ci_method == WILSON
    # Six copies of one run add no evidence: the clustered interval is wider than Wilson over the 72 comparisons
    # taken as independent (what the card gave before), and the card quotes it as it is.
    naive = wilson_interval(54, 72)
    assert row.ci_low is not None and row.ci_high is not None
    assert row.ci_high - row.ci_low > naive[1] - naive[0]  # type: ignore[operator]
    [card] = judge_card([("s", "j")], [], [], None, [], [row], {}, {})
    assert (card.position.value, card.position_compared) == (0.75, 72)
    assert (card.position.ci_low, card.position.ci_high, card.position.ci_method) == (
        row.ci_low,
        row.ci_high,
        row.ci_method,
    )


def test_runs_that_were_not_told_apart_are_said_not_silently_dropped(caplog):
    """Files of three epochs that do not name their run read as one run: every input is judged six times there."""
    rows = [r.model_copy(update={"run": 1}) for run in (1, 2, 3) for i in range(4) for r in comparison(i, run, True)]
    with caplog.at_level(logging.WARNING):
        assert position_consistency(rows) == []
    assert "4 comparison(s) judged more than twice in one run" in caplog.text and "not counted" in caplog.text

"""Kaplan–Meier of the first flip, hand-computed on a tiny planted example with censoring, and the table's rows."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.statistics.registry import ESTIMATORS
from speceval.analysis.statistics.survival import kaplan_meier, survival_intervals


def test_kaplan_meier_matches_a_hand_computed_curve_with_censoring() -> None:
    # Five conversations: flips at turns 2 and 3, one ends unflipped at turn 2 (censored), two reach turn 4 unflipped.
    times = np.asarray([2, 2, 3, 4, 4])
    events = np.asarray([True, False, True, False, False])
    # Turn 2: 5 at risk, 1 flips -> 4/5. Turn 3: 3 at risk (the censored one left after turn 2), 1 flips -> 4/5 * 2/3.
    found = kaplan_meier(times, events, [1, 2, 3, 4])
    assert found.tolist() == pytest.approx([1.0, 0.8, 0.8 * 2 / 3, 0.8 * 2 / 3])


def test_censored_conversations_are_not_counted_as_holding_firm() -> None:
    # Counting the censored one as surviving to turn 3 would give 1 - 2/5 = 0.6 there; KM gives 0.5333.
    found = kaplan_meier(np.asarray([2, 2, 3, 4, 4]), np.asarray([True, False, True, False, False]), [3])
    assert found[0] == pytest.approx(8 / 15)
    assert found[0] != pytest.approx(0.6)


def test_interval_holds_the_estimate_and_is_not_a_point_when_nothing_flips() -> None:
    times, events = [3] * 6, [False] * 6
    clusters = ["a", "a", "b", "b", "c", "c"]  # three inputs, two runs each
    estimate, intervals = survival_intervals(times, events, clusters, [1, 2, 3], draws=200, seed=1)
    assert estimate.tolist() == [1.0, 1.0, 1.0]
    for band in intervals:
        assert band is not None
        assert band[1] == 1.0
        assert band[0] < 0.6  # three inputs, not six conversations: the Wilson floor at n = 3


def test_repeated_runs_do_not_narrow_the_interval() -> None:
    # The same three inputs, each run once or five times with identical outcomes: the unit is the input.
    base_t, base_e = [2, 3, 3], [True, False, False]
    one = survival_intervals(base_t, base_e, ["a", "b", "c"], [2], draws=300, seed=2)[1][0]
    five = survival_intervals(base_t * 5, base_e * 5, ["a", "b", "c"] * 5, [2], draws=300, seed=2)[1][0]
    assert one is not None and five is not None
    assert five[1] - five[0] == pytest.approx(one[1] - one[0], abs=0.05)


def test_both_measures_are_registered_with_coverage_scenarios() -> None:
    assert ESTIMATORS["flip_survival"].scenarios == ("flip-survival",)
    assert ESTIMATORS["flips_per_conversation"].tables == ("flip_survival.csv",)


def test_the_table_censors_a_short_conversation_and_counts_every_transition() -> None:
    from speceval.analysis.tables.flip_survival import FIRST_FLIP, PER_CONVERSATION, flip_survival
    from tests.study_matrix.test_flips_any_turn import _turns

    # The hand example above as conversations: flips at 2 and 3, one ends at turn 2 unflipped, two go to turn 4;
    # conversation 0 recovers and flips again at turn 4 (two transitions, its first flip at turn 2).
    rows = _turns(0, [True, False, True, False]) + _turns(1, [True, True]) + _turns(2, [True, True, False])
    rows += _turns(3, [True, True, True, True]) + _turns(4, [True, True, True, True])
    found = flip_survival(rows, draws=200, seed=1)
    curve = {r.turn: r for r in found if r.measure == FIRST_FLIP}
    assert [curve[t].estimate for t in (1, 2, 3, 4)] == pytest.approx([1.0, 0.8, 8 / 15, 8 / 15])
    assert (curve[2].at_risk, curve[2].events, curve[2].censored) == (5, 1, 1)
    assert (curve[3].at_risk, curve[3].events) == (3, 1)
    for r in curve.values():
        assert r.ci_low is not None and r.ci_high is not None and r.ci_low <= r.estimate <= r.ci_high
        assert "Kaplan–Meier" in r.method
    (mean,) = [r for r in found if r.measure == PER_CONVERSATION]
    assert (mean.events, mean.at_risk, mean.estimate) == (3, 5, pytest.approx(0.6))
    assert mean.ci_low is not None and mean.ci_high is not None and mean.ci_low <= 0.6 <= mean.ci_high

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

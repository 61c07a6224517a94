"""Spearman's rho across statements (spec health): ties ranked by their average, and an interval only where it covers
(benchmarks/coverage_matrix.py, family spearman: 0.943-0.963 from 8 statements; 0.74 at n 5, rho 0.9)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speceval.analysis.statistics.stats import SPEARMAN_MIN, average_ranks, spearman, spearman_interval
from speceval.analysis.tables.candidate_split import associations


def test_ties_take_their_average_rank_and_a_constant_side_has_no_rho():
    assert average_ranks(np.array([0.2, 0.0, 0.2, 1.0])).tolist() == [1.5, 0.0, 1.5, 3.0]
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])) is None
    assert spearman(np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 30.0, 20.0, 40.0])) == pytest.approx(0.8)


def test_the_interval_is_bonett_wrights_and_absent_below_eight_statements():
    assert SPEARMAN_MIN == 8 and spearman_interval(0.5, 7) is None and spearman_interval(0.5, 8) is not None
    low, high = spearman_interval(0.5, 30)  # type: ignore[misc]
    half = 1.959963984540054 * math.sqrt((1 + 0.25 / 2) / 27)
    centre = math.atanh(0.5)
    assert math.isclose(low, math.tanh(centre - half)) and math.isclose(high, math.tanh(centre + half))
    assert spearman_interval(1.0, 10) is not None and spearman_interval(1.0, 10)[1] == 1.0  # type: ignore[index]


def test_a_spec_with_too_few_statements_gets_no_association_row():
    shares = [(i / 10, i / 20) for i in range(SPEARMAN_MIN - 1)]
    assert associations([("s", a, b) for a, b in shares]) == []
    [row] = associations([("s", a, b) for a, b in [*shares, (0.9, 0.5)]])
    assert row.statements == SPEARMAN_MIN and row.spearman == pytest.approx(1.0)
    assert row.ci_low is not None and row.ci_high == 1.0

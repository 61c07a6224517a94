"""MOVER combines the sides' limits with the correlation of the inputs' totals as if it were known; of few inputs it
is noisy, and where it came out high the interval was too narrow (the issue 47 audit: two equal sides at 0.9 over
10 inputs x 5 runs covered 0.927-0.936). A positive correlation is taken half a Fisher-z standard error down."""

from __future__ import annotations

import math

import numpy as np
import pytest

import speceval.analysis.statistics.paired as paired
from speceval.analysis.statistics.paired import mover_correlation, mover_difference


def test_a_positive_correlation_is_taken_half_a_standard_error_down_and_a_negative_one_kept() -> None:
    assert mover_correlation(0.9, 10) == pytest.approx(math.tanh(math.atanh(0.9) - 0.5 / math.sqrt(7)))
    assert mover_correlation(0.9, 1000) == pytest.approx(0.9, abs=0.005)  # many inputs: nearly as measured
    assert mover_correlation(0.05, 10) == 0.0  # never below 0 (that would widen past no correlation)
    assert mover_correlation(-0.4, 10) == -0.4 and mover_correlation(0.9, 3) == 0.0


def test_the_interval_of_two_correlated_sides_is_wider_than_with_the_correlation_taken_as_known() -> None:
    rng = np.random.default_rng(3)
    easy = rng.random(10) < 0.5  # an input easy for both sides: their totals correlate
    ya = np.repeat(np.where(easy, 1.0, 0.0), 5)
    ya[::7] = 1 - ya[::7]
    yb = np.repeat(np.where(easy, 1.0, 0.0), 5)
    yb[3::9] = 1 - yb[3::9]
    codes = np.repeat(np.arange(10), 5)
    found = mover_difference(ya, codes, yb, codes, 10)
    assert found.correlation is not None and 0 < found.correlation < 0.95
    try:
        shrink, paired.MOVER_R_SHRINK = paired.MOVER_R_SHRINK, 0.0
        known = mover_difference(ya, codes, yb, codes, 10)
    finally:
        paired.MOVER_R_SHRINK = shrink
    assert known.correlation is not None and known.correlation > found.correlation
    assert found.ci_high - found.ci_low > known.ci_high - known.ci_low  # type: ignore[operator]

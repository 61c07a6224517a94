"""A Likert judge's mean rating and its interval (`rating.rating_interval`, the registered `mean_rating`, issue 47):
Gaffke's bound at the effective size, checked against what can be computed apart from it (Clopper-Pearson on ratings
of 1 and 5 only, the exact bound of an all-5s sample) and at the samples where the hull cut to 1-5 failed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speceval.analysis.statistics.rating import rating_interval, scale_mean_limits
from speceval.analysis.statistics.stats import beta_quantile, regularized_beta


def inputs(*ratings: list[int]) -> tuple[list[float], list[int]]:
    """Ratings by input: (values, clusters)."""
    return [float(r) for rs in ratings for r in rs], [i for i, rs in enumerate(ratings) for _ in rs]


def test_beta_quantiles_match_closed_forms():
    assert regularized_beta(2, 3, 0.4) == pytest.approx(0.5248, abs=1e-12)  # 1 - Σ_{k<2} C(4,k) 0.4^k 0.6^(4-k)
    for n in (1, 5, 10, 200):
        assert beta_quantile(n, 1, 0.025) == pytest.approx(0.025 ** (1 / n), rel=1e-12)
        assert beta_quantile(1, n, 0.975) == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-10)
    assert beta_quantile(3, 3, 0.5) == pytest.approx(0.5, abs=1e-12)
    with pytest.raises(ValueError, match="a, b > 0"):
        beta_quantile(0, 1, 0.5)


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("count", [1, 5, 10, 40])
def test_all_fives_give_the_exact_bound_and_all_ones_its_mirror(count: int, runs: int):
    # A variable in [0, 1] is at 1 with probability at most its mean (Markov), so G inputs all at 5 happen with
    # probability at most ((mean - 1) / 4)^G: the exact lower limit 1 + 4·0.025^(1/G). The hull cut to 1-5 gave none.
    values, clusters = inputs(*([5] * runs for _ in range(count)))
    assert rating_interval(values, clusters) == pytest.approx((1 + 4 * 0.025 ** (1 / count), 5.0), rel=1e-12)
    ones = [6.0 - v for v in values]
    assert rating_interval(ones, clusters) == pytest.approx((1.0, 5 - 4 * 0.025 ** (1 / count)), rel=1e-12)


@pytest.mark.parametrize("rating", [13 / 3, 4.1, 3.7])
def test_a_panels_alike_mean_ratings_count_the_inputs(rating: float):
    # A panel's rating is the judges' mean: 4.1 in every row left a rounding spread of 3e-17, which counted the 30
    # ratings as 30 independent ones instead of the 10 inputs.
    values, clusters = inputs(*([rating] * 3 for _ in range(10)))
    expected = scale_mean_limits((rating - 1) / 4, 0.0, 10.0)
    assert rating_interval(values, clusters) == pytest.approx(tuple(1 + 4 * x for x in expected), rel=1e-12)


def test_one_rating_has_an_interval_inside_the_scale():
    assert rating_interval([5.0], ["q"]) == pytest.approx((1.1, 5.0))  # 1 + 4·0.025
    low, high = rating_interval([3.0], ["q"])  # type: ignore[misc]
    assert 1.0 < low < 1.5 and high == pytest.approx(6 - low)  # the scale's mirror keeps a middle rating centred
    assert rating_interval([], []) is None


@pytest.mark.parametrize(("fives", "count"), [(7, 10), (18, 20), (1, 5), (29, 30)])
def test_ratings_of_one_and_five_only_get_clopper_pearson(fives: int, count: int):
    # A polarized judge is a rate in disguise; Gaffke's bound on 0/1 values is Clopper-Pearson's, whose limits are the
    # Beta quantiles below (7 of 10: 0.3475..0.9333 in every table).
    values, clusters = inputs(*([5] * (i < fives) + [1] * (i >= fives) for i in range(count)))
    low = beta_quantile(fives, count - fives + 1, 0.025)
    high = beta_quantile(fives + 1, count - fives, 0.975)
    assert rating_interval(values, clusters) == pytest.approx((1 + 4 * low, 1 + 4 * high), rel=1e-9)
    if (fives, count) == (7, 10):
        assert (low, high) == pytest.approx((0.3475, 0.9333), abs=1e-4)


def test_a_sample_that_missed_the_low_ratings_reaches_below_the_range_it_saw():
    # 10 inputs near the top that happened to rate only 4 and 5: the hull saw the range 4..5 and could not go below
    # 4.35 (mean ± t), while a judge that rates 1 one time in ten would produce this sample ~1 in 3. The observation at
    # the scale's end takes the lower limit to about 3.6.
    values, clusters = inputs(*([r] for r in [5] * 7 + [4] * 3))
    low, high = rating_interval(values, clusters)  # type: ignore[misc]
    assert low < 3.7 and 4.9 < high < 5.0


def test_identical_runs_count_the_inputs_once():
    # Runs that repeat each input's rating add nothing about other inputs: the interval of one run each.
    once = [[5], [4], [5], [3], [5], [5]]
    values, clusters = inputs(*once)
    repeated, by_input = inputs(*(r * 4 for r in once))
    assert rating_interval(repeated, by_input) == pytest.approx(rating_interval(values, clusters), rel=1e-12)


def test_inputs_whose_runs_disagree_alike_count_every_rating():
    # Every input rated 4 once and 5 once: the inputs' means agree exactly, so the ratings are worth n, not G.
    values, clusters = inputs(*([4, 5] for _ in range(12)))
    p = 0.875  # (4.5 - 1) / 4
    spread = 0.125**2
    assert rating_interval(values, clusters) == pytest.approx(
        tuple(1 + 4 * x for x in scale_mean_limits(p, spread, 24.0)), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_interval_holds_its_estimate_inside_the_scale(seed: int):
    rng = np.random.default_rng(seed)
    count, runs = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    ratings = np.clip(np.round(rng.normal(rng.uniform(1, 5), 1.0, (count, runs))), 1, 5)
    values, clusters = ratings.reshape(-1).tolist(), [i for i in range(count) for _ in range(runs)]
    low, high = rating_interval(values, clusters)  # type: ignore[misc]
    assert 1.0 <= low <= float(np.mean(values)) <= high <= 5.0
    assert not math.isnan(low + high)


def test_a_rating_off_the_scale_is_an_error():
    with pytest.raises(ValueError, match="outside the scale 1..5"):
        rating_interval([0.0, 4.0], ["a", "b"])

"""The pooled rate's clustered interval at its edges (issue 47 item 1): the exact bound at a rate of 0 or 1, the
continuity correction on z where the rarer kind is rare, t(G-H) elsewhere; each checked by its coverage on the
design that needs it (benchmarks/coverage_matrix.py, family rate-pooled, measures the same at 2,000 draws) and the
tightening by the width it took off (10 inputs x 3 runs at Beta(1.9, 0.1): 0.352 wide before, 0.307 now)."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.statistics.clustered import (
    EDGE_LEVEL,
    RARE_RUNS,
    bounded_mean_interval_codes,
    clustered_limits,
    clustered_mean_codes,
    rate_interval_codes,
    t975,
)
from speceval.analysis.statistics.registry import WILSON
from speceval.analysis.statistics.stats import Z95, wilson_interval


def _draws(inputs: int, runs: int, a: float, b: float, draws: int, identical: float | None = None):
    """Verdicts of `draws` simulated evals (seed 5): inputs' rates Beta(a, b), or every input's runs one verdict at
    rate `identical`."""
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(inputs), runs)
    for _ in range(draws):
        if identical is not None:
            yield np.repeat(rng.random(inputs) < identical, runs).astype(float), clusters
        else:
            p = rng.beta(a, b, inputs)
            yield (rng.random((inputs, runs)) < p[:, None]).reshape(-1).astype(float), clusters


def _coverage_and_width(truth: float, *args, **kwargs) -> tuple[float, float]:
    hits, widths = 0, []
    for y, clusters in _draws(*args, **kwargs):
        found = rate_interval_codes(y, clusters)
        assert found is not None
        hits += found[0] <= truth <= found[1]
        widths.append(found[1] - found[0])
    return hits / len(widths), float(np.mean(widths))


def test_a_rate_of_one_or_zero_takes_the_exact_bound_on_its_clusters():
    clusters = np.repeat(np.arange(10), 3)
    low, high, _ = rate_interval_codes(np.ones(30), clusters)  # type: ignore[misc]
    assert (low, high) == pytest.approx((0.025 ** (1 / 10), 1.0)) and low == pytest.approx(0.6915, abs=1e-4)
    low, high, _ = rate_interval_codes(np.zeros(30), clusters)  # type: ignore[misc]
    assert (low, high) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)))
    assert EDGE_LEVEL == 0.025  # the two-sided level's half: at 0.05 identical runs covered 0.933 near the bound


def test_rare_failures_take_the_continuity_correction_on_korn_graubards_z_and_common_ones_plain_limits_on_t():
    z = Z95 * t975(19) / t975(59)  # the t-ratio on the effective size, 60 (a repeat of every run keeps it)
    assert clustered_limits(59 / 60, 60.0, 19, 20) == wilson_interval(59, 60, z=z, continuity=True)
    assert clustered_limits(0.5, 40.0, 4, 5) == wilson_interval(20, 40, z=t975(4), continuity=False)


def test_under_forty_effective_verdicts_only_the_near_limit_keeps_the_correction():
    z = Z95 * t975(9) / t975(29)
    corrected, plain = wilson_interval(29, 30, z=z, continuity=True), wilson_interval(29, 30, z=z, continuity=False)
    assert corrected is not None and plain is not None
    # A rate near 1: the lower limit (the far one) plain, the upper (toward 1) corrected; mirrored near 0.
    assert clustered_limits(29 / 30, 30.0, 9, 10) == (plain[0], corrected[1])
    assert clustered_limits(1 / 30, 30.0, 9, 10) == pytest.approx((1 - corrected[1], 1 - plain[0]))
    assert plain[0] > corrected[0]  # what it takes off
    # Values that are not verdicts (shares, rescaled means) keep both corrections, and so does a rate of 1/2.
    assert clustered_limits(29 / 30, 30.0, 9, 10, verdicts=False) == wilson_interval(29, 30, z=t975(9), continuity=True)
    assert clustered_limits(0.5, 12.0, 4, 5) == wilson_interval(6, 12, z=Z95 * t975(4) / t975(11), continuity=True)


def test_the_tightening_takes_a_tenth_off_ten_inputs_at_a_rate_near_one():
    coverage, width = _coverage_and_width(0.95, 10, 3, 1.9, 0.1, 600)
    # These 600 draws: 0.286 wide; 0.305 with the far limit corrected too, 0.319 with both corrected on the bare t(9)
    # (and the exact bound), 0.35 before either (Wilson at G on t(9) at 0 failures).
    assert coverage >= 0.95 and width < 0.295


def test_the_parts_that_keep_coverage():
    # Identical runs (temperature 0): 0 failures has probability 0.85^10 = 0.20, and a bound at the count of verdicts
    # (0.884) instead of the clusters' (0.692) misses then.
    assert _coverage_and_width(0.85, 10, 3, 0, 0, 2000, identical=0.85)[0] >= 0.95
    # Rare failures, most inputs never failing: plain limits covered 0.89.
    assert _coverage_and_width(0.95, 30, 5, 1.9, 0.1, 600)[0] >= 0.93
    # Few clusters at a moderate rate: z instead of t(4) covered 0.90.
    assert _coverage_and_width(0.5, 5, 20, 5.0, 5.0, 600)[0] >= 0.93
    # Few clusters, rare failures: the continuity correction on the bare z covered 0.91.
    assert _coverage_and_width(0.9, 4, 40, 9.0, 1.0, 600)[0] >= 0.93


def test_a_rescaled_mean_keeps_the_bare_t_on_its_rare_limits():
    # A mean whose values happen to be only the ends of their range is not a rate of verdicts: its rare limits keep
    # t(G-H) (an unranged count's mean at 5 inputs x 3 runs covered 0.899 on the Korn-Graubard z, 0.943 on t).
    y, clusters = np.ones(30), np.repeat(np.arange(10), 3)
    y[0] = 0.0
    rate = rate_interval_codes(y, clusters)
    mean = bounded_mean_interval_codes(y, clusters, (0.0, 1.0))
    estimate = clustered_mean_codes(y, clusters)
    assert rate is not None and mean is not None and estimate is not None and estimate.se is not None
    p = estimate.mean
    n = p * (1 - p) / estimate.se**2  # 29.0: one failure alone in its input
    assert mean == pytest.approx(wilson_interval(p * n, n, z=t975(9), continuity=True))
    z = Z95 * t975(9) / t975(int(n) - 1)
    corrected, plain = wilson_interval(p * n, n, z=z, continuity=True), wilson_interval(p * n, n, z=z, continuity=False)
    assert corrected is not None and plain is not None
    assert rate[:2] == pytest.approx((plain[0], corrected[1]))  # under 40 effective verdicts: the near side's only


def test_one_share_an_input_takes_the_clustered_interval_at_its_own_variance():
    # A panel of 3 judges' shares, one run of 100 inputs: counting each share as one verdict gave Wilson at n = 100;
    # the shares' own variance says they are worth more (here 3 failing judges' verdicts in 3 inputs).
    shares = np.ones(100)
    shares[:3] = 2 / 3
    found = rate_interval_codes(shares, np.arange(100))
    wilson = wilson_interval(float(shares.sum()), 100)
    assert found is not None and wilson is not None
    assert found[0] <= 0.99 <= found[1] and found[1] - found[0] < 0.6 * (wilson[1] - wilson[0])
    assert found[2] != WILSON
    # One verdict an input is still one run's Wilson.
    verdicts = np.ones(100)
    verdicts[:3] = 0.0
    assert rate_interval_codes(verdicts, np.arange(100)) == (*wilson_interval(97, 100), WILSON)  # type: ignore[misc]


def test_one_share_an_input_covers_where_the_panel_shares_are_skewed():
    # 100 inputs x 1 run, Beta(9.9, 0.1), 3 judges: 0.980 at 2,000 draws (0.033 wide; 0.061 as verdicts).
    rng, hits, widths = np.random.default_rng(5), 0, []
    for _ in range(400):
        p = rng.beta(9.9, 0.1, 100)
        found = rate_interval_codes((rng.random((100, 3)) < p[:, None]).mean(axis=1), np.arange(100))
        assert found is not None
        hits += found[0] <= 0.99 <= found[1]
        widths.append(found[1] - found[0])
    assert hits / 400 >= 0.95 and float(np.mean(widths)) < 0.04


def test_rare_limits_count_no_more_than_four_verdicts_an_input_on_the_far_side():
    # 60 effective verdicts on 10 inputs, one failure: the far (lower) limit at 40 effective verdicts on z, the near
    # one as before (Korn-Graubard's z on the 60).
    near = wilson_interval(59, 60, z=Z95 * t975(9) / t975(59), continuity=True)
    far = wilson_interval(59 / 60 * 40, 40, continuity=True)
    assert near is not None and far is not None and RARE_RUNS == 4
    assert clustered_limits(59 / 60, 60.0, 9, 10) == (far[0], near[1]) and far[0] < near[0]
    assert clustered_limits(1 / 60, 60.0, 9, 10) == pytest.approx((1 - near[1], 1 - far[0]))  # mirrored near 0
    # Where the count per input is within the cap, nothing changes.
    assert clustered_limits(59 / 60, 60.0, 19, 20) == wilson_interval(59, 60, z=Z95 * t975(19) / t975(59))


def test_a_sample_that_missed_the_rarely_failing_inputs_at_fifteen_runs_still_covers():
    # Seed 87: 30 inputs x 15 runs at Beta(1.9, 0.1) rates (population rate 1.9 / 2 = 0.95); the sample drew 3 inputs
    # that ever failed (about 6 expected), 4 failures in 450 verdicts. The cluster-robust SE sees failures spread over
    # inputs (an effective size of 331 of 450), and the interval was [0.970, 0.998]: above the truth.
    rng = np.random.default_rng(87)
    p = rng.beta(1.9, 0.1, 30)
    y = (rng.random((30, 15)) < p[:, None]).reshape(-1).astype(float)
    assert int((y.reshape(30, 15).min(axis=1) < 1).sum()) == 3
    found = rate_interval_codes(y, np.repeat(np.arange(30), 15))
    assert found is not None and found[0] <= 1.9 / 2.0 <= found[1] and found[1] - found[0] < 0.06


@pytest.mark.parametrize("judges", [1, 3])
def test_many_verdicts_an_input_at_skewed_rates_cover(judges: int):
    # 30 inputs x 15 verdicts at Beta(1.9, 0.1): 15 runs of one judge, or 5 runs of a panel of 3 judges' shares (the
    # same random numbers). 400 draws: 0.9275 both before the far limit's cap, 0.985 with it (2,000 draws: 0.924 and
    # 0.976, 0.111 and 0.112 wide).
    rng, hits, widths = np.random.default_rng(5), 0, []
    clusters = np.repeat(np.arange(30), 15 // judges)
    for _ in range(400):
        p = rng.beta(1.9, 0.1, 30)
        verdicts = rng.random((30, 15 // judges, judges)) < p[:, None, None]
        found = rate_interval_codes(verdicts.mean(axis=2).reshape(-1), clusters)
        assert found is not None
        hits += found[0] <= 0.95 <= found[1]
        widths.append(found[1] - found[0])
    assert hits / 400 >= 0.94 and float(np.mean(widths)) < 0.12


@pytest.mark.parametrize("runs", [10, 15, 30])
def test_one_more_failure_never_lifts_the_far_limit(runs: int):
    # 30 inputs, failures one to an input on k of them (the design effect looks like 1): the lower limit never rises
    # with k. With the rarer kind judged rare at the effective size alone it did where k reached 10, leaving the
    # capped branch (at 15 runs 0.930 at 9 failures, 0.959 at 10; at 10 runs 0.912 then 0.934).
    clusters = np.repeat(np.arange(30), runs)
    lows = []
    for k in range(1, 21):
        y = np.ones(30 * runs)
        y[np.arange(k) * runs] = 0.0
        found = rate_interval_codes(y, clusters)
        assert found is not None
        lows.append(found[0])
    assert all(later <= earlier for earlier, later in zip(lows, lows[1:], strict=False))


def test_values_that_are_not_verdicts_judge_their_rarer_kind_at_their_effective_size():
    # 10 of 450 at 450 effective values on 30 inputs: verdicts' rarer kind is rare at the far limit's cap (120) and
    # takes it; shares, scores with ties and rescaled means are not rare at 450 and keep plain limits on t (what they
    # computed before: a win rate with ties may count more than 4 an input, and a rescaled mean must not move).
    p, t = 440 / 450, t975(29)
    plain = wilson_interval(440, 450, z=t, continuity=False)
    assert clustered_limits(p, 450.0, 29, 30, verdicts=False) == plain
    capped = wilson_interval(p * 120, 120, continuity=True)
    assert capped is not None and clustered_limits(p, 450.0, 29, 30)[0] == capped[0]

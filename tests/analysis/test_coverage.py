"""The report's 95% intervals cover planted truths in 93–97% of synthetic experiments (inputs correlated across
candidates, verdicts correlated across runs), and the naive interval that treats every verdict as independent does
not: that is what the clustering is for. Seeded; benchmarks/interval_coverage.py runs the same with more draws."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.simulation import (
    CategoryDesign,
    Design,
    by_statement,
    category_coverage,
    coverage,
    draw_categories,
    expected_rate,
    naive,
    paired,
    pooled,
)

DRAWS = 500
_rng = np.random.default_rng(7)
LOGITS = tuple(tuple(float(x) for x in _rng.uniform(-0.5, 2.0, 10)) for _ in range(2))
REPEATED = Design(logits=LOGITS, inputs_per_statement=8, runs=3, input_sd=2.0)


def test_the_planted_truth_is_the_mean_of_many_draws():
    assert expected_rate(0.0, 1.0) == pytest.approx(0.5)
    assert expected_rate(2.0, 0.0) == pytest.approx(1 / (1 + np.exp(-2.0)))
    rng = np.random.default_rng(3)
    from speceval.analysis.simulation import draw

    means = [draw(REPEATED, rng).verdicts[0].mean() for _ in range(300)]
    assert float(np.mean(means)) == pytest.approx(REPEATED.truth(0), abs=0.005)


@pytest.mark.parametrize(
    ("name", "design", "interval", "truth"),
    [
        ("pooled over 3 runs, clustered by input", REPEATED, pooled(0), REPEATED.truth(0)),
        ("paired difference of two candidates", REPEATED, paired(0, 1), REPEATED.truth(0) - REPEATED.truth(1)),
        (
            "one run, Wilson",
            Design(logits=LOGITS, inputs_per_statement=8, runs=1),
            pooled(1),
            Design(logits=LOGITS, inputs_per_statement=8, runs=1).truth(1),
        ),
        (
            "random statements, clustered by statement",
            Design(logits=((0.8,) * 30,), inputs_per_statement=4, runs=2, statement_sd=0.8),
            by_statement(0),
            Design(logits=((0.8,) * 30,), inputs_per_statement=4, runs=2, statement_sd=0.8).truth(0),
        ),
    ],
)
def test_report_intervals_cover_the_truth_95_percent_of_the_time(name, design, interval, truth):
    assert 0.93 <= coverage(design, interval, truth, DRAWS, seed=11) <= 0.97, name


def test_treating_repeated_runs_as_independent_undercovers():
    assert coverage(REPEATED, naive(0), REPEATED.truth(0), DRAWS, seed=11) < 0.9


def _category_design() -> CategoryDesign:
    """Four categories over 6 fixed statements × 8 inputs × 3 runs, two variations (the second shifted towards
    category 1, as a pressure script would shift answers), category 3 rare (≈ 1.4% of answers)."""
    rng = np.random.default_rng(5)
    base = [(*(float(x) for x in rng.uniform(-1, 1, 3)), -3.5) for _ in range(6)]
    shifted = [(b[0], b[1] + 0.8, b[2], b[3]) for b in base]
    return CategoryDesign(logits=(tuple(base), tuple(shifted)), inputs_per_statement=8, runs=3)


@pytest.mark.slow
def test_category_shares_and_their_differences_cover_the_truth():
    design = _category_design()
    assert design.truth(0, 3) < 0.02  # an extreme rate is among those checked
    found = category_coverage(design, draws=300, seed=11)
    assert len(found) == 12  # 2 variations × 4 shares, 4 differences
    # Each share is a binomial estimate over 300 draws (SE ≈ 1.3 points): each within 3 SE of 95%, and their mean
    # within 1 point (benchmarks/interval_coverage.py --categories runs 4,000 draws).
    # The rare category's share is read in every draw, at count 0 (the exact bound) where no verdict chose it: before
    # its rows were listed from the judge's categories, a draw without it had no row (a miss); that bound covers more.
    rare = {name: share for name, share in found.items() if name.endswith("c3")}
    assert all(0.91 <= share <= 0.99 for name, share in found.items() if name not in rare), found
    assert all(0.93 <= share <= 1.0 for share in rare.values()), found
    assert 0.94 <= float(np.mean([share for name, share in found.items() if name not in rare])) <= 0.96, found


def test_category_truth_is_the_share_of_many_draws():
    design = _category_design()
    assert sum(design.truth(0, k) for k in range(4)) == pytest.approx(1.0, abs=1e-9)
    draws = [draw_categories(design, np.random.default_rng(seed)).categories for seed in range(60)]
    shares = np.mean([(d[1] == 1).mean() for d in draws])
    assert shares == pytest.approx(design.truth(1, 1), abs=0.01)

"""The report's 95% intervals cover planted truths in 93–97% of synthetic experiments (inputs correlated across
candidates, verdicts correlated across runs), and the naive interval that treats every verdict as independent does
not: that is what the clustering is for. Seeded; benchmarks/interval_coverage.py runs the same with more draws."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.simulation import Design, by_statement, coverage, expected_rate, naive, paired, pooled

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


@pytest.mark.parametrize(("name", "design", "interval", "truth"), [
    ("pooled over 3 runs, clustered by input", REPEATED, pooled(0), REPEATED.truth(0)),
    ("paired difference of two candidates", REPEATED, paired(0, 1), REPEATED.truth(0) - REPEATED.truth(1)),
    ("one run, Wilson", Design(logits=LOGITS, inputs_per_statement=8, runs=1), pooled(1),
     Design(logits=LOGITS, inputs_per_statement=8, runs=1).truth(1)),
    ("random statements, clustered by statement",
     Design(logits=((0.8,) * 30,), inputs_per_statement=4, runs=2, statement_sd=0.8), by_statement(0),
     Design(logits=((0.8,) * 30,), inputs_per_statement=4, runs=2, statement_sd=0.8).truth(0)),
])
def test_report_intervals_cover_the_truth_95_percent_of_the_time(name, design, interval, truth):
    assert 0.93 <= coverage(design, interval, truth, DRAWS, seed=11) <= 0.97, name


def test_treating_repeated_runs_as_independent_undercovers():
    assert coverage(REPEATED, naive(0), REPEATED.truth(0), DRAWS, seed=11) < 0.9

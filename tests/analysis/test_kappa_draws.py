"""A kappa's bootstrap interval is drawn a block of resamples at a time (`kappa_interval`); it must be the interval
the one-resample-at-a-time loop gives: the same draws of the same seed, the same floats (Cohen and Fleiss)."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.statistics.clustered import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED
from speceval.analysis.statistics.codes import first_seen
from speceval.analysis.tables import rates
from speceval.analysis.tables.rates import cohen_of_draws, fleiss_of_draws, kappa_interval


def one_draw_at_a_time(ids: np.ndarray, features: np.ndarray, kappa) -> tuple[float, float]:
    """The interval as a plain loop computes it: each resample drawn alone, its kappa computed from its sums."""
    clusters = int(ids.max()) + 1
    per_cluster = np.zeros((clusters, features.shape[1]))
    np.add.at(per_cluster, ids, features)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    values = []
    for _ in range(BOOTSTRAP_DRAWS):
        weights = np.bincount(rng.integers(0, clusters, clusters), minlength=clusters)
        value = kappa(weights @ per_cluster)
        if value is not None:
            values.append(value)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def cohen(totals: np.ndarray) -> float | None:
    both, only_a, only_b, neither = totals
    n = totals.sum()
    expected = ((both + only_a) * (both + only_b) + (neither + only_b) * (neither + only_a)) / n**2
    return None if n == 0 or expected >= 1.0 else float(((both + neither) / n - expected) / (1 - expected))


def fleiss(totals: np.ndarray, raters: int) -> float | None:
    items, agreeing, compliant = totals
    p = compliant / (items * raters)
    expected = p**2 + (1 - p) ** 2
    return None if items == 0 or expected >= 1.0 else float((agreeing / items - expected) / (1 - expected))


@pytest.mark.parametrize("block_cells", [rates.DRAW_BLOCK_CELLS, 97])  # 97: a block of one or a few draws too
@pytest.mark.parametrize(("answers", "inputs"), [(30, 12), (400, 400)])
def test_cohens_interval_is_the_one_draw_at_a_time_loops(monkeypatch, block_cells, answers, inputs):
    monkeypatch.setattr(rates, "DRAW_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(answers)
    ids = first_seen(rng.integers(0, inputs, answers))
    first = rng.random(answers) < 0.6
    second = np.where(rng.random(answers) < 0.2, ~first, first)
    cells = np.stack([first & second, first & ~second, ~first & second, ~first & ~second], axis=1).astype(float)
    found = kappa_interval(ids, cells, cohen_of_draws)
    assert (found["ci_low"], found["ci_high"]) == one_draw_at_a_time(ids, cells, cohen)


@pytest.mark.parametrize("block_cells", [rates.DRAW_BLOCK_CELLS, 97])
@pytest.mark.parametrize(("answers", "inputs", "raters"), [(30, 12, 3), (392, 382, 5)])
def test_fleiss_interval_is_the_one_draw_at_a_time_loops(monkeypatch, block_cells, answers, inputs, raters):
    """Fleiss' features are fractional (the share of agreeing pairs): summed in another order they came out a last
    digit off, so equality here is exact, not approximate."""
    monkeypatch.setattr(rates, "DRAW_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(answers)
    ids = first_seen(rng.integers(0, inputs, answers))
    yes = rng.binomial(raters, 0.7, answers).astype(np.int64)
    agreeing = (yes * (yes - 1) + (raters - yes) * (raters - yes - 1)) / (raters * (raters - 1))
    features = np.stack([np.ones(answers), agreeing, yes], axis=1)
    found = kappa_interval(ids, features, lambda t: fleiss_of_draws(t, raters))
    assert (found["ci_low"], found["ci_high"]) == one_draw_at_a_time(ids, features, lambda t: fleiss(t, raters))


def test_an_undefined_kappa_is_nan_in_a_draw_and_none_alone():
    totals = np.array([[10.0, 0, 0, 0], [0, 0, 0, 0], [40.0, 5, 5, 50]])
    found = cohen_of_draws(totals)
    assert np.isnan(found[0]) and np.isnan(found[1]) and found[2] == pytest.approx(0.7979797979797979)
    assert rates.cohen_from_counts(totals[1]) is None and rates.cohen_from_counts(totals[2]) == found[2]
    assert np.isnan(fleiss_of_draws(np.array([[0.0, 0, 0], [5.0, 5, 15]]), 3)).all()  # no items; all said yes

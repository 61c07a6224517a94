"""The spread's interval visits each pair of candidates once and takes both orders from it (`spread_interval`); it
must be the interval the order-by-order loop gave, to the last bit: over inputs shared in part, with several runs an
input, and with pairs that share no input."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from speceval.analysis.statistics.paired import paired_difference_codes
from speceval.analysis.statistics.spread import Cell, _pair_limits, spread_interval


def order_by_order(cells: list[Cell], low: int, high: int) -> tuple[float, float, float] | None:
    """The interval as the product computed it before: every ordered pair, each with its own shared inputs and its
    own limit."""
    chosen = paired_difference_codes(*cells[high], *cells[low])
    if chosen is None or chosen.ci_high is None:
        return None
    z = NormalDist().inv_cdf(1 - 0.025 / max(1, math.comb(len(cells), 2)))
    ordered = [(a, b) for j, a in enumerate(cells) for k, b in enumerate(cells) if j != k]
    found = [paired_difference_codes(*a, *b) for a, b in ordered]
    upper = max([chosen.ci_high] + [f.ci_high for f in found if f is not None and f.ci_high is not None])
    lower = max([0.0] + [lower_limit(a, b, z) for a, b in ordered])
    return chosen.difference, min(lower, chosen.difference), max(upper, chosen.difference)


def lower_limit(a: Cell, b: Cell, z: float) -> float:
    """rate(a) - rate(b)'s lower limit computed for that order alone (the pair's first limit, as before)."""
    return _pair_limits(a, b, z)[1][0]


def random_cells(rng: np.random.Generator, candidates: int, runs: int) -> list[Cell]:
    """Candidates at spread-out rates over overlapping ranges of 40 inputs (one of them, now and then, apart)."""
    cells = []
    for c in range(candidates):
        first = int(rng.integers(0, 15)) + (60 if c == candidates - 1 and rng.random() < 0.2 else 0)
        codes = np.repeat(np.arange(first, first + 40), runs)
        rate = rng.uniform(0.3, 0.95)
        cells.append((codes, (rng.random(len(codes)) < rate).astype(float)))
    return cells


@pytest.mark.parametrize("runs", [1, 3])
def test_each_pair_once_gives_the_order_by_order_interval(runs: int) -> None:
    rng = np.random.default_rng(runs)
    positive_lower = 0
    for _ in range(40):
        cells = random_cells(rng, int(rng.integers(2, 7)), runs)
        means = [float(y.mean()) for _, y in cells]
        low, high = int(np.argmin(means)), int(np.argmax(means))
        expected = order_by_order(cells, low, high)
        assert spread_interval(cells, low, high) == expected
        positive_lower += expected is not None and expected[1] > 0
    assert positive_lower >= 10  # the lower limits decided the interval often, not only the floor at 0

"""The spread of a statement's candidates: the highest minus the lowest candidate's rate, with an interval that knows
the two were picked on the same data.

The highest and the lowest are chosen after looking, so their plain paired interval is too far from 0 (a winner's
curse: coverage 0.91 of the true spread, max - min of the candidates' true rates, with five candidates alike). If
every pair's difference d_jk lies in its interval at once, the true spread R = max d_jk lies in
[max_jk L_jk, max_jk U_jk]; the lower end needs every pair at once (Bonferroni over the m = K(K-1)/2 pairs: each
pair's MOVER limits at level 1 - 0.05/m), the upper end only the pair that is truly furthest apart (the report's
95% paired interval, `paired_difference_codes`). The lower end is never below 0 (a spread is not negative).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from speceval.analysis.statistics.clustered import clustered_mean_codes, t975
from speceval.analysis.statistics.paired import (
    centred_correlation,
    keeps_continuity_correction,
    mover_correlation,
    mover_difference,
    paired_difference_codes,
)
from speceval.analysis.statistics.stats import Z95, wilson_interval

Cell = tuple[np.ndarray, np.ndarray]
"""One candidate's (cluster codes, verdicts 0/1) on the statement."""


def spread_interval(cells: list[Cell], low: int, high: int) -> tuple[float, float, float] | None:
    """(highest - lowest on their shared inputs, its selection-aware 95% low and high) for the cells `high` and
    `low` (indices into `cells`, chosen by their rates); None when the two share no input."""
    chosen = paired_difference_codes(*cells[high], *cells[low])
    if chosen is None or chosen.ci_high is None:
        return None
    pairs = max(1, len(cells) * (len(cells) - 1) // 2)
    z = NormalDist().inv_cdf(1 - 0.025 / pairs)
    lower, upper = 0.0, chosen.ci_high
    # Each pair once, both orders from its shared inputs (the inputs, the sides' limits and their correlation are
    # the same either way round; the order-by-order loop found them three times a pair and each side's limits
    # twice: 5.3 of a report's 11 s of spreads).
    for j in range(len(cells)):
        for k in range(j + 1, len(cells)):
            highs, lows = _pair_limits(cells[j], cells[k], z)
            upper = max([upper, *(h for h in highs if h is not None)])
            lower = max(lower, *lows)
    return chosen.difference, min(lower, chosen.difference), max(upper, chosen.difference)


def _pair_limits(a: Cell, b: Cell, z: float) -> tuple[tuple[float | None, float | None], tuple[float, float]]:
    """On the shared inputs of `a` and `b`: the 95% paired upper limits of rate(a) - rate(b) and of rate(b) -
    rate(a) (`paired_difference_codes`' in either order; None where it has none), and their MOVER lower limits with
    each side's Wilson limits at `z` (on t over several runs: z scaled as the t quantile's expansion in 1/df); no
    upper limits and lower limits of -1 when they share no input."""
    shared = np.intersect1d(a[0], b[0])
    if not len(shared):
        return (None, None), (-1.0, -1.0)
    in_a, in_b = np.isin(a[0], shared), np.isin(b[0], shared)
    la, lb = np.searchsorted(shared, a[0][in_a]), np.searchsorted(shared, b[0][in_b])
    ya, yb = a[1][in_a].astype(float), b[1][in_b].astype(float)
    highs = (
        mover_difference(ya, la, yb, lb, len(shared)).ci_high,
        mover_difference(yb, lb, ya, la, len(shared)).ci_high,
    )
    side_a, side_b = _limits(ya, la, z), _limits(yb, lb, z)
    pa, pb = float(ya.mean()), float(yb.mean())
    za = np.bincount(la, weights=(ya - pa) / len(ya), minlength=len(shared))
    zb = np.bincount(lb, weights=(yb - pb) / len(yb), minlength=len(shared))
    # symmetric to the last bit (products and sums of the same numbers), and as the paired interval takes it
    r = mover_correlation(centred_correlation(za, zb, None), len(shared))

    def mover(p: float, side: tuple[float, float], q: float, other: tuple[float, float]) -> float:
        below, above = p - side[0], other[1] - q
        return p - q - math.sqrt(max(0.0, below**2 - 2 * r * below * above + above**2))

    return highs, (mover(pa, side_a, pb, side_b), mover(pb, side_b, pa, side_a))


def _limits(y: np.ndarray, clusters: np.ndarray, z: float) -> tuple[float, float]:
    """A side's Wilson limits at `z`, as the paired interval's sides (`paired._side_estimate`) at 95%: at n with one
    answer an input, else at the cluster-robust effective size on t(G-1) (a constant side at its count)."""
    p = float(y.mean())
    if int(clusters.max()) + 1 == len(y):
        effective, quantile = float(len(y)), z
    else:
        estimate = clustered_mean_codes(y, clusters)
        if estimate is None or estimate.se is None:
            return 0.0, 1.0
        variance = estimate.se**2
        effective = min(p * (1 - p) / variance if variance > 0 else float(len(y)), float(len(y)))
        quantile = z * t975(max(1, estimate.df)) / Z95
    found = wilson_interval(p * effective, effective, z=quantile, continuity=keeps_continuity_correction(p, effective))
    return (0.0, 1.0) if found is None else found

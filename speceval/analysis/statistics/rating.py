"""A Likert judge's mean rating and its 95% interval (the registered `mean_rating`, issue 47): Gaffke's bound for the
mean of a bounded variable (N. Gaffke 2005; E. Learned-Miller & P. S. Thomas, arXiv 1905.06208), at the effective
size of clustered ratings (`clustered.clustered_mean_codes`). Pure functions, numpy only.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from speceval.analysis.statistics.clustered import EDGE_LEVEL, cluster_stratum_codes, clustered_mean_codes, codes_of
from speceval.analysis.statistics.stats import beta_quantile

RATING_SCALE = (1.0, 5.0)
"""A Likert verdict's scale (`judging.verdicts`): the mean rating lies in it, whatever the sample."""
ALIKE = 1e-12
"""Ratings (rescaled to [0, 1]) whose variance is below this are alike: one rating off among 10^9 alike ones has
variance 6e-11 on the 1-5 scale, while rounding leaves ~1e-17."""


def rating_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    strata: Mapping[Any, Hashable] | None = None,
    scale: tuple[float, float] = RATING_SCALE,
) -> tuple[float, float] | None:
    """95% interval of a mean rating on `scale` (`rating_interval_codes`); None without ratings."""
    codes, distinct = codes_of(clusters)
    return rating_interval_codes(np.asarray(values, dtype=float), codes, cluster_stratum_codes(distinct, strata), scale)


def rating_interval_codes(
    y: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None = None, scale: tuple[float, float] = RATING_SCALE
) -> tuple[float, float] | None:
    """A mean rating's 95% interval: `scale_mean_limits` of the ratings rescaled to [0, 1], at the effective size
    `rating_effective_size`, scaled back. Defined for every sample with a rating (all 5s: the exact bound
    1 + 4·0.025^(1/G) .. 5), always inside the scale. The hull it replaces (mean ± t and the bounded mean over the
    ratings' seen range) covered 0.927 at 10 inputs x 1 run near the top of the scale: a sample that missed the rare
    low ratings saw a range like 4..5 and no spread toward them (benchmarks/RESULTS.md, issue 47)."""
    if not len(y):
        return None
    low, high = scale
    if float(y.min()) < low or float(y.max()) > high:
        raise ValueError(f"ratings outside the scale {low:g}..{high:g}")
    z = (y - low) / (high - low)
    estimate = clustered_mean_codes(z, clusters, strata)
    assert estimate is not None  # len(y) > 0
    spread = max(float(np.mean(z * z)) - estimate.mean**2, 0.0)
    variance = estimate.se**2 if estimate.se is not None else None
    effective = rating_effective_size(len(y), estimate.clusters, spread, variance)
    found = scale_mean_limits(estimate.mean, spread, effective)
    return low + found[0] * (high - low), low + found[1] * (high - low)


def rating_effective_size(n: int, clusters: int, spread: float, variance: float | None) -> float:
    """How many independent ratings the sample is worth: the ratings' own variance `spread` over the mean's
    cluster-robust `variance` (n / the design effect), between the inputs (`clusters`: an input's ratings are worth
    at least one) and the ratings `n`. The inputs when the spread says nothing: every rating alike, or one input
    (no variance); the ratings when the inputs' means agree exactly (no variance between them). A spread under
    `ALIKE` is rounding (a panel's mean rating 4.1 in every row came out 3e-17, and n where G was meant)."""
    if variance is None or spread <= ALIKE:
        return float(clusters)
    if variance <= 0.0:
        return float(n)
    return min(float(n), max(float(clusters), spread / variance))


def scale_mean_limits(p: float, spread: float, effective: float) -> tuple[float, float]:
    """Gaffke's 95% limits of the mean of a variable in [0, 1] (Gaffke 2005; Learned-Miller & Thomas 2019): the
    mean under Dirichlet(1, ..., 1) weights on the sample (a Bayesian bootstrap) and one more observation at the
    scale's end, 0 for the lower limit and 1 for the upper; its 2.5% and 97.5% quantiles. On 0/1 values it is
    Clopper-Pearson's interval exactly; all values at 1 give the exact bound 0.025^(1/n) .. 1.

    Here the sample is `effective` observations of mean `p` and variance `spread`, and the weighted mean's law is
    read as the Beta of its mean and variance (exact on 0/1 values; Dirichlet weights make the mean's variance the
    points' variance / (count + 1)). The observation at the end is what a sample that missed the rare far ratings
    lacks: the limit reaches toward the end by (p - end) / (effective + 1) before any spread is counted."""
    found = []
    for end, level in ((0.0, EDGE_LEVEL), (1.0, 1.0 - EDGE_LEVEL)):
        centre = (effective * p + end) / (effective + 1)
        points = (effective * (spread + (p - centre) ** 2) + (end - centre) ** 2) / (effective + 1)
        variance = points / (effective + 2)
        if variance <= 0.0 or not 0.0 < centre < 1.0:
            found.append(centre)  # every value at this end: the end itself
            continue
        size = max(centre * (1 - centre) / variance - 1, 1e-9)
        found.append(beta_quantile(centre * size, (1 - centre) * size, level))
    return min(found[0], p), max(found[1], p)

"""The whole log's rates for `speceval export --format inspect`, folded a statement at a time (issue 47: an export
flat in memory to 10^6 verdicts).

Each rate is the report's (`speceval.analysis.tables.variations.summarize`): the share of judged verdicts, its
interval clustered by input and stratified by statement, the interval clustered by statement, and the mean rating's.
Those need every verdict only through sums: the cluster-robust variance of a mean over clusters g in strata h is

    Σ_h G_h/(G_h-1) Σ_g (z_g - z̄_h)²,   z_g = (s_g - μ m_g)/n   (s_g: the cluster's sum, m_g: its verdicts)

and Σ_g (z_g - z̄_h)² = (S_ss - 2μ S_sm + μ² S_mm - (S_s - μ S_m)²/G_h) / n², with S the stratum's sums of s_g, m_g,
s_g², s_g m_g and m_g² (`_Sums`). Inputs are clustered within one statement, so a statement's verdicts (all judges'
files of it, read together) give its stratum's sums whole: the log's verdicts are never held, only a few numbers per
statement. The same columns code as the report's clusters them (`local_clusters`), so the two agree to rounding
(the tests compare the parts' rates with the report's compliance.csv).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speceval.analysis.reading.columns import JUDGED, VerdictColumns, local_clusters
from speceval.analysis.statistics.clustered import alike_within, clustered_limits
from speceval.analysis.statistics.rating import RATING_SCALE, rating_effective_size, scale_mean_limits
from speceval.analysis.statistics.registry import CLUSTERED, WILSON
from speceval.analysis.statistics.stats import wilson_interval
from speceval.analysis.tables.variations import count


@dataclass
class _Sums:
    """One stratum's cluster sums (see the module's formula)."""

    clusters: int = 0
    s: float = 0.0
    m: float = 0.0
    ss: float = 0.0
    sm: float = 0.0
    mm: float = 0.0

    def add(self, sums: np.ndarray, sizes: np.ndarray) -> None:
        self.clusters += len(sums)
        self.s += float(sums.sum())
        self.m += float(sizes.sum())
        self.ss += float(np.dot(sums, sums))
        self.sm += float(np.dot(sums, sizes))
        self.mm += float(np.dot(sizes, sizes))


@dataclass
class _Mean:
    """A clustered mean folded stratum by stratum: its values' count, sum and sum of squares, and each stratum's
    cluster sums (by input)."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    strata: list[_Sums] = field(default_factory=list)
    # Whether every input's values agree (identical runs), and the sum of the inputs' means: the report's
    # identical-runs interval, Wilson on the inputs (`clustered.rate_interval_codes`).
    alike: bool = True
    input_means: float = 0.0
    # The range the values were seen over: ratings must lie on their scale (`rating.rating_interval_codes`).
    low: float = math.inf
    high: float = -math.inf

    def add(self, y: np.ndarray, clusters: np.ndarray) -> None:
        """One statement's values and their input clusters (codes 0..G-1)."""
        if not len(y):
            return
        sums = np.bincount(clusters, weights=y)
        sizes = np.bincount(clusters).astype(float)
        stratum = _Sums()
        stratum.add(sums, sizes)
        self.strata.append(stratum)
        self.alike = self.alike and alike_within(y, clusters)
        self.input_means += float((sums / sizes).sum())
        self.n += len(y)
        self.total += float(y.sum())
        self.squares += float(np.dot(y, y))
        self.low, self.high = min(self.low, float(y.min())), max(self.high, float(y.max()))

    @property
    def clusters(self) -> int:
        return sum(stratum.clusters for stratum in self.strata)

    def variance(self) -> tuple[float | None, int]:
        """`clustered.stratified_variance` from the strata's sums: the mean's variance and its degrees of freedom."""
        strata, clusters = self.strata, self.clusters
        if clusters < 2:
            return None, 0
        mean, n = self.total / self.n, self.n
        total = 0.0
        for h in strata:
            residual = h.s - mean * h.m
            squared = h.ss - 2 * mean * h.sm + mean * mean * h.mm
            if h.clusters == 1:
                total += squared / (n * n)  # a stratum of one cluster keeps z_g² (conservative), as the report
            else:
                spread = max(squared - residual * residual / h.clusters, 0.0) / (n * n)
                total += h.clusters / (h.clusters - 1) * spread
        df = clusters - len(strata)
        return total, df if df >= 1 else clusters - 1

    def rate_interval(self) -> tuple[float, float, str] | None:
        """`clustered.rate_interval_codes` (by input, stratified by statement) from the sums."""
        clusters = self.clusters
        # One verdict a cluster: Wilson. Values in [0, 1] are all 0 or 1 exactly when their squares sum to their sum;
        # one share a cluster (a panel's) takes the clustered interval, as the report's.
        if self.n and clusters == self.n and self.squares >= self.total - 1e-9 * self.n:
            low, high = wilson_interval(self.total, self.n)  # type: ignore[misc]  # n > 0
            return low, high, WILSON
        if not self.n:
            return None
        method = CLUSTERED.format(unit="input") + ", stratified by statement"
        p = self.total / self.n
        if self.alike and 0.0 < p < 1.0 and clusters < self.n:
            low, high = wilson_interval(self.input_means, clusters)  # type: ignore[misc]  # clusters > 0
            return low, high, f"{method}; every input's values alike: Wilson on the inputs, as one run's"
        variance, df = self.variance()
        if variance is None:
            return 0.0, 1.0, method
        effective = p * (1 - p) / variance if variance > 0 else float(clusters)
        spread = self.squares / self.n - p * p
        verdicts = not 0 < spread < p * (1 - p) * (1 - 1e-9)
        independent = float(self.n) if verdicts else p * (1 - p) / spread * self.n
        effective = min(effective, max(float(self.n), independent))
        low, high = clustered_limits(p, effective, df, clusters, verdicts)
        return low, high, method

    def rating_interval(self, scale: tuple[float, float] = RATING_SCALE) -> tuple[float, float] | None:
        """`rating.rating_interval_codes` from the sums: Gaffke's limits of the rescaled mean at the effective
        size of the ratings' variance over the cluster-robust one (None without ratings)."""
        if not self.n:
            return None
        low, width = scale[0], scale[1] - scale[0]
        if self.low < scale[0] or self.high > scale[1]:
            raise ValueError(f"ratings outside the scale {scale[0]:g}..{scale[1]:g}")
        mean = self.total / self.n
        spread = max(self.squares / self.n - mean * mean, 0.0) / (width * width)
        variance, _ = self.variance()
        effective = rating_effective_size(
            self.n, self.clusters, spread, variance / (width * width) if variance is not None else None
        )
        found = scale_mean_limits((mean - low) / width, spread, effective)
        return low + found[0] * width, low + found[1] * width


@dataclass
class RateFold:
    """One judge's (or panel's) verdicts in the whole log, folded a statement at a time: what `summarize` reports."""

    not_judged: Counter[str] = field(default_factory=Counter)
    verdicts: _Mean = field(default_factory=_Mean)
    ratings: _Mean = field(default_factory=_Mean)

    def add(self, c: VerdictColumns, members: np.ndarray) -> None:
        """The verdicts `members` of one statement's columns (every verdict of the log's judge on that statement)."""
        judged_mask = c.judged(members)
        has_rating = ~np.isnan(c.rating[members])
        codes = np.bincount(c.outcome[members[~judged_mask & ~has_rating]], minlength=len(c.outcomes))
        self.not_judged.update({str(c.outcomes[k]): int(codes[k]) for k in np.flatnonzero(codes)})
        rated = members[c.is_outcome(JUDGED, members) & has_rating]
        judged = members[judged_mask]
        self.verdicts.add(c.values(judged), local_clusters(c, judged)[0])
        self.ratings.add(c.rating[rated], local_clusters(c, rated)[0])

    def summary(self) -> dict[str, Any]:
        """The log's `RateSummary` fields that its metadata keeps (`inspect_scores.RATE_FIELDS`)."""
        v, r = self.verdicts, self.ratings
        by_input = v.rate_interval()
        rating = r.rating_interval()
        return {
            "judged": v.n,
            "compliant": count(v.total),
            "not_judged": dict(self.not_judged),
            "rate": v.total / v.n if v.n else None,
            "ci_low": by_input[0] if by_input else None,
            "ci_high": by_input[1] if by_input else None,
            "ci_method": by_input[2] if by_input else None,
            "inputs": v.clusters,
            "mean_rating": r.total / r.n if r.n else None,
            "rating_ci_low": rating[0] if rating else None,
            "rating_ci_high": rating[1] if rating else None,
        }

"""Intervals that respect how eval data is clustered (E. Miller, "Adding Error Bars to Evals", arXiv 2411.00640).

A verdict is not an independent draw: the same input is answered again in every run, and inputs written for one
statement resemble each other. Treating 2 runs × 40 inputs as 80 independent samples narrows an interval by √2
although nothing new was learned about the inputs. Here every estimate is a mean over observations grouped in
clusters (an input, across runs and presentation orders; or a statement), and its standard error is the
cluster-robust (CR1) one: the spread of the clusters' summed residuals, scaled by G/(G-1). Repeating identical
runs multiplies every cluster's residual sum and the count by the same factor, so the interval does not move.

Intervals:
* a single run's rate over independent inputs (every cluster holds one observation): Wilson score interval with
  continuity correction (exact coverage >= 95% for n >= 10, p in [0.01, 0.99]);
* a rate pooled over runs: Wilson at the effective sample size p(1-p)/SE² (the design effect of the clusters,
  at least 1), with Student's t quantile on G-H degrees of freedom (G clusters in H strata); with continuity
  correction on Korn-Graubard's z·t(G-H)/t(n-1) (n the effective size) instead when fewer than
  `RARE_COUNT` effective verdicts are of the rarer kind (there few clusters and skewed rates make the design effect
  look like 1: a sample that missed the rare failing inputs), on the far limit only from `FAR_CORRECTED` effective
  verdicts, and the far limit there at no more than `RARE_RUNS` effective verdicts an input; at p = 0 or 1, where
  the SE is 0, the exact bound 0.025^(1/G), valid however alike an input's runs are (`clustered_limits`);
  one share an input (a panel's, one run) takes the clustered interval too, at the effective size of the shares' own
  variance;
* a mean rating on its scale 1-5: Gaffke's bound at the effective size (`speceval.analysis.statistics.rating`); a
  metric's mean without a range: the hull of estimate ± t(G-H) · SE and the bounded mean's interval over the values'
  range (`unbounded_mean_interval_codes`); a mean of a value with a declared range: the rate interval of the
  rescaled mean at its values' own variance (`mean_interval(range=...)`); a paired difference:
  `speceval.analysis.statistics.paired`;

Inputs are clustered within statements, but a spec's statements are fixed, not sampled: the SE by input is
stratified by statement (the survey estimator for clusters drawn within fixed strata). Clustering by statement
instead (no strata) answers another question, how a rate would vary over other statements like these, and is
reported beside it; with few statements it is wide.
* Bradley–Terry strengths: percentile interval over a bootstrap that resamples inputs.
Pure functions, numpy only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.statistics.registry import CLUSTERED, WILSON
from speceval.analysis.statistics.stats import Z95, wilson_interval

RARE_COUNT = 10
"""Below this many effective verdicts of the rarer kind the clustered interval takes the continuity correction (on z):
a sample that missed the rare failing inputs estimates a design effect near 1 (Beta(1.9, 0.1) rates, 30 inputs x 5
runs: 0.89 coverage without, 0.945 with), while moderate rates keep their 95% on t(G-H) without the extra width."""
FAR_CORRECTED = 40
"""From this many effective verdicts the rare limits' far side (away from the rate's own end: the lower limit of a
rate near 1) keeps the continuity correction too; below, only the near side does. The far side's correction covers
where a narrow interval sits on a sample that missed the rare failing inputs (30 inputs x 5 runs at Beta(1.9, 0.1):
0.948 with it, 0.905 without), but under 40 effective verdicts the limits are already wide and no draw fell below the
far side with or without it (10 inputs x 3 runs at Beta(1.9, 0.1): 0.984 either way, 0.306 wide with it, 0.287
without). The near side's correction is what covers there (0.969 without)."""
RARE_RUNS = 4
"""Where the rarer kind is rare (under `RARE_COUNT` effective verdicts, counted at the cap where the effective size is
above it: verdicts'), the far limit counts no more than this many effective verdicts an input. There the cluster-robust
SE rests on the few inputs that showed the rarer kind, and a sample that missed the rarely failing inputs (a long tail
of input rates) shows failures spread one to an input: a design effect near 1, an effective size near the count of
verdicts, which grows with the runs while nothing new is learned about the inputs. At 5 runs the count was the cap that
covered (30 inputs, Beta(1.9, 0.1): 0.948); at 10, 15 and 30 runs it no longer binds (0.924, 0.924, 0.920; a panel of 3
judges at 30 x 5: 0.924); at 4 an input, 0.961-0.979 (at 3, 0.983-0.987 and wider; at 5, 0.945 at 30 x 10). So where the
sample cannot measure the design effect, an input's runs count as at most 4 independent verdicts. Only the far limit
(all those misses are on that side), only where it binds, on z (Wilson at the capped size; continuity-corrected as
`FAR_CORRECTED` says)."""
EDGE_LEVEL = 0.025
"""The tail of the exact bound at a rate of 0 or 1, EDGE_LEVEL^(1/G) on G clusters: the two-sided 95% level's half.
At 0.05 (the one-sided level) coverage at identical runs fell to 0.933 just inside the bound (20 inputs, rate 0.85)."""
BOOTSTRAP_DRAWS = 1000
"""Bootstrap draws of the Bradley–Terry intervals: at 200 the percentile interval covered 93.7%, at 1,000 94.5%."""
BOOTSTRAP_SEED = 0
"""The seed of every report bootstrap, named in the methods text so a reader can reproduce the interval."""

# Student's t 0.975 quantiles for 1..30 degrees of freedom (beyond: a Cornish-Fisher expansion around z).
# fmt: off
_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
    2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
    2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)
# fmt: on


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (z for df ≤ 0 is never asked: see callers)."""
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


class ClusteredMean(BaseModel):
    """A mean over clustered observations and its cluster-robust standard error."""

    n: int
    clusters: int
    df: int = Field(description="degrees of freedom of the SE: clusters minus strata")
    mean: float
    se: float | None = Field(description="None with a single cluster: its spread cannot be estimated")


def codes_of(keys: Sequence[Hashable]) -> tuple[np.ndarray, list[Hashable]]:
    """Per key: a code 0..G-1 in order of first appearance, and the distinct keys in that order."""
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    return codes, list(index)


def cluster_stratum_codes(distinct: list[Hashable], strata: Mapping[Any, Hashable] | None) -> np.ndarray | None:
    """Per cluster code: a code of its stratum (None without strata)."""
    if strata is None:
        return None
    return codes_of([strata[c] for c in distinct])[0]


def clustered_mean(
    values: Sequence[float], clusters: Sequence[Hashable], strata: Mapping[Any, Hashable] | None = None
) -> ClusteredMean | None:
    """Mean of `values` with the CR1 standard error for the given cluster of each value; None when empty.

    `strata` (cluster → stratum, e.g. input → statement) are fixed groups the clusters were drawn within: the
    spread is then measured around each stratum's own mean, so fixed differences between statements (which
    are part of the spec, not sampling noise) do not widen the interval.
    """
    codes, distinct = codes_of(clusters)
    return clustered_mean_codes(np.asarray(values, dtype=float), codes, cluster_stratum_codes(distinct, strata))


def clustered_mean_codes(y: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None = None) -> ClusteredMean | None:
    """`clustered_mean` on codes: `clusters` per value (0..G-1, every code used), `strata` per cluster code (or
    None). The report computes every interval through this, from columns of codes (no object per verdict)."""
    if not len(y):
        return None
    mean = float(y.sum() / len(y))
    weights = y - mean
    weights /= len(y)  # in place: a million verdicts' temporaries are 8 MB each
    influence = np.bincount(clusters, weights=weights)
    del weights
    variance, df = stratified_variance(influence, strata)
    return ClusteredMean(
        n=len(y), clusters=len(influence), df=df, mean=mean, se=math.sqrt(variance) if variance is not None else None
    )


def stratified_variance(influence: np.ndarray, strata: np.ndarray | None) -> tuple[float | None, int]:
    """Σ over strata of G_h/(G_h-1) Σ (z_g - mean_h z)²; a stratum with one cluster keeps z_g² (conservative)."""
    if len(influence) < 2:
        return None, 0
    strata = np.zeros(len(influence), dtype=np.int32) if strata is None else np.asarray(strata)
    sizes = np.bincount(strata)
    used = sizes > 0
    centres = np.bincount(strata, weights=influence) / np.where(used, sizes, 1)
    # In place (the same operations, so the same numbers): a million clusters' temporaries are 8 MB each.
    deviation = centres[strata]
    np.subtract(influence, deviation, out=deviation)
    deviation **= 2
    squares = np.bincount(strata, weights=deviation)
    del deviation
    single = sizes == 1
    # Only a stratum of one cluster takes its z_g²: without one, these sums are not needed.
    lone = np.bincount(strata, weights=influence**2) if single.any() else np.zeros(len(sizes))
    factor = np.where(sizes > 1, sizes / np.where(sizes > 1, sizes - 1, 1), 0.0)
    total = float(np.where(single, lone, factor * squares)[used].sum())
    df = len(influence) - int(used.sum())
    return total, df if df >= 1 else len(influence) - 1


def rate_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    strata: Mapping[Any, Hashable] | None = None,
    unit: str = "input",
) -> tuple[float, float, str] | None:
    """95% interval of a proportion (values in [0, 1]: verdicts, or win scores with ties as 1/2): Wilson when every
    cluster holds one observation, else the clustered one."""
    codes, distinct = codes_of(clusters)
    return rate_interval_codes(
        np.asarray(values, dtype=float),
        codes,
        cluster_stratum_codes(distinct, strata),
        unit,
        stratified=strata is not None,
    )


def rate_interval_codes(
    y: np.ndarray,
    clusters: np.ndarray,
    strata: np.ndarray | None = None,
    unit: str = "input",
    stratified: bool | None = None,
    rate: bool = True,
) -> tuple[float, float, str] | None:
    """`rate_interval` on codes (see `clustered_mean_codes`); `rate` False for a rescaled mean (`clustered_limits`'
    Korn-Graubard ratio is for rates: a mean of counts that happen to be 0 or 1 is not a rate of verdicts)."""
    single = bool(len(y)) and int(clusters.max()) + 1 == len(y)
    if single and bool(np.all((y == 0.0) | (y == 1.0))):
        # Every cluster holds one verdict (codes 0..G-1 all used): Wilson, no clustered SE to compute. One share
        # (a panel's), one score with ties or one rescaled count each takes the clustered interval below, at the
        # effective size of the values' own variance: Wilson on their sum counted each as a verdict (a panel of 3
        # judges at 100 inputs, rate 0.99: 0.061 wide, 2.9x a covering bootstrap; flips per conversation, mostly 0
        # or 1 on 0..3, at 100 inputs x 1 run: 2.2x, their variance a third of p(1 - p) on the rescaled scale).
        low, high = wilson_interval(float(y.sum()), len(y))  # type: ignore[misc]  # n > 0
        return low, high, WILSON
    estimate = clustered_mean_codes(y, clusters, strata)
    if estimate is None:
        return None
    stratified = strata is not None if stratified is None else stratified
    method = CLUSTERED.format(unit=unit) + (", stratified by statement" if stratified else "")
    if rate and not single and 0.0 < estimate.mean < 1.0 and alike_within(y, clusters):
        # Every input's values agree (identical runs, e.g. at temperature 0): they say no more than one value an
        # input, so the interval is Wilson on the inputs, as one run's. The clustered one could come out narrower
        # here: its stratified SE gains on one run's plain Wilson, and its rare limits' Korn-Graubard z is below t.
        means = np.bincount(clusters, weights=y) / np.bincount(clusters)
        low, high = wilson_interval(float(means.sum()), len(means))  # type: ignore[misc]  # clusters > 0
        return low, high, f"{method}; every {unit}'s values alike: Wilson on the {unit}s, as one run's"
    if estimate.se is None:
        return 0.0, 1.0, method  # one cluster: nothing is known about the spread between clusters
    p = estimate.mean
    variance = estimate.se**2
    effective = p * (1 - p) / variance if variance > 0 else float(estimate.clusters)
    # The design effect is at least 1: never more effective observations than independent ones would give. For
    # verdicts (0 or 1) that is their count; scores with ties (1/2) vary less than a verdict at the same rate, so
    # theirs is larger (capped at the count, a win rate with 75% ties was twice as wide as it needed to be).
    spread = float(np.dot(y, y)) / len(y) - p * p  # no temporary of a million verdicts
    # (Verdicts' spread is p(1 - p) to rounding: the relative 1e-9 keeps their cap exactly their count.)
    verdicts = not 0 < spread < p * (1 - p) * (1 - 1e-9)
    independent = float(len(y)) if verdicts else p * (1 - p) / spread * len(y)
    effective = min(effective, max(float(estimate.n), independent))
    low, high = clustered_limits(p, effective, estimate.df, estimate.clusters, verdicts and rate)
    return low, high, method


def alike_within(y: np.ndarray, clusters: np.ndarray) -> bool:
    """Whether every cluster's values are all the same (each input's runs agree)."""
    counts = np.bincount(clusters)
    sums = np.bincount(clusters, weights=y)
    squares = np.bincount(clusters, weights=y * y)
    used = counts > 0
    return bool(np.allclose(squares[used] * counts[used], sums[used] ** 2, rtol=1e-12, atol=1e-9))


def clustered_limits(p: float, effective: float, df: int, clusters: int, verdicts: bool = True) -> tuple[float, float]:
    """The clustered rate interval's limits at rate `p`, `effective` verdicts, `df` degrees of freedom of the SE,
    and `clusters` clusters (> 1); `verdicts`: the values are 0 or 1 (else shares, scores with ties, rescaled means).

    * At a rate of 0 or 1 the SE is 0 and says nothing of how alike an input's runs are: the exact bound
      0.025^(1/G) on G clusters, valid at any intra-input correlation (every cluster alike in every run has
      probability at most p^G, reached when an input's runs are identical, e.g. at temperature 0). Wilson at G on
      t(G-1) (the limit before) was 0.599 at 10 inputs, this 0.692; a bound at the count of verdicts instead
      (0.885 at 10 x 3) covers 0.41 at 5 inputs of identical runs at rate 0.9.
    * Fewer than `RARE_COUNT` effective verdicts of the rarer kind: Wilson with continuity correction on Korn and
      Graubard's z · t(G-H) / t(n-1), n the effective size (not the count of verdicts: identical runs repeated must
      leave the interval where it was), as the paired difference's sides; under `FAR_CORRECTED` effective verdicts
      on the near limit only (the one toward the rate's own end). The correction is what covers
      there (a sample that missed the rare failing inputs estimates a design effect near 1: 30 inputs x 5 runs at
      Beta(1.9, 0.1) rates covered 0.89 with plain limits, 0.95 with it); the bare t(G-H) on top of it charged the
      few clusters twice, and the bare z undercovers with few clusters (3-6 inputs x 30-40 runs at Beta(9, 1):
      0.905-0.923). Values that are not verdicts keep the bare t(G-H): their variance is not fixed by their mean, so
      the SE's own noise counts even where the effective size is near G (an unranged count's mean, 5 inputs x 3
      runs: 0.899 on the ratio, 0.943 on t; a rescaled mean keeps t even where its values are 0 or 1). The far limit
      there counts at most `RARE_RUNS` effective verdicts an input (30 inputs x 15 runs at Beta(1.9, 0.1): 0.924
      without, 0.976 with), and verdicts' rarer kind is judged rare at that capped size where the effective size
      is above it, so that one more failure never leaves the branch and lifts the far limit.
    * Otherwise plain Wilson on t(G-H): the rarer kind is common, and the SE's own noise with few clusters is what
      t pays for (5 inputs x 20 runs, Beta(5, 5): 0.90 on z, 0.97 on t)."""
    if p in (0.0, 1.0):
        half = 1.0 - EDGE_LEVEL ** (1.0 / clusters)
        return (0.0, half) if p == 0.0 else (1.0 - half, 1.0)
    cap = float(RARE_RUNS * clusters)
    # Verdicts' rarer kind is judged rare at the size their far limit counts: past the cap, at the cap. Judged at the
    # effective size alone, one more failure could leave the branch and lift the lower limit (30 inputs x 15 runs,
    # failures one to an input: 0.930 at 9, 0.959 at 10), on the very samples the cap is for: failures spread one to
    # an input make the design effect look like 1. Other values keep the rule at their effective size (scores with
    # ties may count more than 4 an input: a win rate at 10 x 3, 30% ties, was 0.159 -> 0.219 wide at the cap).
    rare = min(p, 1 - p) * (min(effective, cap) if verdicts else effective) < RARE_COUNT
    if rare and effective > cap:
        # The far limit at no more than RARE_RUNS effective verdicts an input (see RARE_RUNS); never narrower.
        near = _score_limits(p, effective, df, verdicts)
        # On z: the cap stands in for the SE's unreliability, which Korn-Graubard's t-ratio charges otherwise (both
        # charged the few clusters twice: a panel at 10 inputs x 3 runs went from 1.41x to 1.52x its reference).
        far = wilson_interval(p * cap, cap, continuity=cap >= FAR_CORRECTED or not verdicts)
        assert far is not None  # cap > 0
        low = min(near[0], far[0]) if p >= 0.5 else near[0]
        return low, max(near[1], far[1]) if p <= 0.5 else near[1]
    return _score_limits(p, effective, df, verdicts)


def _score_limits(p: float, effective: float, df: int, verdicts: bool) -> tuple[float, float]:
    """`clustered_limits` at a rate strictly between 0 and 1, before the far limit's cap."""
    rare = min(p, 1 - p) * effective < RARE_COUNT
    z = Z95 * t975(df) / t975(max(df, int(effective) - 1)) if rare and verdicts else t975(df)
    found = wilson_interval(p * effective, effective, z=z, continuity=rare)
    assert found is not None  # effective > 0
    if not (rare and verdicts) or effective >= FAR_CORRECTED or p == 0.5:
        return found
    plain = wilson_interval(p * effective, effective, z=z, continuity=False)
    assert plain is not None
    # The far limit (away from the rate's own end) plain, the near one corrected: see FAR_CORRECTED.
    return (plain[0], found[1]) if p > 0.5 else (found[0], plain[1])


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    strata: Mapping[Any, Hashable] | None = None,
    range: tuple[float, float] | None = None,  # noqa: A002 - the YAML key
    seen: tuple[float, float] | None = None,
) -> tuple[float, float] | None:
    """95% interval of a metric's mean (a Likert rating takes `rating.rating_interval`): with `range` (low, high) a
    value is known never to leave, the bounded-variable interval of `bounded_mean_interval_codes`; without,
    `unbounded_mean_interval_codes` (`seen`: the range the metric's values were seen over, default these values'
    own)."""
    codes, distinct = codes_of(clusters)
    y, strata_codes = np.asarray(values, dtype=float), cluster_stratum_codes(distinct, strata)
    if range is not None:
        return bounded_mean_interval_codes(y, codes, range, strata_codes)
    return unbounded_mean_interval_codes(y, codes, strata_codes, seen)


def unbounded_mean_interval_codes(
    y: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None = None, seen: tuple[float, float] | None = None
) -> tuple[float, float] | None:
    """A mean without a declared range: the hull of mean ± t(df) · cluster-robust SE and the bounded-variable
    interval over the range the values were seen over (`seen`, at least their own min..max). Skewed values (a
    zero-inflated score, small counts) push the t interval's coverage to 0.80-0.92, as its symmetric limits miss the
    long tail; the bounded interval's score limits are skewed with the data. None when the values do not vary over
    `seen` (every value alike: a point would claim certainty no sample gives; declare `range:` to bound it)."""
    if not len(y):
        return None
    low, high = float(y.min()), float(y.max())
    if seen is not None:
        low, high = min(low, seen[0]), max(high, seen[1])
    if not low < high:
        return None
    bounded = bounded_mean_interval_codes(y, clusters, (low, high), strata)
    symmetric = mean_interval_codes(y, clusters, strata)
    found = [f for f in (bounded, symmetric) if f is not None]
    if not found:
        return None
    return min(f[0] for f in found), max(f[1] for f in found)


def mean_interval_codes(
    y: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None = None
) -> tuple[float, float] | None:
    """`mean_interval` on codes (see `clustered_mean_codes`)."""
    estimate = clustered_mean_codes(y, clusters, strata)
    if estimate is None or estimate.se is None:
        return None
    half = t975(estimate.df) * estimate.se
    return estimate.mean - half, estimate.mean + half


def bounded_mean_interval_codes(
    y: np.ndarray, clusters: np.ndarray, bounds: tuple[float, float], strata: np.ndarray | None = None
) -> tuple[float, float] | None:
    """95% interval of the mean of values known to lie in `bounds`: the values rescaled to [0, 1] get the rate
    interval (Wilson where every value is one cluster's and at an end of the range, else the clustered Wilson at the
    effective size of the values' own variance, one value a cluster too), scaled back.

    A variable in [0, 1] has variance at most mean·(1 - mean), the binomial's, so the score interval of its mean is
    valid where the t interval is not: a zero-inflated 0-10 score (20 inputs x 3 runs) covered 0.80-0.87 with
    mean ± t·SE, and an all-zero sample gave [0, 0]; here it stays inside the range and is never a point."""
    low, high = bounds
    if not low < high:
        raise ValueError(f"a range needs low < high, got {bounds}")
    if len(y) and (float(y.min()) < low or float(y.max()) > high):
        raise ValueError(f"values outside the declared range {low:g}..{high:g}")
    found = rate_interval_codes((y - low) / (high - low), clusters, strata, rate=False)
    if found is None:
        return None
    return low + found[0] * (high - low), low + found[1] * (high - low)


def dense_codes(codes: np.ndarray) -> np.ndarray:
    """Codes renumbered 0..K-1 (in sorted order), so that counting by code needs no room for absent ones.

    Non-negative codes not much larger than their count are renumbered through a table of the codes present (a
    few bytes per code; sorting them took five arrays of their size)."""
    codes = np.asarray(codes)
    if len(codes) and codes.dtype.kind in "iu" and codes.min() >= 0 and codes.max() < 4 * len(codes) + 1024:
        present = np.zeros(int(codes.max()) + 1, dtype=bool)
        present[codes] = True
        renumbered: np.ndarray = np.cumsum(present, dtype=np.int32 if len(present) < 2**31 else np.int64)
        renumbered -= 1
        found: np.ndarray = renumbered[codes]
        return found
    inverse: np.ndarray = np.unique(codes, return_inverse=True)[1]
    return inverse.reshape(-1)


def bootstrap_percentiles(
    clusters: Sequence[Hashable],
    statistic: Callable[[list[int]], np.ndarray | None],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray] | None:
    """2.5% and 97.5% percentiles of `statistic` over resamples of whole clusters.

    `statistic` gets the indices of the observations in one resample (every observation of a drawn cluster, as
    often as the cluster was drawn) and returns a vector, or None when that resample is degenerate (skipped).
    """
    grouped: dict[Hashable, list[int]] = defaultdict(list)
    for i, cluster in enumerate(clusters):
        grouped[cluster].append(i)
    members = list(grouped.values())
    if len(members) < 2:
        return None
    return _percentiles(len(members), lambda picked: statistic([i for g in picked for i in members[g]]), draws, seed)


def bootstrap_weighted(
    clusters: Sequence[Hashable],
    statistic: Callable[[np.ndarray], np.ndarray | None],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray] | None:
    """`bootstrap_percentiles` for a statistic of weighted sums: `statistic` gets, per observation, how many times
    its cluster was drawn in one resample (the same draws, from the same seed, as `bootstrap_percentiles`), so a
    resample costs a few array operations instead of a list of every drawn observation (a Bradley–Terry interval
    over 100,000 comparisons took minutes)."""
    codes, distinct = codes_of(clusters)
    return bootstrap_weighted_codes(codes, len(distinct), statistic, draws, seed)


def bootstrap_weighted_codes(
    codes: np.ndarray,
    clusters: int,
    statistic: Callable[[np.ndarray], np.ndarray | None],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray] | None:
    """`bootstrap_weighted` on codes: per observation, a code 0..`clusters`-1 of its cluster, numbered in order of
    first appearance (the numbering decides which cluster each seeded draw picks)."""
    return bootstrap_cluster_counts(clusters, lambda counts: statistic(counts[codes]), draws, seed)


def bootstrap_cluster_counts(
    clusters: int,
    statistic: Callable[[np.ndarray], np.ndarray | None],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray] | None:
    """`bootstrap_weighted_codes` whose `statistic` gets, per cluster, how many times it was drawn (the same
    draws): a statistic over a million observations can then weigh them a slice at a time."""
    if clusters < 2:
        return None
    return _percentiles(clusters, lambda picked: statistic(np.bincount(picked, minlength=clusters)), draws, seed)


def _percentiles(
    clusters: int, resampled: Callable[[np.ndarray], np.ndarray | None], draws: int, seed: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """2.5% and 97.5% percentiles of `resampled` over `draws` seeded draws of `clusters` clusters (with
    replacement); None when fewer than half the resamples give a value."""
    stacked = _resampled(clusters, resampled, draws, seed)
    if stacked is None:
        return None
    return np.percentile(stacked, 2.5, axis=0), np.percentile(stacked, 97.5, axis=0)


def bootstrap_cluster_values(
    clusters: int,
    statistic: Callable[[np.ndarray], np.ndarray | None],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> np.ndarray | None:
    """`bootstrap_cluster_counts`' resampled values themselves (draws x values; the same seeded draws), for an
    interval other than the percentile one; None with fewer than two clusters or half the resamples degenerate."""
    if clusters < 2:
        return None
    return _resampled(clusters, lambda picked: statistic(np.bincount(picked, minlength=clusters)), draws, seed)


def _resampled(
    clusters: int, resampled: Callable[[np.ndarray], np.ndarray | None], draws: int, seed: int
) -> np.ndarray | None:
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(draws):
        value = resampled(rng.integers(0, clusters, clusters))
        if value is not None:
            results.append(value)
    if len(results) < draws // 2:
        return None
    return np.vstack(results)

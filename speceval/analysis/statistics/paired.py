"""Differences of two rates measured on the same inputs (two candidates, two variations, a judge against the others).

A paired difference's interval must not collapse when both sides are constant on the shared inputs, which is the
common case near 100%: the old estimate ± t · SE of the per-input differences gave [0, 0] whenever no input told
the two sides apart (coverage 0.56 at n = 10 for 0.97 vs 0.95). Here the interval is built from the two rates'
own score intervals instead, by the method of variance estimates recovery (MOVER, Zou & Donner, Stat Med 2008;
Newcombe, Stat Med 1998, method 10, the hybrid score interval for paired proportions):

    L = d - sqrt((p_a - l_a)^2 - 2 r (p_a - l_a)(u_b - p_b) + (u_b - p_b)^2)
    U = d + sqrt((u_a - p_a)^2 - 2 r (u_a - p_a)(p_b - l_b) + (p_b - l_b)^2)

where (l, u) are each rate's 95% interval and r the correlation of the two sides over inputs. Each side's interval is a
Wilson interval (`_side_estimate`): at n for one answer per input, which makes this Newcombe's hybrid score interval;
over several runs at the side's cluster-robust effective size with Korn and Graubard's degrees-of-freedom-adjusted z
where its answers show clustering (`_side_limits`: a cluster-robust variance above the unbiased binomial one; a constant
side shows nothing and takes the other side's evidence, or the adjustment where both are constant); continuity-corrected
only away from 0 and 1 (`keeps_continuity_correction`); a constant side (all 0 or all 1) takes the mid-p exact limit
instead (`side_limits`); and r is the correlation of the inputs' totals (their cluster-robust influence, centred within
statements), which for one answer per input is Newcombe's phi, a positive one taken half a standard error down on
Fisher's z (`mover_correlation`: MOVER takes it as known, and of few inputs it is noisy).
A constant side has r = 0 (Newcombe's rule for a zero margin), so the interval keeps both rates' own widths; a
correlation of 1 is capped at 1 - 1/G (G inputs), so two sides that agree on every input still get an interval.
Values outside [0, 1] (means, not rates) combine the two means' t intervals the same way. Pure functions, numpy
only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from speceval.analysis.statistics.clustered import (
    RARE_COUNT,
    RARE_RUNS,
    cluster_stratum_codes,
    clustered_limits,
    clustered_mean_codes,
    codes_of,
    dense_codes,
    mean_interval_codes,
    stratified_variance,
    t975,
)
from speceval.analysis.statistics.stats import Z95, wilson_interval

NEAR_BOUND = 0.2
"""A side whose rarer kind is under this share (and under `RARE_COUNT` effective answers) takes plain Wilson limits."""


class PairedDifference(BaseModel):
    """mean(A) - mean(B) over the clusters both sides were observed on."""

    difference: float
    se: float | None
    ci_low: float | None
    ci_high: float | None
    clusters: int
    n_a: int
    n_b: int
    correlation: float | None = None
    """The correlation of the two sides over shared inputs the interval used (None without an interval)."""


def paired_difference(
    a: Sequence[tuple[Hashable, float]],
    b: Sequence[tuple[Hashable, float]],
    strata: Mapping[Any, Hashable] | None = None,
) -> PairedDifference | None:
    """Difference of two means on shared clusters, with a MOVER interval (see the module's docstring).

    Each side lists (cluster, value); clusters seen on only one side are left out, so both means are over the
    same inputs and their correlation (an easy input is easy for both) enters the interval.
    """
    codes, distinct = codes_of([c for c, _ in a] + [c for c, _ in b])
    values = np.array([v for _, v in a] + [v for _, v in b], dtype=float)
    return paired_difference_codes(
        codes[: len(a)], values[: len(a)], codes[len(a) :], values[len(a) :], cluster_stratum_codes(distinct, strata)
    )


def paired_difference_codes(
    ca: np.ndarray, ya: np.ndarray, cb: np.ndarray, yb: np.ndarray, strata: np.ndarray | None = None
) -> PairedDifference | None:
    """`paired_difference` on codes: cluster codes of both sides index `strata` (a stratum code per cluster)."""
    shared = np.intersect1d(ca, cb)
    in_a, in_b = np.isin(ca, shared), np.isin(cb, shared)
    ya, yb = np.asarray(ya, dtype=float)[in_a], np.asarray(yb, dtype=float)[in_b]
    if not len(ya) or not len(yb):
        return None
    local_a, local_b = np.searchsorted(shared, ca[in_a]), np.searchsorted(shared, cb[in_b])
    local_strata = None if strata is None else dense_codes(np.asarray(strata)[shared])
    return mover_difference(ya, local_a, yb, local_b, len(shared), local_strata)


def mover_difference(
    ya: np.ndarray,
    la: np.ndarray,
    yb: np.ndarray,
    lb: np.ndarray,
    clusters: int,
    strata: np.ndarray | None = None,
    scale: float = 1.0,
) -> PairedDifference:
    """scale · (mean(ya) - mean(yb)) with its MOVER interval; `la`, `lb` are cluster codes 0..`clusters`-1 (each
    used by both sides), `strata` a stratum code per cluster. `scale` (> 0) multiplies the difference and its
    bounds (leniency: a judge against all judges' mean is (K-1)/K of its difference from the others')."""
    mean_a, mean_b = float(ya.sum() / len(ya)), float(yb.sum() / len(yb))
    za = np.bincount(la, weights=(ya - mean_a) / len(ya), minlength=clusters)
    zb = np.bincount(lb, weights=(yb - mean_b) / len(yb), minlength=clusters)
    variance, _ = stratified_variance(za - zb, strata)
    difference = mean_a - mean_b
    se = math.sqrt(variance) if variance is not None else None
    side_a, side_b = _side_estimate(ya, la, strata), _side_estimate(yb, lb, strata)
    if side_a is None or side_b is None:
        return PairedDifference(
            difference=scale * difference,
            se=None if se is None else scale * se,
            ci_low=None,
            ci_high=None,
            clusters=clusters,
            n_a=len(ya),
            n_b=len(yb),
        )
    side_a, side_b = _side_limits(side_a, side_b), _side_limits(side_b, side_a)
    r = mover_correlation(centred_correlation(za, zb, strata), clusters)
    (low_a, high_a), (low_b, high_b) = side_a, side_b
    below = math.sqrt(
        max(0.0, (mean_a - low_a) ** 2 - 2 * r * (mean_a - low_a) * (high_b - mean_b) + (high_b - mean_b) ** 2)
    )
    above = math.sqrt(
        max(0.0, (high_a - mean_a) ** 2 - 2 * r * (high_a - mean_a) * (mean_b - low_b) + (mean_b - low_b) ** 2)
    )
    rates = _in_unit(ya) and _in_unit(yb)
    low, high = difference - below, difference + above
    if rates:  # a difference of rates lies in [-1, 1]
        low, high = max(-1.0, low), min(1.0, high)
    return PairedDifference(
        difference=scale * difference,
        se=None if se is None else scale * se,
        ci_low=scale * min(low, difference),
        ci_high=scale * max(high, difference),
        clusters=clusters,
        n_a=len(ya),
        n_b=len(yb),
        correlation=r,
    )


def _in_unit(y: np.ndarray) -> bool:
    return bool(len(y)) and float(y.min()) >= 0.0 and float(y.max()) <= 1.0


class _Side(NamedTuple):
    """A rate side over several answers an input, before its limits: they depend on the other side where this one
    is constant (`_side_limits`)."""

    p: float
    effective: float
    df: int
    answers: int
    clustered: bool | None
    """Whether the side's cluster-robust variance exceeds the unbiased binomial one, p(1-p)/(n-1) (None: a
    constant side, whose variance says nothing of how alike an input's answers are)."""
    inputs: int


def _side_estimate(
    y: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None
) -> tuple[float, float] | _Side | None:
    """One side on the shared clusters (a cluster left without values by the sides' codes does not occur: both
    sides use every shared cluster): its 95% interval where it does not depend on the other side, else a `_Side`.
    Values outside [0, 1] take the mean's t interval; one answer per input, Wilson at n on z (the mid-p limit at
    a constant side: `side_limits`). Several: Wilson at the side's cluster-robust effective size p(1-p)/SE^2 (at
    most the count of answers), without continuity correction near 0 or 1 (`keeps_continuity_correction`): there
    MOVER's coverage comes from combining the two sides (Newcombe's method 10), and the single rate's correction
    only widened the difference (1.8-3.1x the naive method 10 at 10 inputs x 3 runs)."""
    if not _in_unit(y):
        return mean_interval_codes(y, clusters, strata)
    if int(clusters.max()) + 1 == len(y):
        return side_limits(float(y.sum()) / len(y), len(y), None)
    estimate = clustered_mean_codes(y, clusters, strata)
    if estimate is None:
        return None
    if estimate.se is None:
        return 0.0, 1.0  # one cluster: nothing is known about the spread between clusters
    p, variance, n = estimate.mean, estimate.se**2, len(y)
    effective = min(p * (1 - p) / variance if variance > 0 else float(n), float(n))
    # CR1's G/(G-1) makes the cluster-robust variance unbiased; the binomial one's counterpart is n/(n-1). One
    # failure among independent answers gives the two exactly equal (design effect 1, where p(1-p)/n said 1.03).
    clustered = None if p in (0.0, 1.0) else variance * (n - 1) > p * (1 - p) * (1 + 1e-9)
    return _Side(p=p, effective=effective, df=estimate.df, answers=n, clustered=clustered, inputs=estimate.clusters)


def _side_limits(side: tuple[float, float] | _Side, other: tuple[float, float] | _Side) -> tuple[float, float]:
    """A side's limits: Korn & Graubard's degrees-of-freedom-adjusted limits (Survey Methodology 1998), z · t(G-H) /
    t(n-1), where its answers show clustering, z where they show none. A constant side shows nothing: it takes the other
    side's evidence (the same inputs and runs: its design effect and whether it shows clustering), and where that
    side is constant too (no answer differs from any other: nothing is known of how alike an input's answers are)
    the mid-p bound at its inputs on z (10 inputs x 3 runs, both sides always compliant: ±0.259; ±0.110 at its
    answers on the Korn-Graubard ratio before session 20, which covered 0.887 with identical runs at 0.8 against
    always compliant)."""
    if not isinstance(side, _Side):
        return side
    if side.clustered is not None:
        return side_limits(side.p, side.effective, side.df, answers=side.answers, clustered=side.clustered)
    # A constant side's answers count as far as the other side's show they differ (its design effect), never as
    # fewer than one an input; with the other constant too, one an input: nothing shows how alike an input's
    # answers are, and the bound at the inputs holds however alike they are (at temperature 0 an input's runs are
    # one answer: at the count of answers 10 inputs x 3 runs, 0.8 against always compliant, covered 0.887, and
    # 30 x 5 at 0.95 0.777, where a draw with every input compliant read ±0.1 around 0).
    if isinstance(other, _Side) and other.clustered is not None:
        effective = max(float(side.inputs), side.answers * other.effective / other.answers)
        return side_limits(side.p, effective, side.df, answers=side.answers, clustered=other.clustered)
    return side_limits(side.p, float(side.inputs), None)


def side_limits(
    p: float, effective: float, df: int | None, answers: int | None = None, clustered: bool = True
) -> tuple[float, float]:
    """Limits of one side of a paired difference at rate `p` and `effective` answers, on t(`df`) (None: one answer
    per input, z), or with `answers` (the count behind the effective size, > 1) on Korn & Graubard's
    z · t(`df`) / t(`answers` - 1) where `clustered` (the answers show clustering, or nothing shows they do not:
    `_side_limits`) and on z otherwise.
    Wilson limits, except at a rate of 0 or 1: the mid-p exact limit, 1 - a^(1/effective) from the bound with a the
    two-sided level of the quantile (0.05 on z; Berry & Armitage 1995), narrower than Wilson's z²/(n + z²) (0.259
    against 0.277 at 10 answers, 0.095 against 0.113 at 30). Zero discordant answers is the common case near
    100%, and there the mid-p limit is the smallest half-width whose coverage holds for every truth of independent
    answers: a true difference d shows no discordance with probability at most (1 - d)^n, 0.05 at the limit. The
    precision plan (`speceval.experiments.precision`) computes its power with the bare t(`df`), a little wider
    than the report's interval, so the plan's promise holds for the report's."""
    if df is None or (answers is not None and answers >= 2 and not clustered):
        z = Z95
    elif answers is None or answers < 2:
        z = t975(df)
    else:
        z = Z95 * t975(df) / t975(answers - 1)
    if p in (0.0, 1.0):
        half = 1.0 - math.erfc(z / math.sqrt(2.0)) ** (1.0 / effective)
        return (0.0, half) if p == 0.0 else (1.0 - half, 1.0)
    found = wilson_interval(p * effective, effective, z=z, continuity=keeps_continuity_correction(p, effective))
    assert found is not None  # effective > 0
    return found


def keeps_continuity_correction(p: float, effective: float) -> bool:
    """Whether a side keeps the continuity correction: away from 0 and 1 (the rarer kind at least `RARE_COUNT`
    effective answers, or at least `NEAR_BOUND` of them) plain limits undercover (0.928 at 30 inputs, 0.5 vs 0.4;
    0.915 at 10 inputs) and the correction costs about 1/n a side; near 0 or 1 MOVER is conservative without it
    (0.995-1.000 at 10-20 inputs, 0.97 vs 0.95 and 0.99 vs 0.98), where it cost 1.2-2x the width."""
    rare = min(p, 1 - p)
    return rare * effective >= RARE_COUNT or rare >= NEAR_BOUND


MOVER_R_SHRINK = 0.5
"""Fisher-z standard errors a positive correlation is taken down by (`mover_correlation`)."""


def mover_correlation(r: float, clusters: int) -> float:
    """The correlation MOVER combines the sides' limits with: a positive one taken half a standard error down on
    Fisher's z, tanh(atanh(r) - 0.5 / sqrt(G - 3)), not below 0; 0 at 3 inputs or fewer; a negative one as it is
    (it widens the interval). MOVER takes the correlation as known, but of G inputs' totals it is noisy: where it
    came out high the interval was too narrow (the issue 47 audit: two equal sides at 0.9 over 10 inputs x 5 runs
    covered 0.927-0.936, 0.845 on the draws with r 0.8-0.95; 0.947 with this; the coverage matrix's paired rows
    stay within 1.48x their covering references)."""
    return float(mover_correlations(np.asarray([r], dtype=float), clusters)[0])


def mover_correlations(r: np.ndarray, clusters: int) -> np.ndarray:
    """`mover_correlation` of many correlations at once (the precision plan's enumeration of every table)."""
    if clusters <= 3:
        kept: np.ndarray = np.minimum(r, 0.0)
        return kept
    with np.errstate(divide="ignore"):
        down = np.tanh(np.arctanh(np.minimum(r, 1.0 - 1e-12)) - MOVER_R_SHRINK / math.sqrt(clusters - 3))
    found: np.ndarray = np.where(r > 0.0, np.maximum(0.0, down), r)
    return found


def centred_correlation(za: np.ndarray, zb: np.ndarray, strata: np.ndarray | None) -> float:
    """Correlation of the two sides' cluster totals, centred within strata; 0 when a side does not vary (Newcombe's
    rule for an empty margin: nothing is known of the correlation, and 0 keeps both sides' widths)."""
    if strata is None:
        strata = np.zeros(len(za), dtype=np.int64)
    sizes = np.maximum(np.bincount(strata), 1)
    da = za - (np.bincount(strata, weights=za) / sizes)[strata]
    db = zb - (np.bincount(strata, weights=zb) / sizes)[strata]
    spread = math.sqrt(float((da * da).sum()) * float((db * db).sum()))
    if spread <= 0.0:
        return 0.0
    # At r = 1 two equal sides (every input answered alike by both, not all alike) would give [0, 0]: no input
    # told them apart, yet the next one could. The cap 1 - 1/G keeps a width that shrinks as inputs accumulate.
    return max(-1.0, min(1.0 - 1.0 / len(za), float((da * db).sum()) / spread))


def score_difference(
    ya: np.ndarray, yb: np.ndarray, clusters: np.ndarray, count: int, strata: np.ndarray | None = None
) -> PairedDifference:
    """mean(ya) - mean(yb) of two values in [0, 1] measured on the same units (an answer's wording flip share and its
    retest flip), `clusters` a code 0..`count`-1 per unit (its input, every code used), `strata` a stratum code per
    cluster: Tango's score interval for paired proportions (`tango_interval`) on the units' differences d, their
    positive parts summed as the discordant count b and their negative parts as c, counted at the units' effective
    size: the variance a 0/±1 discordance of that mean has, (b + c)/n - d̄², over the cluster-robust SE² (stratified),
    at most the count of units, and at most `RARE_RUNS` an input where fewer than `RARE_COUNT` effective units differ,
    as `clustered_limits` counts a rare rate's verdicts. The quantile is t(G-H) where the discordance is common (8
    inputs x 4 answers, an excess of 0.5 carried by inputs at ICC 0.3: 0.949 on z, 0.968 on t(6)) and z where it is
    rare (the cap stands in for the SE's unreliability; Korn and Graubard's ratio on top widened 5 inputs x 3 answers
    at truth 0 from 0.64 to 0.91, at 0.98 coverage already). One unit an input: Tango's own interval on z. No unit
    told apart: the exact bound 1 - 0.025^(1/G) each way at the count of inputs (`clustered_limits` at a rate of 0),
    valid however alike an input's units are (the mid-p bound 1 - 0.05^(1/G) covered 0.925 at 200 inputs and a
    one-sided excess of 0.015).

    Why not MOVER of the two sides' intervals (`mover_difference`, the card's method before): a side showing no flip
    there takes its bound at the count of answers, and a constant side borrows the other side's clustering; where the
    excess is one-sided and carried by few inputs (the retest never flips, an input's answers flip alike) it covered
    0.862-0.886 (30 x 5 at 0.03 and ICC 0.5, 10 x 3 at 0.2 with identical answers, 20 x 4 at 0.04 and ICC 0.3), this
    0.993-0.999 (benchmarks/RESULTS.md, "Wording excess and self-preference (session 20)")."""
    d = np.asarray(ya, dtype=float) - np.asarray(yb, dtype=float)
    n = len(d)
    b, c = float(np.clip(d, 0.0, None).sum()), float(np.clip(-d, 0.0, None).sum())
    estimate = clustered_mean_codes(d, clusters, strata)
    found = PairedDifference(
        difference=(b - c) / n,
        se=None if estimate is None else estimate.se,
        ci_low=None,
        ci_high=None,
        clusters=count,
        n_a=n,
        n_b=n,
    )
    if b + c == 0.0:
        half = clustered_limits(0.0, float(n), max(count - 1, 1), count)[1]
        return found.model_copy(update={"ci_low": -half, "ci_high": half})
    if count == n:
        low, high = tango_interval(float(n), b, c)
        return found.model_copy(update={"ci_low": low, "ci_high": high})
    if estimate is None or estimate.se is None:
        return found.model_copy(update={"ci_low": -1.0, "ci_high": 1.0})  # one input: nothing known of the spread
    difference, variance = found.difference, estimate.se**2
    spread = (b + c) / n - difference * difference
    # Every unit's difference alike (all discordant the same way): as where none differs, nothing shows how alike an
    # input's units are, so they count as one an input (10 inputs x 5 answers all flipped: 0.445 low, not 0.857).
    effective = max(1.0, min(float(n), spread / variance if variance > 0.0 else float(count)))
    cap = float(RARE_RUNS * count)
    rare = (b + c) / n * min(effective, cap) < RARE_COUNT  # judged at the capped size, as `clustered_limits` does
    if rare:
        effective = min(effective, cap)
    scale = effective / n
    # Rare: on z, the cap standing in for the SE's unreliability (Korn and Graubard's ratio on top, as the clustered
    # rate takes, widened 5 inputs x 3 answers at truth 0 from 0.61 to 0.88 at 0.989 coverage already).
    z = Z95 if rare else t975(estimate.df)
    low, high = tango_interval(effective, b * scale, c * scale, z)
    return found.model_copy(update={"ci_low": low, "ci_high": high})


def tango_interval(n: float, b: float, c: float, z: float = Z95) -> tuple[float, float]:
    """Tango's score interval for a difference of paired proportions (Stat Med 17, 1998, 891-908): the differences δ
    whose score (b - c - nδ) / sqrt(n(2q + δ(1 - δ))) is within ±`z`, q the restricted maximum-likelihood estimate of
    the discordant cell under δ; `n` pairs, `b` and `c` the discordant counts (non-integer at an effective size).
    The score falls as δ grows, so each limit is found by bisection."""
    estimate = (b - c) / n

    def score(delta: float) -> float:
        quadratic, linear = 2.0 * n, -b - c + (2.0 * n - b + c) * delta
        constant = -c * delta * (1.0 - delta)
        q = (-linear + math.sqrt(max(0.0, linear * linear - 4.0 * quadratic * constant))) / (2.0 * quadratic)
        variance = n * (2.0 * q + delta * (1.0 - delta))
        if variance <= 0.0:
            return 0.0 if b - c == n * delta else math.copysign(math.inf, b - c - n * delta)
        return (b - c - n * delta) / math.sqrt(variance)

    def limit(low: float, high: float, level: float) -> float:
        for _ in range(60):  # 2^-60 of the range: far below any printed digit
            middle = 0.5 * (low + high)
            if score(middle) > level:
                low = middle
            else:
                high = middle
        return 0.5 * (low + high)

    edge = 1.0 - 1e-12
    lower = -1.0 if score(-edge) < z else limit(-edge, estimate, z)
    upper = 1.0 if score(edge) > -z else limit(estimate, edge, -z)
    return min(lower, estimate), max(upper, estimate)

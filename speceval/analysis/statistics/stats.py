"""Statistics for the report: confidence intervals, agreement, pairwise strength. Pure functions, numpy only."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: float, z: float = Z95, continuity: bool = True) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion, with continuity correction by default; None for n = 0.

    Wilson rather than the normal approximation: it stays inside [0, 1] and behaves at rates near 0 or 1 and
    small n, which is where per-statement compliance often is. The continuity correction (Newcombe 1998, method 4)
    keeps the exact coverage at or above 95% for n >= 10 and every p in [0.01, 0.99] (plain Wilson dips to 83% just
    inside its bounds at n = 10); it costs width, about 1/n on each side. The ends are exact: a rate of 0 has lower
    bound 0.0 and a rate of 1 upper bound 1.0, and the interval always contains its estimate. `successes` may be
    fractional (an effective count, see `speceval.analysis.statistics.clustered`).
    """
    if n <= 0:
        return None
    p = min(1.0, max(0.0, successes / n))
    zz = z * z
    if continuity:
        spread_low = math.sqrt(max(0.0, zz - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)))
        spread_high = math.sqrt(max(0.0, zz + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)))
        low = (2 * n * p + zz - 1 - z * spread_low) / (2 * (n + zz))
        high = (2 * n * p + zz + 1 + z * spread_high) / (2 * (n + zz))
    else:
        denominator = 1 + zz / n
        centre = (p + zz / (2 * n)) / denominator
        half = z * math.sqrt(p * (1 - p) / n + zz / (4 * n * n)) / denominator
        low, high = centre - half, centre + half
    # Rounding must never move a bound past the estimate or off [0, 1] (a plot's error bar would turn negative).
    low = 0.0 if p == 0.0 else min(p, max(0.0, low))
    high = 1.0 if p == 1.0 else max(p, min(1.0, high))
    return low, high


def beta_quantile(a: float, b: float, q: float) -> float:
    """The `q` quantile of Beta(a, b) (a, b > 0) from the regularized incomplete beta function (numpy has none and
    the report takes no SciPy): Newton's steps on it, kept inside a bracket that halves when a step leaves it."""
    if not (a > 0 and b > 0 and 0 < q < 1):
        raise ValueError(f"a Beta quantile needs a, b > 0 and 0 < q < 1, got a={a}, b={b}, q={q}")
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    low, high, x = 0.0, 1.0, a / (a + b)
    for _ in range(200):
        miss = regularized_beta(a, b, x) - q
        if abs(miss) < 1e-14 or high - low < 1e-15:
            break
        if miss < 0:
            low = x
        else:
            high = x
        density = math.exp(log_norm + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x))
        step = x - miss / density if density > 0 else -1.0
        x = step if low < step < high else (low + high) / 2
    return x


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the Beta(a, b) distribution function at x: the continued fraction of Numerical Recipes (6.4) by
    Lentz's method, on the side of x where it converges fast."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    found = d
    # The fraction converges in O(sqrt(max(a, b))) terms: 10,000 cover a, b up to ~10^7 (ratings counted at most once).
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            found *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return found


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float | None:
    """Cohen's kappa of two raters over the same items; None if undefined (no items, or chance agreement 1)."""
    if len(a) != len(b) or not a:
        return None
    labels = sorted({*a, *b}, key=str)
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    expected = sum((list(a).count(label) / n) * (list(b).count(label) / n) for label in labels)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa from an items × categories matrix of rating counts (same number of raters per item)."""
    if counts.size == 0:
        return None
    raters = counts.sum(axis=1)
    if np.any(raters != raters[0]) or raters[0] < 2:
        return None
    n, total = raters[0], counts.sum()
    p_j = counts.sum(axis=0) / total
    p_i = (np.square(counts).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = p_i.mean(), np.square(p_j).sum()
    if p_e >= 1.0:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def bradley_terry(wins: np.ndarray, iterations: int = 1000, tolerance: float = 1e-10) -> np.ndarray:
    """Bradley–Terry strengths (normalised to sum to 1) from a wins matrix, wins[i, j] = times i beat j.

    Zermelo's / Hunter's MM iteration: p_i ← W_i / Σ_j n_ij / (p_i + p_j). Ties should be given as half a win to
    each side. A model that never wins gets strength 0; the iteration needs every model to have played.
    """
    found: np.ndarray = bradley_terry_of_draws(wins[None], iterations, tolerance)[0]
    return found


def bradley_terry_of_draws(wins: np.ndarray, iterations: int = 1000, tolerance: float = 1e-10) -> np.ndarray:
    """`bradley_terry` of each of a stack of wins matrices (draws x k x k), iterated all at once: a draw leaves the
    iteration when it converges, as it would alone.

    Each draw's numbers are the same floats as its own iteration's: the denominators are summed over opponents in
    order, one opponent at a time (as the loop over j did, a pair that never played adding nothing), and every other
    step is elementwise or a row's own sum. A bootstrap's 1,000 draws iterated one at a time in Python were 10.9 s
    of the 28 s the coverage matrix's Bradley–Terry family took under cProfile."""
    k = wins.shape[1]
    games = wins + np.swapaxes(wins, 1, 2)
    total_wins = wins.sum(axis=2)
    played = (games > 0) & ~np.eye(k, dtype=bool)
    strengths = np.full((wins.shape[0], k), 1.0 / k)
    found = np.empty_like(strengths)
    live = np.arange(wins.shape[0])  # the draws still iterating; the arrays below hold only their rows
    for _ in range(iterations):
        if not live.size:
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(played, games / (strengths[:, :, None] + strengths[:, None, :]), 0.0)
        denominator = terms[:, :, 0].copy()
        for j in range(1, k):
            denominator += terms[:, :, j]
        positive = denominator > 0
        updated = np.where(positive, total_wins / np.where(positive, denominator, 1), 0.0)
        total = updated.sum(axis=1)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            updated = np.where(total > 0, updated / total, strengths)
        converged = np.max(np.abs(updated - strengths), axis=1) < tolerance
        found[live[converged]] = updated[converged]
        going = ~converged
        live, strengths = live[going], updated[going]
        games, total_wins, played = games[going], total_wins[going], played[going]
    found[live] = strengths
    return found


def krippendorff_alpha_ordinal(units: Sequence[Sequence[int]]) -> float | None:
    """Krippendorff's alpha with the ordinal metric; each unit lists the ratings it got (missing ones left out).

    Units with fewer than two ratings carry no pairable information and are ignored. None when undefined (fewer
    than two pairable values, or no disagreement is possible).
    """
    pairable = [list(u) for u in units if len(u) >= 2]
    values = sorted({v for u in pairable for v in u})
    if len(values) < 2:
        return None
    index = {v: i for i, v in enumerate(values)}
    k = len(values)
    coincidence = np.zeros((k, k))
    for unit in pairable:
        m = len(unit)
        for a, b in itertools.permutations(range(m), 2):
            coincidence[index[unit[a]], index[unit[b]]] += 1 / (m - 1)
    totals = coincidence.sum(axis=1)
    n = totals.sum()
    delta = np.zeros((k, k))
    for c in range(k):
        for d in range(c, k):
            distance = (totals[c : d + 1].sum() - (totals[c] + totals[d]) / 2) ** 2
            delta[c, d] = delta[d, c] = distance
    observed = float((coincidence * delta).sum())
    expected = float((np.outer(totals, totals) * delta).sum() / (n - 1))
    if expected == 0:
        return None
    return 1 - observed / expected


SPEARMAN_MIN = 8
"""Fewest pairs a Spearman interval is given for: below it the Fisher-z interval covered 0.74 at rho 0.9 and n 5."""


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of `values`, ties given their average rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    _, inverse = np.unique(values, return_inverse=True)
    inverse = inverse.reshape(-1)
    found: np.ndarray = np.bincount(inverse, weights=ranks)[inverse] / np.bincount(inverse)[inverse]
    return found


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None when either side is constant or n < 2."""
    if len(x) < 2:
        return None
    rx, ry = average_ranks(np.asarray(x, dtype=float)), average_ranks(np.asarray(y, dtype=float))
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def spearman_interval(rho: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """95% interval of Spearman's rho from `n` pairs: Fisher's z with Bonett & Wright's variance (1 + rho²/2)/(n - 3)
    (Psychometrika 65, 2000); None below `SPEARMAN_MIN` pairs, where it does not cover."""
    if n < SPEARMAN_MIN:
        return None
    clipped = min(max(rho, -0.999999), 0.999999)
    half = z * math.sqrt((1 + clipped * clipped / 2) / (n - 3))
    centre = math.atanh(clipped)
    return min(rho, math.tanh(centre - half)), max(rho, math.tanh(centre + half))


RELIABILITY_MIN = 0.2
"""Below this share of the shares' spread being real (the rest the noise of their own few inputs), a correction for
that noise would divide by almost nothing: the association's interval is then all of [-1, 1]."""


def share_noise(
    x: np.ndarray, y: np.ndarray, inputs: np.ndarray, joint: np.ndarray | None = None
) -> tuple[float, float]:
    """(k, c) for `spearman_disattenuated`: k = sqrt(rel_x rel_y), each share's reliability rel = 1 - (its mean
    binomial sampling variance p(1-p)/(n-1)) / (its variance across statements), and c = the shares' mean sampling
    covariance (joint - xy)/(n-1) over sd_x sd_y (`joint`: the share of a statement's inputs counted in both, 0 when
    the two exclude each other, as a split and an all-fail input do; None: the two shares' noises independent)."""
    n = np.maximum(np.asarray(inputs, dtype=float) - 1, 1.0)
    both = x * y if joint is None else np.asarray(joint, dtype=float)
    vx, vy = float(np.var(x, ddof=1)), float(np.var(y, ddof=1))
    if vx <= 0 or vy <= 0:
        return 0.0, 0.0
    rel_x = 1 - float(np.mean(x * (1 - x) / n)) / vx
    rel_y = 1 - float(np.mean(y * (1 - y) / n)) / vy
    k = math.sqrt(max(rel_x, 0.0) * max(rel_y, 0.0))
    return k, float(np.mean((both - x * y) / n)) / math.sqrt(vx * vy)


def spearman_disattenuated(
    x: np.ndarray, y: np.ndarray, inputs: np.ndarray, joint: np.ndarray | None = None
) -> tuple[float, float, float, float] | None:
    """(rho of the true shares, its 95% low and high, the observed rho) across statements whose shares `x`, `y` each
    come from `inputs` inputs (None: fewer than `SPEARMAN_MIN` statements or a constant side).

    The observed rho is pulled toward 0 by the shares' own binomial noise (at 20 inputs a statement: coverage of the
    plain interval 0.49-0.93 for the true shares' rho). Spearman's own correction for attenuation (Spearman 1904)
    undoes it: rho_true = (rho_obs - c) / k (`share_noise`: k the root of the two reliabilities, c the sampling
    covariance of the two shares, negative when they exclude each other), applied to the estimate and to the
    Bonett–Wright limits of the observed rho (the map is increasing, so the limits stay limits), clipped to
    [-1, 1]. Reliability under `RELIABILITY_MIN`: the noise is most of the spread, the interval [-1, 1]."""
    rho = spearman(x, y)
    interval = None if rho is None else spearman_interval(rho, len(x))
    if rho is None or interval is None:
        return None
    k, c = share_noise(np.asarray(x, dtype=float), np.asarray(y, dtype=float), inputs, joint)
    if k < RELIABILITY_MIN:
        return max(-1.0, min(1.0, rho)), -1.0, 1.0, rho

    def corrected(value: float) -> float:
        return max(-1.0, min(1.0, (value - c) / k))

    return corrected(rho), corrected(interval[0]), corrected(interval[1]), rho

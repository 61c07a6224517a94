"""The Rogan–Gladen bias-corrected rate (Am J Epidemiol 1978) with a Bayesian interval over (rate, sensitivity,
specificity). Pure functions over arrays, numpy only.

With the judge's sensitivity q1 = P(f = 1 | y = 1) and specificity q0 = P(f = 0 | y = 0) estimated on the labels
(weighted N_h/n_h, `speceval.analysis.statistics.ppi.label_weights`), the true rate is (p + q0 - 1)/(q0 + q1 - 1),
clipped to [0, 1]. Each of q0, q1 is taken one agreement and one disagreement further (Agresti–Coull's adjustment,
their posterior means under a uniform prior, one label's average weight each), so a sheet with no label of one
class (20 labels at a 0.97 rate: 54% of sheets) still has a rate. Undefined only when the adjusted q0 + q1 <= 1 (a
judge no better than chance).

The interval is the equal-tailed 95% posterior interval of the rate theta in the full misclassification model
(Tenenbein, JASA 1970: a double sample, labels on a part): a labelled answer contributes P(y) P(f | y), that is theta or
1 - theta times q1, 1 - q1, q0 or 1 - q0; an unlabelled one P(f) = p(theta, q) = theta q1 + (1 - theta) (1 - q0). The
labelled part factorises, so theta, q1 and q0 have independent Beta posteriors from it (Jeffreys' prior on theta,
Beta(n, 1) where every label is of one kind (Clopper-Pearson's limit there), uniform on q0 and q1) and the unlabelled
verdicts multiply theta's by E_q[L(p(theta, q))], the expectation over draws of (q0, q1). RG alone reads the labels only
through q0 and q1 and so throws away what they say of theta directly: the hull of a bootstrap and a delta interval it
used before was 1.7-2.0x the labels-only interval; this one is 0.65-1.0x it (benchmarks/RESULTS.md).

Weights and clusters enter through effective sizes: each Beta is at its labels' Kish size; theta's also at most
the labels' cluster-robust effective size and their count of inputs (answers of one input share its truth), on Korn
and Graubard's (z/t(df))² where that binds. Only verdicts of inputs with no label enter the unlabelled part (the
others share a truth with a labelled answer, which would count that input twice), each weighted by its statement's
share of all verdicts over its count there, at their cluster-robust effective size.
"""

from __future__ import annotations

import numpy as np

from speceval.analysis.statistics.clustered import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    dense_codes,
    stratified_variance,
    t975,
)
from speceval.analysis.statistics.ppi import Corrected, clip_to_unit, label_weights, stratum_per_cluster
from speceval.analysis.statistics.stats import Z95

UNDEFINED_NO_LABELS = "no labels"
UNDEFINED_CHANCE = "sensitivity + specificity <= 1 on the labels: the judge is no better than chance, no correction"

GRID = (np.arange(1000) + 0.5) / 1000
"""The rate's posterior is evaluated at these points (a step of 0.001; the limits are interpolated between them)."""


def rogan_gladen(
    f: np.ndarray,
    y: np.ndarray,
    labelled: np.ndarray,
    clusters: np.ndarray,
    strata: np.ndarray,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> Corrected:
    """The bias-corrected judge rate (see the module's docstring) with its posterior interval (`draws` draws of
    sensitivity and specificity, seeded)."""
    if not labelled.any():
        return Corrected(rate=None, ci_low=None, ci_high=None, note=UNDEFINED_NO_LABELS)
    w = label_weights(labelled, strata)
    cells = [float((w * ((y == a) & (f == b) & labelled)).sum()) for a, b in ((1, 1), (1, 0), (0, 0), (0, 1))]
    prior = float(w.sum()) / int(labelled.sum())  # one label's worth, in the weighted counts
    point, note = _rogan_gladen(float(f.mean()), cells, prior)
    if point is None:
        return Corrected(rate=None, ci_low=None, ci_high=None, note=note)
    low, high = _posterior_interval(f, y, labelled, w, clusters, strata, draws, seed)
    return Corrected(rate=point, ci_low=min(point, low), ci_high=max(point, high))


def _rogan_gladen(p: float, cells: list[float], prior: float) -> tuple[float | None, str | None]:
    """The rate at sensitivity and specificity each one agreement and one disagreement further (`prior`: one
    label's weight), their posterior means under a uniform prior: defined where a class has no label. `cells`:
    the weighted labels that are (y, f) = (1, 1), (1, 0), (0, 0), (0, 1)."""
    true_positive, false_negative, true_negative, false_positive = cells
    sensitivity = (true_positive + prior) / (true_positive + false_negative + 2 * prior)
    specificity = (true_negative + prior) / (true_negative + false_positive + 2 * prior)
    if sensitivity + specificity <= 1.0:
        return None, UNDEFINED_CHANCE
    return clip_to_unit((p + specificity - 1.0) / (sensitivity + specificity - 1.0)), None


def _posterior_interval(
    f: np.ndarray,
    y: np.ndarray,
    labelled: np.ndarray,
    w: np.ndarray,
    clusters: np.ndarray,
    strata: np.ndarray,
    draws: int,
    seed: int,
) -> tuple[float, float]:
    """2.5% and 97.5% points of theta's posterior (see the module's docstring)."""
    cluster_strata = stratum_per_cluster(clusters, strata)
    rate, size = _weighted_share(y, w, labelled, clusters, cluster_strata)
    # Jeffreys' prior, except where the labels show only one kind: there its equal-tailed limit sits inside
    # Clopper-Pearson's ((n + 1/2, 1/2): 0.975 at 100 labels, all compliant, which a rate of 0.97 shows 4.8% of the
    # time, and those draws made the whole miss budget: 0.935 coverage at 20 statements of 5 labels), and the labelled
    # part takes Beta(n, 1), whose 2.5% point is Clopper-Pearson's (0.025)^(1/n) (0.964).
    compliant, failing = rate * size - 0.5, (1 - rate) * size - 0.5
    if rate in (0.0, 1.0):
        compliant, failing = (size - 1.0, 0.0) if rate == 1.0 else (0.0, size - 1.0)
    log_posterior = compliant * np.log(GRID) + failing * np.log1p(-GRID)
    rng = np.random.default_rng(seed)
    q = []
    for truth in (0, 1):
        of_class = np.where(labelled & (y == truth), w, 0.0)
        right, kish = _share_and_kish(f == truth, of_class)
        q.append(rng.beta(right * kish + 1.0, (1 - right) * kish + 1.0, max(1, draws)))
    specificity, sensitivity = q
    touched = np.bincount(clusters, weights=labelled.astype(float))[clusters] > 0
    if (~touched).sum() >= 2:
        # The unlabelled verdicts of unlabelled inputs, each statement at its share of all verdicts.
        verdicts, free = np.bincount(strata), np.bincount(strata, weights=(~touched).astype(float))
        share = np.where(free > 0, verdicts / np.where(free > 0, free, 1), 0.0)
        p, m = _weighted_share(f, np.where(~touched, share[strata], 0.0), ~touched, clusters, cluster_strata)
        log_posterior += _unlabelled(p, m, sensitivity, specificity)
    density = np.exp(log_posterior - log_posterior.max())
    cumulative = np.cumsum(density) / density.sum()
    return float(np.interp(0.025, cumulative, GRID)), float(np.interp(0.975, cumulative, GRID))


GRID_BLOCK = 50
"""Grid points whose likelihood over every draw is computed at once: a block of 50 x 1,000 draws is 400 KB, held
and worked on in place; the whole 1,000 x 1,000 at once made a new 8 MB array at each of its seven steps (the page
faults were a fifth of the report's PPI time, and each of the 16 PPI coverage scenarios and tests calls this
hundreds of times). Every grid point's row is the same arithmetic either way, so the interval is the same."""


def _unlabelled(p: float, m: float, sensitivity: np.ndarray, specificity: np.ndarray) -> np.ndarray:
    """log E_q[L(p(theta, q))] at each grid point: the unlabelled verdicts' likelihood (share `p` of `m` effective
    verdicts) averaged over the draws of (specificity, sensitivity), computed a block of the grid at a time."""
    found = np.empty(GRID.size)
    judged = np.empty((GRID_BLOCK, sensitivity.size))
    other = np.empty_like(judged)
    for start in range(0, GRID.size, GRID_BLOCK):
        theta = GRID[start : start + GRID_BLOCK, None]
        rows = len(theta)
        j, o = judged[:rows], other[:rows]
        # theta q1 + (1 - theta)(1 - q0), written as the same two products and sum as before the blocks
        np.multiply(theta, sensitivity[None, :], out=j)
        np.multiply(1 - theta, 1 - specificity[None, :], out=o)
        j += o
        np.clip(j, 1e-12, 1 - 1e-12, out=j)
        np.negative(j, out=o)
        np.log1p(o, out=o)
        o *= (1 - p) * m
        np.log(j, out=j)
        j *= p * m
        j += o  # the log-likelihood of each draw
        top = j.max(axis=1)
        j -= top[:, None]
        np.exp(j, out=j)
        found[start : start + rows] = top + np.log(j.mean(axis=1))
    return found


def _share_and_kish(hit: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The weighted share of `hit` and the weights' Kish size (Σw)²/Σw² (1/2 at size 0: no weight)."""
    total = float(weights.sum())
    if total <= 0:
        return 0.5, 0.0
    return float((weights * hit).sum()) / total, total**2 / float((weights**2).sum())


def _weighted_share(
    values: np.ndarray, weights: np.ndarray, used: np.ndarray, clusters: np.ndarray, cluster_strata: np.ndarray
) -> tuple[float, float]:
    """The weighted share of `values` where `used`, at its effective size: the Kish size, at most the
    cluster-robust one (stratified) and the count of clusters used, on Korn-Graubard's (z/t(df))² where a
    clustered bound binds."""
    share, kish = _share_and_kish(values > 0.5, weights)
    in_use = np.bincount(clusters, weights=used.astype(float)) > 0
    count = int(in_use.sum())
    size = min(kish, float(count))
    influence = np.bincount(clusters, weights=weights * ((values > 0.5) - share) / float(weights.sum()))
    variance, df = stratified_variance(influence[in_use], dense_codes(cluster_strata[in_use]))
    if variance is not None and variance > 0 and 0 < share < 1:
        size = min(size, share * (1 - share) / variance)
    if size < kish and df >= 1:
        size *= (Z95 / t975(df)) ** 2
    return share, size

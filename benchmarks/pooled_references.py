"""Reference intervals for a rate pooled over runs (issue 47): the coverage matrix prints the narrowest of these that
itself covers at least 0.93 in a row, so the width ratio is against a valid interval, not the naive one where that
misses (30 inputs x 5 runs at Beta(1.9, 0.1): Wilson over every verdict covers 0.87).

Each takes the verdicts (inputs x runs) and returns its 95% interval. `deff` below is the design effect
n · SE² / p(1-p) from the cluster-robust SE by input, at least 1 (Kish); "at n/deff" means the interval of a proportion
at that effective count. No scipy here: the beta quantiles are speceval's own (`stats.beta_quantile`).
"""

from __future__ import annotations

import math

import numpy as np

from speceval.analysis.statistics.clustered import clustered_mean_codes, t975
from speceval.analysis.statistics.stats import beta_quantile, wilson_interval

Bounds = tuple[float, float]


def _effective(verdicts: np.ndarray) -> tuple[float, float, int]:
    """(rate, effective count n/deff with deff ≥ 1, degrees of freedom G - 1) of verdicts (inputs x runs)."""
    y = verdicts.reshape(-1).astype(float)
    estimate = clustered_mean_codes(y, np.repeat(np.arange(verdicts.shape[0]), verdicts.shape[1]))
    assert estimate is not None and estimate.se is not None
    p, variance = estimate.mean, estimate.se**2
    effective = p * (1 - p) / variance if variance > 0 else float(estimate.clusters)
    return p, min(effective, float(len(y))), estimate.df


def jeffreys(successes: float, n: float) -> Bounds:
    """Jeffreys' equal-tailed interval (Beta(x + 1/2, n - x + 1/2) quantiles; 0 or 1 at the ends)."""
    low = 0.0 if successes <= 0 else beta_quantile(successes + 0.5, n - successes + 0.5, 0.025)
    high = 1.0 if successes >= n else beta_quantile(successes + 0.5, n - successes + 0.5, 0.975)
    return low, high


def clopper_pearson(successes: float, n: float) -> Bounds:
    """Clopper–Pearson's exact interval at a (possibly fractional) count."""
    low = 0.0 if successes <= 0 else beta_quantile(successes, n - successes + 1, 0.025)
    high = 1.0 if successes >= n else beta_quantile(successes + 1, n - successes, 0.975)
    return low, high


def naive_wilson(verdicts: np.ndarray) -> Bounds:
    found = wilson_interval(float(verdicts.sum()), verdicts.size)
    assert found is not None
    return found


def naive_plain_wilson(verdicts: np.ndarray) -> Bounds:
    found = wilson_interval(float(verdicts.sum()), verdicts.size, continuity=False)
    assert found is not None
    return found


def wilson_effective(verdicts: np.ndarray) -> Bounds:
    p, effective, _ = _effective(verdicts)
    found = wilson_interval(p * effective, effective, continuity=False)
    assert found is not None
    return found


def jeffreys_effective(verdicts: np.ndarray) -> Bounds:
    p, effective, _ = _effective(verdicts)
    return jeffreys(p * effective, effective)


def korn_graubard(verdicts: np.ndarray) -> Bounds:
    """Korn & Graubard (1998): Clopper–Pearson at n/deff · (t(n-1) / t(G-1))²."""
    p, effective, df = _effective(verdicts)
    effective *= (t975(verdicts.size - 1) / t975(df)) ** 2
    return clopper_pearson(p * effective, effective)


def input_means_t(verdicts: np.ndarray) -> Bounds:
    """Mean of the inputs' rates ± t(G-1) · their SD / √G, clipped to [0, 1]."""
    means = verdicts.mean(axis=1)
    half = t975(len(means) - 1) * float(means.std(ddof=1)) / math.sqrt(len(means))
    return max(0.0, float(means.mean()) - half), min(1.0, float(means.mean()) + half)


def cluster_bootstrap(verdicts: np.ndarray, rng: np.random.Generator, draws: int = 500) -> Bounds:
    """Percentile interval over `draws` resamples of whole inputs."""
    sums, sizes = verdicts.sum(axis=1), verdicts.shape[1]
    picked = rng.integers(0, len(sums), (draws, len(sums)))
    rates = sums[picked].sum(axis=1) / (sizes * len(sums))
    return float(np.percentile(rates, 2.5)), float(np.percentile(rates, 97.5))


NAIVE = "Wilson over every verdict (naive)"


def pooled_references(verdicts: np.ndarray, rng: np.random.Generator) -> dict[str, Bounds]:
    """Every reference of a pooled rate's row, by the name the matrix prints (`rng`: the bootstrap's own, not the
    scenario's, so the estimator's draws stay those of the rows before the references were added)."""
    return {
        NAIVE: naive_wilson(verdicts),
        "plain Wilson over every verdict (naive)": naive_plain_wilson(verdicts),
        "plain Wilson at n/deff": wilson_effective(verdicts),
        "Jeffreys at n/deff": jeffreys_effective(verdicts),
        "Korn–Graubard": korn_graubard(verdicts),
        "input means' t": input_means_t(verdicts),
        "cluster bootstrap": cluster_bootstrap(verdicts, rng),
    }


def naive_at_identical_runs(inputs: int, runs: int) -> tuple[float, float]:
    """(worst exact coverage, its rate) of plain Wilson over every verdict when every input's runs are identical (at
    temperature 0), over rates 0.5..0.99 (0.01..0.5 mirror them): k of `inputs` inputs compliant, each counted `runs`
    times. A row whose narrowest covering reference is this one measures against an interval not valid over the
    family."""
    worst = (1.0, 0.0)
    for p in np.linspace(0.5, 0.99, 491):
        hit = 0.0
        for k in range(inputs + 1):
            found = wilson_interval(k * runs, inputs * runs, continuity=False)
            assert found is not None
            if found[0] <= p <= found[1]:
                hit += math.comb(inputs, k) * p**k * (1 - p) ** (inputs - k)
        worst = min(worst, (hit, float(p)))
    return worst


def identical_runs_note(inputs: int, runs: int) -> str:
    """The note on a row at a rate near 0 or 1 whose few inputs put its 1.5x target out of reach of any interval valid
    at identical runs (0 failures has probability p^G there, so no such interval starts above 0.025^(1/G))."""
    cover, rate = naive_at_identical_runs(inputs, runs)
    return (
        f"; no interval valid at identical runs starts above 0.025^(1/{inputs}) = {0.025 ** (1 / inputs):.3f} at 0 "
        f"failures, and plain Wilson over every verdict covers {cover:.2f} at {inputs} x {runs} identical runs "
        f"(rate {rate:.2f})"
    )

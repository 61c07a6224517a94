"""The coverage matrix's scenarios for the judge card's design-weighted human accuracy (`human_accuracy_weighted`):
a label sheet draws answers statement by statement (equal or Neyman allocation) from statements of very unequal size,
and the card weighs each statement's share of agreement by its answers N_h/N
(`speceval.analysis.statistics.ppi.design_weighted_share`). Synthetic data throughout.

Each draw plants a population: per statement, inputs of 1-3 answers (candidates) whose correctness shares the input's
own accuracy (Beta around the statement's, so an input's answers are not independent), then draws n_h answers per
statement uniformly without replacement, as the sheet does. The truth is the judge's accuracy over every answer it
judged in that population (the finite population the card describes), so each interval is measured against its own
draw's share: the runner's fixed truth reads it through a shift of the interval by (truth - that share), which keeps
its width.

References (the runner prints the narrowest that covers at least 0.93): the unweighted share of the labelled answers
with the clustered rate interval (today's card: the sample's accuracy, the naive reference that misses where
statements differ), Wilson at the design's Kish effective size (Σw)²/Σw² around the weighted share, and a stratified
cluster bootstrap (inputs resampled within statements, percentile)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.ppi import design_weighted_share
from speceval.analysis.statistics.stats import wilson_interval

Bounds = tuple[float, float] | None
Drawn = tuple[Bounds, dict[str, Bounds]]

BOOTSTRAP = 400
"""Draws of the reference's stratified cluster bootstrap."""
CONCENTRATION = 4.0
"""Beta(κ·a, κ·(1 - a)) for an input's accuracy around its statement's a: a small κ makes an input's answers alike."""


def weighted_accuracy_scenario(
    sizes: tuple[int, ...],
    accuracies: tuple[float, ...],
    answers_per_input: int,
    labels: tuple[int, ...],
    guided: bool = False,
    icc: float | None = None,
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Statements of `sizes` answers (N_h, in inputs of `answers_per_input` answers), the judge right at
    `accuracies` (its mean per statement; 1.0: every answer right), `labels` answers drawn per statement (n_h);
    `guided`: the design recorded each statement's expected error share (a Neyman sheet), passed as the prior's
    covariate as the report passes it; `icc`: a clustered sheet, which draws n_h / `answers_per_input` whole inputs
    and labels every answer of each, their accuracies Beta at that intra-input correlation (1/(κ + 1)) instead of
    `CONCENTRATION`'s. Truth (the runner's): the superpopulation's Σ (N_h/N) a_h; each draw is read against its own
    finite population's share (see the module's docstring)."""
    weights = np.asarray(sizes, dtype=float) / sum(sizes)
    truth = float((weights * np.asarray(accuracies)).sum())
    guess = np.clip(1.0 - np.asarray(accuracies), 0.005, 0.5) if guided else None
    own = np.random.default_rng(11)  # the bootstrap's own stream: the scenario's draws stay as they are
    concentration = CONCENTRATION if icc is None else 1.0 / icc - 1.0

    def draw(rng: np.random.Generator) -> Drawn:
        agree_parts, labelled_parts, cluster_parts, strata_parts = [], [], [], []
        first_input = 0
        for h, (size, accuracy, n_h) in enumerate(zip(sizes, accuracies, labels, strict=True)):
            inputs = -(-size // answers_per_input)
            if accuracy >= 1.0:
                per_input = np.ones(inputs)
            else:
                per_input = rng.beta(concentration * accuracy, concentration * (1 - accuracy), inputs)
            cluster = np.repeat(np.arange(inputs), answers_per_input)[:size]
            agree_parts.append(rng.random(size) < per_input[cluster])
            if icc is None:
                chosen = np.zeros(size, dtype=bool)
                chosen[rng.choice(size, size=min(n_h, size), replace=False)] = True
            else:  # whole inputs, every answer of each (the audit's clustered sheet)
                picked = rng.choice(inputs, size=min(inputs, max(1, n_h // answers_per_input)), replace=False)
                chosen = np.isin(cluster, picked)
            labelled_parts.append(chosen)
            cluster_parts.append(cluster + first_input)
            strata_parts.append(np.full(size, h))
            first_input += inputs
        agree, labelled = np.concatenate(agree_parts), np.concatenate(labelled_parts)
        clusters, strata = np.concatenate(cluster_parts), np.concatenate(strata_parts)
        realised = float(agree.mean())
        shift = truth - realised
        found = design_weighted_share(agree, labelled, clusters, strata, guess)
        ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low + shift, found.ci_high + shift)
        references = _references(agree, labelled, clusters, strata, own)
        return ours, {name: None if b is None else (b[0] + shift, b[1] + shift) for name, b in references.items()}

    return truth, draw


def _references(
    agree: np.ndarray, labelled: np.ndarray, clusters: np.ndarray, strata: np.ndarray, own: np.random.Generator
) -> dict[str, Bounds]:
    sizes = np.bincount(strata).astype(float)
    n_h = np.bincount(strata, weights=labelled.astype(float))
    y, c, s = agree[labelled].astype(float), clusters[labelled], strata[labelled]
    w = (sizes / n_h)[s]
    share = float((w * y).sum() / w.sum())
    kish = float(w.sum()) ** 2 / float((w**2).sum())
    naive = rate_interval(y.tolist(), c.tolist(), dict(zip(c.tolist(), s.tolist(), strict=True)))
    wilson = wilson_interval(share * kish, kish, continuity=False)
    return {
        "unweighted share of the labels, clustered (naive)": None if naive is None else (naive[0], naive[1]),
        "Wilson at the Kish size": wilson,
        "stratified cluster bootstrap": _bootstrap(y, c, s, sizes, own),
    }


def _bootstrap(
    y: np.ndarray, clusters: np.ndarray, strata: np.ndarray, sizes: np.ndarray, own: np.random.Generator
) -> Bounds:
    """Percentile interval of Σ (N_h/N) · the resampled share of statement h, inputs resampled within statements."""
    total = np.zeros(BOOTSTRAP)
    for h in np.unique(strata):
        mine = strata == h
        inputs, codes = np.unique(clusters[mine], return_inverse=True)
        sums = np.bincount(codes, weights=y[mine])
        counts = np.bincount(codes).astype(float)
        picks = own.integers(0, len(inputs), size=(BOOTSTRAP, len(inputs)))
        total += sizes[h] / sizes[np.unique(strata)].sum() * sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(total, [2.5, 97.5])
    return float(low), float(high)

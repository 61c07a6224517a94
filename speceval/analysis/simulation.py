"""Synthetic experiments with planted compliance probabilities, to measure how often the report's 95% intervals
cover the truth (tests/analysis/test_coverage.py, benchmarks/interval_coverage.py).

The planted model: candidate c answers input i of statement s compliantly with probability
logistic(b[c, s] + u_i + v_ci), where u_i ~ N(0, input_sd²) is shared by every candidate (an input that is hard for
one is hard for all: inputs are correlated across candidates) and v_ci ~ N(0, candidate_sd²) is the candidate's own;
every run redraws the verdict from the same probability (runs are correlated through the input). Statements are
fixed (a spec's statements are not sampled), unless `statement_sd` > 0: then b[c, s] = base[c] + w_s is redrawn per
experiment, and the truth is the mean over statements too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from speceval.analysis.clustered import paired_difference, rate_interval
from speceval.analysis.stats import wilson_interval

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(80)


def expected_rate(logit: float, sd: float) -> float:
    """E[logistic(logit + e)] for e ~ N(0, sd²), by Gauss–Hermite quadrature."""
    values = 1 / (1 + np.exp(-(logit + np.sqrt(2.0) * sd * _NODES)))
    return float((_WEIGHTS * values).sum() / np.sqrt(np.pi))


@dataclass(frozen=True)
class Design:
    """The shape of one synthetic experiment and its planted probabilities (logits per candidate and statement)."""

    logits: tuple[tuple[float, ...], ...]  # [candidate][statement]
    inputs_per_statement: int
    runs: int
    input_sd: float = 1.0
    candidate_sd: float = 0.5
    statement_sd: float = 0.0

    def truth(self, candidate: int) -> float:
        """The candidate's expected compliance over inputs (and statements, when they are random)."""
        spread = np.sqrt(self.input_sd**2 + self.candidate_sd**2 + self.statement_sd**2)
        return float(np.mean([expected_rate(b, float(spread)) for b in self.logits[candidate]]))


@dataclass
class Experiment:
    """One draw: verdicts[c, s, i, r] (bool)."""

    verdicts: np.ndarray

    def flat(self, candidate: int) -> tuple[list[bool], list[tuple[int, int]], dict[tuple[int, int], int]]:
        """Values, input cluster of each, and stratum (statement) of each input, for one candidate."""
        _, statements, inputs, runs = self.verdicts.shape
        values = [bool(v) for v in self.verdicts[candidate].reshape(-1)]
        clusters = [(s, i) for s in range(statements) for i in range(inputs) for _ in range(runs)]
        return values, clusters, {(s, i): s for s in range(statements) for i in range(inputs)}


def draw(design: Design, rng: np.random.Generator) -> Experiment:
    """One synthetic experiment."""
    logits = np.asarray(design.logits, dtype=float)
    candidates, statements = logits.shape
    shape = (statements, design.inputs_per_statement)
    if design.statement_sd > 0:
        logits = logits + np.asarray(rng.normal(0, design.statement_sd, statements))[None, :]
    shared = rng.normal(0, design.input_sd, shape)
    own = rng.normal(0, design.candidate_sd, (candidates, *shape))
    p = 1 / (1 + np.exp(-(logits[:, :, None] + shared[None] + own)))
    return Experiment(rng.random((*p.shape, design.runs)) < p[..., None])


Interval = Callable[[Experiment], tuple[float, float] | None]


def pooled(candidate: int = 0) -> Interval:
    """The report's rate over all runs: clustered by input, stratified by statement (Wilson for one run)."""
    def interval(experiment: Experiment) -> tuple[float, float] | None:
        values, clusters, strata = experiment.flat(candidate)
        found = rate_interval(values, clusters, strata)
        return (found[0], found[1]) if found else None
    return interval


def by_statement(candidate: int = 0) -> Interval:
    """The report's rate clustered by statement (for statements drawn at random)."""
    def interval(experiment: Experiment) -> tuple[float, float] | None:
        values, clusters, _ = experiment.flat(candidate)
        found = rate_interval(values, [c[0] for c in clusters], unit="statement")
        return (found[0], found[1]) if found else None
    return interval


def naive(candidate: int = 0) -> Interval:
    """What the report used to do: Wilson over every verdict as if independent (for comparison only)."""
    def interval(experiment: Experiment) -> tuple[float, float] | None:
        values, _, _ = experiment.flat(candidate)
        return wilson_interval(sum(values), len(values))
    return interval


def paired(a: int = 0, b: int = 1) -> Interval:
    """The report's paired difference of two candidates on the same inputs."""
    def interval(experiment: Experiment) -> tuple[float, float] | None:
        va, ca, strata = experiment.flat(a)
        vb, cb, _ = experiment.flat(b)
        side_a = list(zip(ca, map(float, va), strict=True))
        side_b = list(zip(cb, map(float, vb), strict=True))
        found = paired_difference(side_a, side_b, strata)
        if found is None or found.ci_low is None or found.ci_high is None:
            return None
        return found.ci_low, found.ci_high
    return interval


def coverage(design: Design, interval: Interval, truth: float, draws: int, seed: int) -> float:
    """Share of `draws` synthetic experiments whose interval contains `truth`."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        found = interval(draw(design, rng))
        hits += found is not None and found[0] <= truth <= found[1]
    return hits / draws

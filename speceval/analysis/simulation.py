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

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.stats import wilson_interval
from speceval.analysis.tables.categories import MODE as CATEGORIES_MODE
from speceval.analysis.tables.categories import category_differences, category_distribution

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


# Categorical judges: the same design with K categories instead of compliant / not. Variation v answers input i of
# statement s with category k with probability softmax_k(b[v, s, k] + u_ik + w_vik): u shared by the variations (the
# same input under two follow-up scripts), w the variation's own; every run redraws the category. The report's
# shares and their differences (speceval/analysis/tables/categories.py) are computed from rows built from each draw,
# so the
# coverage measured is that of the code path the report runs.

_CATEGORY_TRUTH_DRAWS = 200_000


@dataclass(frozen=True)
class CategoryDesign:
    logits: tuple[tuple[tuple[float, ...], ...], ...]  # [variation][statement][category]
    inputs_per_statement: int
    runs: int
    input_sd: float = 1.0
    variation_sd: float = 0.5

    @property
    def categories(self) -> list[str]:
        return [f"c{k}" for k in range(len(self.logits[0][0]))]

    def truth(self, variation: int, category: int) -> float:
        """The variation's expected share of the category over inputs (mean over the fixed statements), by Monte
        Carlo with a fixed seed (standard error < 0.0012 per statement)."""
        return self.truths(variation)[category]

    @functools.cache  # noqa: B019 - a frozen design and an int; 1.2 M normal draws per call
    def truths(self, variation: int) -> tuple[float, ...]:
        """`truth` of every category of the variation, from one set of draws: each category's share was computed
        from the same seeded draws (the seed restarts for each), so one pass gives every category's floats, at a
        K-th of the CPU (3.6 of the category coverage test's 18 s went to these draws, K = 4)."""
        rng = np.random.default_rng(0)
        shares: list[list[float]] = [[] for _ in self.categories]
        for logits in self.logits[variation]:
            spread = np.sqrt(self.input_sd**2 + self.variation_sd**2)
            z = np.asarray(logits)[None, :] + rng.normal(0, spread, (_CATEGORY_TRUTH_DRAWS, len(logits)))
            p = np.exp(z - z.max(axis=1, keepdims=True))
            total = p.sum(axis=1)
            for category, found in enumerate(shares):
                found.append(float((p[:, category] / total).mean()))
        return tuple(float(np.mean(found)) for found in shares)


@dataclass
class CategoryExperiment:
    """One draw: categories[v, s, i, r] (category index)."""

    categories: np.ndarray

    def rows(self) -> list[ComplianceRow]:
        """The draw as the report reads it: one categorical verdict row per (variation, statement, input, run)."""
        variations, statements, inputs, runs = self.categories.shape
        # Each row a copy of one row with its own cells set: `model_construct` resolved the model's eleven
        # defaults again for every row (6.6 ms of a draw's 288 rows; copies 1.7 ms), and the copies are equal to
        # the rows it made, with the same fields set.
        fixed: dict[str, Any] = {"spec": "sim", "judge": "judge", "model": "candidate", "mode": CATEGORIES_MODE}
        cells = dict.fromkeys(("variation", "run", "statement_id", "input", "category"))  # set on each copy
        template = ComplianceRow.model_construct(**fixed, **cells, output="", outcome="judged", compliant=None)
        return [
            template.model_copy(
                update={
                    "variation": f"v{v}",
                    "run": r + 1,
                    "statement_id": f"s{s}",
                    "input": f"input {s}.{i}",
                    "category": f"c{self.categories[v, s, i, r]}",
                }
            )
            for v in range(variations)
            for s in range(statements)
            for i in range(inputs)
            for r in range(runs)
        ]


def draw_categories(design: CategoryDesign, rng: np.random.Generator) -> CategoryExperiment:
    logits = np.asarray(design.logits, dtype=float)  # [v, s, k]
    variations, statements, k = logits.shape
    shared = rng.normal(0, design.input_sd, (statements, design.inputs_per_statement, k))
    own = rng.normal(0, design.variation_sd, (variations, statements, design.inputs_per_statement, k))
    z = logits[:, :, None, :] + shared[None] + own
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    cumulative = p.cumsum(axis=-1)[..., None, :]  # [v, s, i, 1, k]
    u = rng.random((variations, statements, design.inputs_per_statement, design.runs, 1))
    return CategoryExperiment(np.minimum((u > cumulative).sum(axis=-1), k - 1))


def category_coverage(design: CategoryDesign, draws: int, seed: int) -> dict[str, float]:
    """Share of `draws` synthetic categorical experiments in which the report's interval contains the truth, for
    every category's share of every variation (`share v<v> c<k>`, category_distribution.csv) and for the paired
    difference of every category between the first two variations (`difference v0-v1 c<k>`,
    category_differences.csv). Each draw is read by the report's own functions once."""
    truths = {(v, k): design.truth(v, k) for v in range(len(design.logits)) for k in range(len(design.categories))}
    rng = np.random.default_rng(seed)
    hits: dict[str, int] = {}
    declared = {("sim", "judge"): design.categories}  # as a judge run's run.json gives them to the report
    for _ in range(draws):
        rows = draw_categories(design, rng).rows()
        for share in category_distribution(rows, declared):
            v, k = int(share.variation[1:]), int(share.category[1:])
            _hit(hits, f"share v{v} c{k}", share.ci_low, share.ci_high, truths[(v, k)])
        for found in category_differences(rows, declared):
            a, b, k = int(found.a[1:]), int(found.b[1:]), int(found.category[1:])
            if (a, b) == (0, 1):
                _hit(hits, f"difference v0-v1 c{k}", found.ci_low, found.ci_high, truths[(0, k)] - truths[(1, k)])
    return {name: count / draws for name, count in sorted(hits.items())}


def _hit(hits: dict[str, int], name: str, low: float | None, high: float | None, truth: float) -> None:
    hits[name] = hits.get(name, 0) + (low is not None and high is not None and low <= truth <= high)

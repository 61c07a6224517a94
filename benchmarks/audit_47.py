"""An independent coverage-and-width audit of issue 47's estimators (session 18, branch `audit`).

Issue 47 is judged by a held-out harness we cannot see: "no row under 0.93, no interval wider than 1.5x a covering
reference, the plan's power >= 0.77 at its own minimum detectable difference". The coverage matrix
(`coverage_matrix.py`) grades speceval with scenarios and references chosen alongside the estimators; this script is a
second opinion built apart from it: its own data generators (probit random effects, beta-binomial inputs, Poisson
and Dirichlet draws, position-biased comparisons: none imported from `coverage_scenarios.py`), its own references
from the literature written here from scratch (no speceval statistics imported for them: incomplete beta, t
quantiles, Wilson, Jeffreys, Clopper-Pearson, Agresti-Coull at the design-effect effective size, cluster bootstrap,
t on input means, Newcombe/MOVER, Agresti-Caffo, Fleiss-Cohen-Everitt, Hoeffding, empirical Bernstein), and
speceval's PUBLIC estimators called as the report calls them (`speceval.analysis.tables.*` on typed rows where a
table computes it; the statistics module where the table passes arrays through).

For every scenario: speceval's coverage of the planted truth (with its Monte Carlo SE; a draw without an interval
is counted apart, as `none`), its mean width, each reference's coverage (a reference's missing interval counts as a
miss: a reference must answer to be one) and width, and speceval's width / the narrowest reference covering >= 0.93.
Flags: `LOW` (coverage under 0.93), `WIDE` (ratio over 1.5), `NONE` (no interval on over 10% of draws), `POWER`
(the plan's power under 0.77 at its own minimum detectable difference). Everything is synthetic.

    PYTHONPATH=. python benchmarks/audit_47.py --draws 1000 --seed 47 [--family NAME] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
import zlib
from collections.abc import Callable
from statistics import NormalDist
from typing import cast

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.card_verdicts import CardItem, CardVerdicts
from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.rows import ComplianceRow, RankingRow
from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.clustered import mean_interval, rate_interval
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.ppi import design_weighted_share
from speceval.analysis.statistics.rating import rating_interval
from speceval.analysis.statistics.spread import spread_interval
from speceval.analysis.tables.candidate_split import StatementShares, associations
from speceval.analysis.tables.categories import category_differences, category_distribution
from speceval.analysis.tables.elicitation import elicitation
from speceval.analysis.tables.flip_survival import flip_survival
from speceval.analysis.tables.flips import flips
from speceval.analysis.tables.human_labels import item_id
from speceval.analysis.tables.judge_card import judge_card, self_preference
from speceval.analysis.tables.judge_quality import leniency
from speceval.analysis.tables.ppi_table import ppi_rates
from speceval.analysis.tables.rankings import judge_position_consistency, strengths, win_rates
from speceval.analysis.tables.rates import judge_agreement
from speceval.analysis.tables.turns import turn_rates
from speceval.experiments.precision import minimum_detectable_difference

Bounds = tuple[float, float] | None
Drawn = tuple[Bounds, dict[str, Bounds]]
NORMAL = NormalDist()
Z = NORMAL.inv_cdf(0.975)
BOOT = 400
"""Bootstrap resamples of the references' bootstraps (percentile limits at 2.5/97.5%: ~0.01 of Monte Carlo noise
in a limit's tail probability, small beside the draws' own)."""
LOW, WIDE, NONE_SHARE, POWER_FLOOR = 0.93, 1.5, 0.10, 0.77


# -- references, written fresh ----------------------------------------------------------------------------------------


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (Lentz; Numerical Recipes 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-12:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


@functools.lru_cache(maxsize=200_000)
def beta_ppf(a: float, b: float, q: float) -> float:
    """The q quantile of Beta(a, b) by bisection (60 halvings: 1e-18)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if incomplete_beta(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@functools.lru_cache(maxsize=4096)
def t_ppf(df: float) -> float:
    """The 0.975 quantile of Student's t: P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2) solved by bisection."""
    lo, hi = 0.0, 200.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if incomplete_beta(df / 2, 0.5, df / (df + mid * mid)) > 0.05:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def wilson(x: float, n: float, z: float = Z) -> Bounds:
    if n <= 0:
        return None
    p, z2 = x / n, z * z
    centre, half = (p + z2 / (2 * n)) / (1 + z2 / n), z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def jeffreys(x: float, n: float) -> Bounds:
    if n <= 0:
        return None
    x, n = round(x, 6), round(n, 6)
    low = 0.0 if x <= 0 else beta_ppf(x + 0.5, n - x + 0.5, 0.025)
    high = 1.0 if x >= n else beta_ppf(x + 0.5, n - x + 0.5, 0.975)
    return low, high


def clopper_pearson(x: float, n: float) -> Bounds:
    if n <= 0:
        return None
    x, n = round(x, 6), round(n, 6)
    low = 0.0 if x <= 0 else beta_ppf(x, n - x + 1, 0.025)
    high = 1.0 if x >= n else beta_ppf(x + 1, n - x, 0.975)
    return low, high


def agresti_coull(x: float, n: float) -> Bounds:
    if n <= 0:
        return None
    nt = n + Z * Z
    pt = (x + Z * Z / 2) / nt
    half = Z * math.sqrt(pt * (1 - pt) / nt)
    return max(0.0, pt - half), min(1.0, pt + half)


RATE_REFS: dict[str, Callable[[float, float], Bounds]] = {
    "wilson": wilson,
    "jeffreys": jeffreys,
    "clopper-pearson": clopper_pearson,
    "agresti-coull": agresti_coull,
}


def cluster_means(y: np.ndarray) -> np.ndarray:
    """Inputs x runs -> each input's mean (every input has the same number of runs here)."""
    means: np.ndarray = y.reshape(y.shape[0], -1).mean(axis=1)
    return means


def effective_size(y: np.ndarray, cap: float | None = None) -> tuple[float, float]:
    """(rate, effective size): n / design effect with the cluster-robust (CR1) variance of the rate, inputs as
    clusters; the size is between the inputs G and the verdicts n (or `cap`: a panel's share is worth up to its
    judges' verdicts), and G at a rate of 0 or 1 (nothing measures the
    design effect there, so the conservative count of independent inputs)."""
    g, n = y.shape[0], y.size
    p = float(y.mean())
    if p <= 0 or p >= 1:
        return p, float(g)
    residual = (y.reshape(g, -1) - p).sum(axis=1)
    variance = g / (g - 1) * float((residual**2).sum()) / n**2
    size = p * (1 - p) / variance if variance > 0 else float(n)
    return p, min(float(n) if cap is None else cap, max(float(g), size))


def t_on_means(means: np.ndarray, lo: float = -math.inf, hi: float = math.inf) -> Bounds:
    g = len(means)
    if g < 2:
        return None
    m, s = float(means.mean()), float(means.std(ddof=1))
    half = t_ppf(g - 1) * s / math.sqrt(g)
    return max(lo, m - half), min(hi, m + half)


def boot_counts(rng: np.random.Generator, g: int) -> np.ndarray:
    counts: np.ndarray = rng.multinomial(g, np.full(g, 1.0 / g), size=BOOT).astype(float)
    return counts


def percentile(values: np.ndarray) -> Bounds:
    values = values[np.isfinite(values)]
    if len(values) < BOOT // 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def rate_references(y: np.ndarray, rng: np.random.Generator, cap: float | None = None) -> dict[str, Bounds]:
    """The rate references: each binomial interval at the design-effect effective size, the cluster bootstrap's
    percentile interval and t on the inputs' means."""
    p, size = effective_size(y, cap)
    found = {f"{name}@neff": ref(p * size, size) for name, ref in RATE_REFS.items()}
    means = cluster_means(y)
    found["cluster-bootstrap"] = percentile(boot_counts(rng, len(means)) @ means / len(means))
    found["t-input-means"] = t_on_means(means, 0.0, 1.0)
    return found


def mover(d: float, pa: float, la: Bounds, pb: float, lb: Bounds, r: float) -> Bounds:
    """Zou & Donner's MOVER for pa - pb from each side's limits with correlation r (Newcombe's method 10 form)."""
    if la is None or lb is None:
        return None
    low = d - math.sqrt(max(0.0, (pa - la[0]) ** 2 - 2 * r * (pa - la[0]) * (lb[1] - pb) + (lb[1] - pb) ** 2))
    high = d + math.sqrt(max(0.0, (la[1] - pa) ** 2 - 2 * r * (la[1] - pa) * (pb - lb[0]) + (pb - lb[0]) ** 2))
    return max(-1.0, low), min(1.0, high)


def difference_references(
    ya: np.ndarray, yb: np.ndarray, rng: np.random.Generator, scale: float = 1.0, binary: bool = True
) -> dict[str, Bounds]:
    """Paired references for mean(ya) - mean(yb) on the same inputs (inputs x runs each; values in [0, 1]);
    `binary`: both sides are 0/1 verdicts by design (Tango's interval then applies at one run; not to the mean of
    several judges, which is 0/1 only on some draws)."""
    ma, mb = cluster_means(ya), cluster_means(yb)
    g, d = len(ma), float(ma.mean() - mb.mean())
    r = 0.0 if ma.std() == 0 or mb.std() == 0 else float(np.corrcoef(ma, mb)[0, 1])
    (pa, na), (pb, nb) = effective_size(ya), effective_size(yb)
    found: dict[str, Bounds] = {}
    for name in ("wilson", "jeffreys"):
        ref = RATE_REFS[name]
        found[f"mover-{name}@neff"] = mover(d, pa, ref(pa * na, na), pb, ref(pb * nb, nb), r)
    diffs = ma - mb
    found["t-input-diffs"] = t_on_means(diffs, -1.0, 1.0)
    found["paired-cluster-bootstrap"] = percentile(boot_counts(rng, g) @ diffs / g)
    # Agresti-Caffo's add-one-success-and-failure on each side (paired form: Agresti & Min 2005's 1/2 per cell is its
    # one-run case), here on the inputs' means with a cluster-robust SE of the difference.
    a_adj, b_adj = (ma.sum() + 1) / (g + 2), (mb.sum() + 1) / (g + 2)
    se = math.sqrt(
        max(float(diffs.var(ddof=1)), 1e-12) / g + (a_adj * (1 - a_adj) + b_adj * (1 - b_adj)) / (g + 2) ** 2
    )
    found["agresti-caffo-clustered"] = (max(-1.0, a_adj - b_adj - Z * se), min(1.0, a_adj - b_adj + Z * se))
    if ya.size == g and binary:  # one run of 0/1 sides (not the other judges' mean): Tango's paired interval
        found["tango"] = tango(ya.reshape(-1) > 0.5, yb.reshape(-1) > 0.5)
    return {k: None if v is None else (scale * v[0], scale * v[1]) for k, v in found.items()}


def tango(x: np.ndarray, y: np.ndarray) -> Bounds:
    """Tango's (1998) score interval for a difference of paired proportions: the set of delta whose score statistic
    (b - c - n delta) / sqrt(n (2 q + delta (1 - delta))), q the restricted MLE of the discordant cell, is within z."""
    n, b, c = len(x), float((x & ~y).sum()), float((~x & y).sum())

    def score(delta: float) -> float:
        aa, bb = 2 * n, -b - c + (2 * n - b + c) * delta
        cc = -c * delta * (1 - delta)
        q = (-bb + math.sqrt(max(0.0, bb * bb - 4 * aa * cc))) / (2 * aa)
        variance = n * (2 * q + delta * (1 - delta))
        return (b - c - n * delta) / math.sqrt(variance) if variance > 0 else (0.0 if b - c == n * delta else math.inf)

    d = (b - c) / n

    def root(lo: float, hi: float, sign: float) -> float:
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            # The score falls as delta grows: below the lower limit it is over z, below the upper over -z.
            if score(mid) > sign * Z:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    low = -1.0 if score(-1 + 1e-9) < Z else root(-1 + 1e-9, d, 1.0)
    high = 1.0 if score(1 - 1e-9) > -Z else root(d, 1 - 1e-9, -1.0)
    return low, high


# -- generators ---------------------------------------------------------------------------------------------------


def beta_binomial_inputs(rng: np.random.Generator, inputs: int, runs: int, p: float, icc: float) -> np.ndarray:
    """inputs x runs verdicts, each input's rate Beta with mean p and intra-input correlation icc (icc 1: every run
    of an input gives one verdict; icc 0: independent verdicts)."""
    if p <= 0 or p >= 1 or icc >= 1:
        once = rng.random(inputs) < p
        return np.repeat(once[:, None], runs, axis=1).astype(float)
    if icc <= 0:
        return (rng.random((inputs, runs)) < p).astype(float)
    scale = 1 / icc - 1
    rates = rng.beta(p * scale, (1 - p) * scale, inputs)
    return (rng.random((inputs, runs)) < rates[:, None]).astype(float)


def probit_pair(
    rng: np.random.Generator, inputs: int, runs: int, pa: float, pb: float, sigma: float, shared: float = 0.8
) -> tuple[np.ndarray, np.ndarray]:
    """Two sides' verdicts on the same inputs from a probit random-effects model: verdict = [a_k + sigma u_ik + e > 0],
    u_ik = sqrt(shared) v_i + sqrt(1 - shared) w_ik (an input hard for one side is mostly hard for the other); a_k
    set so each side's marginal rate is exactly p_k (a rate of 0 or 1 is a constant side)."""
    v = rng.normal(size=inputs)
    sides = []
    for p in (pa, pb):
        if p <= 0 or p >= 1:
            sides.append(np.full((inputs, runs), float(p >= 1)))
            continue
        a = NORMAL.inv_cdf(p) * math.sqrt(1 + sigma * sigma)
        u = math.sqrt(shared) * v + math.sqrt(1 - shared) * rng.normal(size=inputs)
        sides.append((a + sigma * u[:, None] + rng.normal(size=(inputs, runs)) > 0).astype(float))
    return sides[0], sides[1]


def compliance_row(judge: str, model: str, statement: str, index: int, run: int, compliant: bool) -> ComplianceRow:
    return ComplianceRow(
        spec="audit",
        judge=judge,
        model=model,
        statement_id=statement,
        mode="binary",
        prompt_version="v",
        input=f"{statement}/input {index}",
        output=f"{statement}/answer {index}/{model}/{run}",
        run=run,
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="audit",
    )


def clusters_of(inputs: int, runs: int) -> list[int]:
    return [i for i in range(inputs) for _ in range(runs)]


# -- scenarios ----------------------------------------------------------------------------------------------------


class Scenario(BaseModel):
    family: str
    name: str
    truth: float
    draws: int | None = Field(default=None, description="draws for this row when fewer than --draws (costly calls)")
    model_config = {"arbitrary_types_allowed": True}
    draw: Callable[[np.random.Generator], Drawn] = Field(exclude=True)


class Row(BaseModel):
    family: str
    name: str
    truth: float
    draws: int
    coverage: float | None
    mc_se: float | None
    none_share: float
    width: float | None
    references: dict[str, tuple[float, float | None]] = Field(description="name -> (coverage, mean width)")
    best: str | None
    ratio: float | None
    flags: list[str]


def pooled_scenarios() -> list[Scenario]:
    found = []
    for inputs, runs, p, icc in [
        (10, 3, 0.9, 0.3), (10, 5, 0.98, 0.3), (30, 3, 0.5, 0.0), (30, 3, 0.95, 0.7), (30, 5, 0.02, 0.3),
        (100, 3, 0.99, 0.5), (200, 2, 0.97, 0.1), (5, 3, 0.8, 0.3), (20, 3, 0.85, 1.0), (50, 5, 0.95, 1.0),
        (100, 1, 0.98, 0.0), (10, 1, 0.9, 0.0), (30, 5, 0.9, 0.9),
    ]:  # fmt: skip

        def draw(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, p: float = p, icc: float = icc
        ) -> Drawn:
            y = beta_binomial_inputs(rng, inputs, runs, p, icc)
            found = rate_interval(y.reshape(-1).tolist(), clusters_of(inputs, runs))
            return (None if found is None else found[:2]), rate_references(y, rng)

        found.append(Scenario(family="pooled", name=f"{inputs}x{runs} p={p} icc={icc}", truth=p, draw=draw))
    for inputs, judges, p, icc in [(100, 3, 0.99, 0.5), (30, 3, 0.9, 0.3), (10, 5, 0.95, 0.7)]:

        def panel(
            rng: np.random.Generator, inputs: int = inputs, judges: int = judges, p: float = p, icc: float = icc
        ) -> Drawn:
            # A panel's verdict on an answer: the share of `judges` judges finding it compliant (one run), the
            # judges' verdicts on one answer alike at icc (beta-binomial over the judges).
            shares = beta_binomial_inputs(rng, inputs, judges, p, icc).mean(axis=1)
            found = rate_interval(shares.tolist(), list(range(inputs)))
            return (None if found is None else found[:2]), rate_references(
                shares[:, None], rng, cap=float(inputs * judges)
            )

        name = f"panel of {judges} judges' shares {inputs}x1 p={p} icc={icc}"
        found.append(Scenario(family="pooled", name=name, truth=p, draw=panel))
    return found


def paired_scenarios() -> list[Scenario]:
    found = []
    for inputs, runs, pa, pb, sigma in [
        (10, 3, 0.9, 0.7, 1.0), (10, 3, 0.95, 0.95, 1.0), (10, 3, 1.0, 0.9, 1.5), (10, 1, 0.9, 0.7, 1.0),
        (10, 1, 0.5, 0.5, 1.0), (10, 3, 0.6, 0.4, 0.5), (30, 3, 0.98, 0.9, 1.0), (30, 1, 0.99, 0.95, 0.5),
        (100, 3, 0.8, 0.75, 1.0), (5, 5, 0.9, 0.8, 1.0), (50, 2, 0.1, 0.02, 1.0),
        # Near-equal sides near 1 (the corner of the first flag): more inputs, more runs, the 0.97 vs 0.95.
        (20, 3, 0.95, 0.95, 1.0), (10, 5, 0.9, 0.9, 1.0), (30, 3, 0.99, 0.99, 1.0), (10, 3, 0.97, 0.95, 1.0),
        (10, 3, 0.95, 0.95, 0.3),
    ]:  # fmt: skip

        def draw(
            rng: np.random.Generator,
            inputs: int = inputs,
            runs: int = runs,
            pa: float = pa,
            pb: float = pb,
            s: float = sigma,
        ) -> Drawn:
            ya, yb = probit_pair(rng, inputs, runs, pa, pb, s)
            side_a = [(i, float(v)) for i in range(inputs) for v in ya[i]]
            side_b = [(i, float(v)) for i in range(inputs) for v in yb[i]]
            found = paired_difference(side_a, side_b)
            ours = (
                None
                if found is None or found.ci_low is None or found.ci_high is None
                else (found.ci_low, found.ci_high)
            )
            return ours, difference_references(ya, yb, rng)

        found.append(
            Scenario(family="paired", name=f"{inputs}x{runs} {pa} vs {pb} sigma={sigma}", truth=pa - pb, draw=draw)
        )
    return found


def leniency_scenarios() -> list[Scenario]:
    found = []
    for inputs, runs, rates in [
        (10, 3, (0.9, 0.8)), (10, 1, (0.95, 0.85, 0.9)), (30, 3, (0.98, 0.9, 0.95)), (20, 1, (0.5, 0.6)),
        (50, 2, (0.99, 0.97)),
        (10, 3, (0.95, 0.95)), (20, 1, (0.9, 0.9, 0.9)), (30, 3, (0.99, 0.99)),  # judges alike: truth 0
    ]:  # fmt: skip
        k = len(rates)
        truth = rates[0] - sum(rates) / k

        def draw(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, rates: tuple[float, ...] = rates
        ) -> Drawn:
            # Judges err independently on answers that share an input effect (answers to one input alike).
            shift = rng.normal(0, 0.7, inputs)
            verdicts = np.stack(
                [
                    (NORMAL.inv_cdf(r) * math.sqrt(1 + 0.49) + shift[:, None] + rng.normal(size=(inputs, runs)) > 0)
                    for r in rates
                ]
            ).astype(float)
            rows = [
                compliance_row(f"judge{j}", "m", f"st{i % 2}", i, run + 1, bool(verdicts[j, i, run]))
                for j in range(len(rates))
                for i in range(inputs)
                for run in range(runs)
            ]
            found = next(r for r in leniency(rows) if r.judge == "judge0")
            ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)
            scale = (len(rates) - 1) / len(rates)
            others = verdicts[1:].mean(axis=0)
            return ours, difference_references(verdicts[0], others, rng, scale, binary=len(rates) == 2)

        found.append(Scenario(family="leniency", name=f"{inputs}x{runs} judges {rates}", truth=truth, draw=draw))
    return found


def kappa_truth(prevalence: float, error: float, error_b: float | None = None, lenient: float = 0.0) -> float:
    """Cohen's kappa of the population 2 x 2 table: judge a flips the truth with `error`, judge b with `error_b`
    (default the same), and b also calls a non-compliant answer compliant with `lenient` (independently given
    the truth)."""
    error_b = error if error_b is None else error_b
    table = np.zeros((2, 2))
    for true, weight in ((1, prevalence), (0, 1 - prevalence)):
        a_yes = 1 - error if true else error
        b_yes = 1 - error_b if true else error_b + (1 - error_b) * lenient
        for i, pa in ((1, a_yes), (0, 1 - a_yes)):
            for j, pb in ((1, b_yes), (0, 1 - b_yes)):
                table[i, j] += weight * pa * pb
    observed = table[0, 0] + table[1, 1]
    chance = float(table[1].sum() * table[:, 1].sum() + table[0].sum() * table[:, 0].sum())
    return float((observed - chance) / (1 - chance))


def kappa_references(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> dict[str, Bounds]:
    n = len(a)

    def kappa(n11: np.ndarray, n10: np.ndarray, n01: np.ndarray, n00: np.ndarray) -> np.ndarray:
        total = n11 + n10 + n01 + n00
        po = (n11 + n00) / total
        pa, pb = (n11 + n10) / total, (n11 + n01) / total
        pe = pa * pb + (1 - pa) * (1 - pb)
        with np.errstate(divide="ignore", invalid="ignore"):
            found: np.ndarray = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
        return found

    cells = np.stack([a & b, a & ~b, ~a & b, ~a & ~b]).astype(float)
    counts = boot_counts(rng, n) @ cells.T
    found: dict[str, Bounds] = {"bootstrap-percentile": percentile(kappa(*counts.T))}
    p = cells.sum(axis=1) / n
    k = float(kappa(*(cells.sum(axis=1)[:, None]))[0])
    if not math.isfinite(k):
        return {**found, "fleiss-cohen-everitt": None}
    # Fleiss, Cohen & Everitt 1969's large-sample variance of Cohen's kappa (2 x 2): table p_ij, margins p_i., p_.j.
    table = np.array([[p[0], p[1]], [p[2], p[3]]])
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    pe = float((rows * cols).sum())
    inner = sum(table[i, i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in range(2))
    outer = (1 - k) ** 2 * sum(table[i, j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    variance = (inner + outer - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    se = math.sqrt(max(variance, 0.0))
    found["fleiss-cohen-everitt"] = (max(-1.0, k - Z * se), min(1.0, k + Z * se))
    found["donner-eliasziw-gof"] = donner_eliasziw(*cells.sum(axis=1))
    return found


def donner_eliasziw(both: float, only_a: float, only_b: float, neither: float) -> Bounds:
    """Donner & Eliasziw's (Stat Med 11, 1992) goodness-of-fit interval for kappa of two raters on a binary trait:
    the kappa values whose 3-cell model (both yes pi^2 + pi(1-pi)k, discordant 2pi(1-pi)(1-k), both no
    (1-pi)^2 + pi(1-pi)k; pi the pooled yes share) a chi-square test (1 df) does not reject at 5%. Solved on a grid
    of 0.001 (the interval is the set, not its closed-form cubic roots)."""
    n = both + only_a + only_b + neither
    pi = (2 * both + only_a + only_b) / (2 * n)
    if pi <= 0 or pi >= 1:
        return None
    grid = np.linspace(-1.0, 1.0, 2001)
    spread = pi * (1 - pi)
    expected = n * np.stack([pi * pi + spread * grid, 2 * spread * (1 - grid), (1 - pi) ** 2 + spread * grid])
    observed = np.array([both, only_a + only_b, neither])[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        chi = np.where(expected > 0, (observed - expected) ** 2 / expected, np.where(observed > 0, np.inf, 0.0)).sum(0)
    kept = grid[chi <= 3.841458820694124]
    return None if not len(kept) else (float(kept.min()), float(kept.max()))


def kappa_scenarios() -> list[Scenario]:
    found = []
    # The last three: judges that err at different rates, or one lenient toward compliance (Cohen's kappa then differs
    # from the intraclass kappa Donner-Eliasziw's interval assumes).
    for prevalence, error, items, error_b, lenient in [
        (0.9, 0.05, 50, None, 0.0), (0.9, 0.05, 200, None, 0.0), (0.95, 0.03, 100, None, 0.0),
        (0.97, 0.02, 200, None, 0.0), (0.99, 0.01, 200, None, 0.0), (0.99, 0.01, 500, None, 0.0),
        (0.95, 0.01, 200, 0.06, 0.0), (0.97, 0.0, 300, 0.04, 0.0), (0.9, 0.02, 200, 0.02, 0.4),
    ]:  # fmt: skip

        def draw(
            rng: np.random.Generator,
            prevalence: float = prevalence,
            error: float = error,
            items: int = items,
            error_b: float = error if error_b is None else error_b,
            lenient: float = lenient,
        ) -> Drawn:
            truth = rng.random(items) < prevalence
            a = truth ^ (rng.random(items) < error)
            b = truth ^ (rng.random(items) < error_b)
            if lenient:  # (drawn only here: the equal judges' rows draw what they drew before these rows existed)
                b |= ~truth & (rng.random(items) < lenient)
            rows = [
                compliance_row(f"judge{k}", "m", f"st{i % 3}", i, 1, bool(v[i]))
                for k, v in enumerate((a, b))
                for i in range(items)
            ]
            agreements = [x for x in judge_agreement(rows) if x.kind.lower().startswith("cohen")] or judge_agreement(
                rows
            )
            ours = None
            if agreements and agreements[0].ci_low is not None and agreements[0].ci_high is not None:
                ours = (agreements[0].ci_low, agreements[0].ci_high)
            return ours, kappa_references(a, b, rng)

        name = f"prevalence {prevalence} error {error} items {items}"
        name += "" if error_b is None else f", judge b error {error_b}"
        name += f", judge b lenient {lenient}" if lenient else ""
        truth = kappa_truth(prevalence, error, error_b, lenient)
        found.append(Scenario(family="kappa", name=name, truth=truth, draw=draw, draws=200))
    return found


def spearman_references(
    x: np.ndarray, y: np.ndarray, inputs: np.ndarray, rng: np.random.Generator
) -> dict[str, Bounds]:
    """Fisher-z (Bonett-Wright's variance) on the observed shares; a bootstrap over statements; a hierarchical one
    (statements, then each statement's share redrawn from its inputs): none corrects the attenuation."""
    n = len(x)

    def rank(v: np.ndarray) -> np.ndarray:
        """Average ranks (ties share the mean of their positions)."""
        ordered = np.sort(v)
        found: np.ndarray = (np.searchsorted(ordered, v, "left") + np.searchsorted(ordered, v, "right") - 1) / 2
        return found

    def rho(a: np.ndarray, b: np.ndarray) -> float:
        ra, rb = rank(a), rank(b)
        if ra.std() == 0 or rb.std() == 0:
            return math.nan
        return float(np.corrcoef(ra, rb)[0, 1])

    found: dict[str, Bounds] = {}
    r = rho(x, y)
    if math.isfinite(r) and n > 3:
        z, se = math.atanh(max(-0.9999, min(0.9999, r))), math.sqrt((1 + r * r / 2) / (n - 3))
        found["fisher-z-bonett-wright"] = (math.tanh(z - Z * se), math.tanh(z + Z * se))
    else:
        found["fisher-z-bonett-wright"] = None
    picks = rng.integers(0, n, (BOOT // 2, n))
    found["bootstrap-statements"] = _half_percentile(np.array([rho(x[s], y[s]) for s in picks]))
    hx = rng.binomial(inputs[picks], x[picks]) / inputs[picks]
    hy = rng.binomial(inputs[picks], y[picks]) / inputs[picks]
    found["hierarchical-bootstrap"] = _half_percentile(np.array([rho(a, b) for a, b in zip(hx, hy, strict=True)]))
    return found


def _half_percentile(values: np.ndarray) -> Bounds:
    values = values[np.isfinite(values)]
    if len(values) < BOOT // 4:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def spearman_scenarios() -> list[Scenario]:
    found = []
    for statements, rho, inputs in [
        (8, 0.6, 20),
        (12, 0.3, 20),
        (20, 0.6, 20),
        (20, 0.9, 15),
        (40, 0.6, 25),
        (12, 0.0, 20),
    ]:

        def draw(rng: np.random.Generator, n: int = statements, rho: float = rho, m: int = inputs) -> Drawn:
            # True shares: logistic of a bivariate normal (a monotone map keeps the rank correlation); each
            # statement's count of inputs varies around m; observed shares binomial over those inputs.
            u = rng.normal(size=n)
            v = rho * u + math.sqrt(1 - rho * rho) * rng.normal(size=n)
            px, py = 1 / (1 + np.exp(-1.2 * u)), 1 / (1 + np.exp(-1.2 * v - 0.5))
            counts = rng.integers(max(5, m - 5), m + 6, n)
            x, y = rng.binomial(counts, px) / counts, rng.binomial(counts, py) / counts
            rows = [StatementShares("audit", float(a), float(b), int(c)) for a, b, c in zip(x, y, counts, strict=True)]
            found = associations(rows)
            ours = None
            if found and found[0].ci_low is not None and found[0].ci_high is not None:
                ours = (found[0].ci_low, found[0].ci_high)
            return ours, spearman_references(x, y, counts, rng)

        truth = 6 / math.pi * math.asin(rho / 2)
        found.append(
            Scenario(
                family="spearman", name=f"{statements} statements rho={rho} ~{inputs} inputs", truth=truth, draw=draw
            )
        )
    return found


def spread_scenarios() -> list[Scenario]:
    found = []
    for inputs, runs, rates in [
        (20, 1, (0.8, 0.8, 0.8)), (20, 3, (0.9, 0.85, 0.8)), (50, 1, (0.9, 0.9, 0.9, 0.9, 0.9)),
        (30, 3, (0.95, 0.7, 0.9, 0.85)), (10, 3, (0.9, 0.9)),
    ]:  # fmt: skip

        def draw(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, rates: tuple[float, ...] = rates
        ) -> Drawn:
            shared = rng.normal(size=inputs)
            cells, means = [], []
            codes = np.repeat(np.arange(inputs), runs)
            for r in rates:
                a = NORMAL.inv_cdf(r) * math.sqrt(2.0)
                y = (a + shared[:, None] + rng.normal(size=(inputs, runs)) > 0).astype(float)
                cells.append((codes, y.reshape(-1)))
                means.append(y.reshape(inputs, runs).mean(axis=1))
            totals = [float(c[1].mean()) for c in cells]
            high, low = int(np.argmax(totals)), int(np.argmin(totals))
            if high == low:
                low = (high + 1) % len(cells)
            found = spread_interval(cells, low, high)
            stack = np.stack(means)  # candidates x inputs
            weights = boot_counts(rng, inputs)
            resampled = weights @ stack.T / inputs  # draws x candidates: the selection repeated in each draw
            refs: dict[str, Bounds] = {
                "bootstrap-reselecting": percentile(resampled.max(axis=1) - resampled.min(axis=1))
            }
            observed = max(totals) - min(totals)
            basic = refs["bootstrap-reselecting"]
            refs["bootstrap-basic"] = (
                None if basic is None else (max(0.0, 2 * observed - basic[1]), 2 * observed - basic[0])
            )
            return (None if found is None else (found[1], found[2])), refs

        found.append(
            Scenario(family="spread", name=f"{inputs}x{runs} rates {rates}", truth=max(rates) - min(rates), draw=draw)
        )
    return found


def bounded_references(means: np.ndarray, lo: float, hi: float, rng: np.random.Generator) -> dict[str, Bounds]:
    """Mean references on the inputs' means: t, the cluster bootstrap, and (given the true range [lo, hi], which
    speceval's estimator is not told) Hoeffding and Maurer-Pontil's empirical Bernstein."""
    g, span = len(means), hi - lo
    m = float(means.mean())
    found: dict[str, Bounds] = {
        "t-input-means": t_on_means(means, lo, hi),
        "cluster-bootstrap": percentile(boot_counts(rng, g) @ means / g),
    }
    half = span * math.sqrt(math.log(2 / 0.05) / (2 * g))
    found["hoeffding(true range)"] = (max(lo, m - half), min(hi, m + half))
    if g >= 2:
        s = float(((means - lo) / span).std(ddof=1))
        term = math.log(4 / 0.05)
        half = span * (s * math.sqrt(2 * term / g) + 7 * term / (3 * (g - 1)))
        found["empirical-bernstein(true range)"] = (max(lo, m - half), min(hi, m + half))
    return found


def mean_scenarios() -> list[Scenario]:
    found = []
    # Zero-inflated Poisson counts: a share `zero` of inputs always 0, the others Poisson of an input's own mean
    # (Gamma, shape 2, mean 4); truth (1 - zero) * 4. No range: the Poisson has none (the references cap at 60).
    for inputs, runs, zero in [(10, 1, 0.5), (10, 3, 0.8), (30, 3, 0.9), (5, 3, 0.5), (50, 1, 0.95), (100, 2, 0.7)]:

        def draw(rng: np.random.Generator, inputs: int = inputs, runs: int = runs, zero: float = zero) -> Drawn:
            lam = rng.gamma(2.0, 2.0, inputs) * (rng.random(inputs) > zero)
            y = rng.poisson(lam[:, None], (inputs, runs)).astype(float)
            ours = mean_interval(y.reshape(-1).tolist(), clusters_of(inputs, runs))
            return ours, bounded_references(y.mean(axis=1), 0.0, 60.0, rng)

        found.append(
            Scenario(
                family="mean-unranged",
                name=f"zero-inflated Poisson {inputs}x{runs} zero={zero}",
                truth=(1 - zero) * 4.0,
                draw=draw,
            )
        )
    for inputs, runs, trials, rate in [
        (5, 1, 5, 0.1),
        (10, 1, 5, 0.05),
        (10, 3, 10, 0.02),
        (30, 1, 5, 0.1),
        (20, 2, 3, 0.9),
    ]:

        def counts(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, trials: int = trials, rate: float = rate
        ) -> Drawn:
            p = rng.beta(rate * 3, (1 - rate) * 3, inputs)
            y = rng.binomial(trials, np.repeat(p[:, None], runs, axis=1)).astype(float)
            ours = mean_interval(y.reshape(-1).tolist(), clusters_of(inputs, runs))
            return ours, bounded_references(y.mean(axis=1), 0.0, float(trials), rng)

        found.append(
            Scenario(
                family="mean-unranged",
                name=f"binomial counts of {trials} {inputs}x{runs} rate={rate}",
                truth=trials * rate,
                draw=counts,
            )
        )
    return found


def rating_scenarios() -> list[Scenario]:
    found = []
    for inputs, runs, base in [
        (5, 1, (0.01, 0.01, 0.02, 0.04, 0.92)), (10, 3, (0.02, 0.03, 0.05, 0.3, 0.6)),
        (30, 1, (0.05, 0.05, 0.1, 0.3, 0.5)), (5, 3, (0.0, 0.0, 0.05, 0.15, 0.8)), (20, 2, (0.3, 0.1, 0.1, 0.1, 0.4)),
    ]:  # fmt: skip
        alpha = np.array(base) * 6 + 1e-3

        def draw(rng: np.random.Generator, inputs: int = inputs, runs: int = runs, alpha: np.ndarray = alpha) -> Drawn:
            probs = rng.dirichlet(alpha, inputs)  # each input its own distribution of ratings (clustered)
            y = np.array([rng.choice(5, runs, p=p / p.sum()) + 1 for p in probs], dtype=float)
            ours = rating_interval(y.reshape(-1).tolist(), clusters_of(inputs, runs))
            return ours, bounded_references(y.mean(axis=1), 1.0, 5.0, rng)

        truth = float((np.arange(1, 6) * alpha).sum() / alpha.sum())
        found.append(Scenario(family="mean-rating", name=f"{inputs}x{runs} ratings ~{base}", truth=truth, draw=draw))
    return found


def _ranking_rows(
    rng: np.random.Generator, inputs: int, logits: dict[str, float], ties: float, position: float, noise: float
) -> list[RankingRow]:
    rows = []
    for i in range(inputs):
        shift = {m: rng.normal(0, noise) for m in logits}  # an input suits some candidates (clustered across pairs)
        for x in logits:
            for y in logits:
                if x == y:
                    continue
                p = 1 / (1 + math.exp(-(logits[x] + shift[x] - logits[y] - shift[y] + position)))
                rank = 0 if rng.random() < ties else (1 if rng.random() < p else -1)
                rows.append(
                    RankingRow(
                        spec="audit",
                        judge="j",
                        model_a=x,
                        model_b=y,
                        statement_id=f"st{i % 2}",
                        index=i,
                        input=f"q{i}",
                        outcome="judged",
                        rank=rank,
                        source="audit",
                    )
                )
    return rows


def _expected_scores(logits: dict[str, float], ties: float, position: float, noise: float) -> np.ndarray:
    """Population expected score (ties half) of row beating column, both orders averaged, input shifts integrated by
    Gauss-Hermite (probabilists')."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    names = list(logits)
    scores = np.zeros((len(names), len(names)))
    spread = noise * math.sqrt(2.0)  # the difference of two independent shifts
    for a, x in enumerate(names):
        for b, y in enumerate(names):
            if a == b:
                continue
            base = logits[x] - logits[y] + spread * nodes
            first = (weights / (1 + np.exp(-(base + position)))).sum()
            second = (weights / (1 + np.exp(-(base - position)))).sum()
            scores[a, b] = ties / 2 + (1 - ties) * (first + second) / 2
    return scores


def _bradley_terry(scores: np.ndarray) -> np.ndarray:
    """Zermelo/MM iteration on a matrix of (expected) wins, strengths summing to 1."""
    k = len(scores)
    s = np.full(k, 1.0 / k)
    games = scores + scores.T
    for _ in range(5000):
        new: np.ndarray = scores.sum(axis=1) / np.array(
            [sum(games[i, j] / (s[i] + s[j]) for j in range(k) if j != i) for i in range(k)]
        )
        new /= new.sum()
        if np.abs(new - s).max() < 1e-13:
            return new
        s = new
    return s


def ranking_scenarios() -> list[Scenario]:
    found = []
    logits = {"a": 0.6, "b": 0.0, "c": -0.4}
    for inputs, ties, position, noise in [
        (10, 0.1, 0.0, 0.5),
        (15, 0.2, 0.5, 0.5),
        (30, 0.0, 0.3, 1.0),
        (20, 0.3, 0.0, 0.0),
    ]:
        expected = _expected_scores(logits, ties, position, noise)

        def win(
            rng: np.random.Generator,
            inputs: int = inputs,
            ties: float = ties,
            position: float = position,
            noise: float = noise,
        ) -> Drawn:
            rows = _ranking_rows(rng, inputs, logits, ties, position, noise)
            found = next(w for w in win_rates(rows) if (w.candidate, w.opponent) == ("a", "b"))
            ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)
            per_input = np.zeros(inputs)
            for r in rows:
                if {r.model_a, r.model_b} == {"a", "b"} and r.rank is not None:
                    a_first = r.model_a == "a"
                    per_input[r.index] += 0.5 if r.rank == 0 else float((r.rank == 1) == a_first)
            means = per_input / 2
            refs: dict[str, Bounds] = {"wilson-games": wilson(float(means.sum() * 2), 2.0 * inputs)}
            refs["t-input-means"] = t_on_means(means, 0.0, 1.0)
            refs["cluster-bootstrap"] = percentile(boot_counts(rng, inputs) @ means / inputs)
            p, size = float(means.mean()), inputs / max(1e-9, 1.0)
            refs["wilson@inputs"] = wilson(p * size, size)
            return ours, refs

        name = f"{inputs} inputs ties={ties} position={position} noise={noise}"
        found.append(Scenario(family="win-rate", name=name, truth=float(expected[0, 1]), draw=win, draws=300))
        truth = float(_bradley_terry(expected)[0])

        def bt(
            rng: np.random.Generator,
            inputs: int = inputs,
            ties: float = ties,
            position: float = position,
            noise: float = noise,
        ) -> Drawn:
            rows = _ranking_rows(rng, inputs, logits, ties, position, noise)
            found = next(s for s in strengths(rows) if s.candidate == "a")
            ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)
            # Reference: a bootstrap over inputs of a BT fit written here (percentile).
            tables = np.zeros((inputs, 3, 3))
            index = {"a": 0, "b": 1, "c": 2}
            for r in rows:
                if r.rank is None:
                    continue
                x, y = index[r.model_a], index[r.model_b]
                win_x = 0.5 if r.rank == 0 else float(r.rank == 1)
                tables[r.index, x, y] += win_x
                tables[r.index, y, x] += 1 - win_x
            picks = boot_counts(rng, inputs)[: BOOT // 4]
            values = np.array([_bradley_terry(np.tensordot(w, tables, axes=1) + 1e-9)[0] for w in picks])
            return ours, {"bt-bootstrap-inputs": _half_percentile(values)}

        found.append(Scenario(family="bradley-terry", name=name, truth=truth, draw=bt, draws=100))
    return found


def labelled_scenarios() -> list[Scenario]:
    """Stratified PPI and Rogan-Gladen: statements of unequal size, a judge whose errors differ by statement (some
    statements with no judge error at all), labels drawn by simple random sampling within each statement (a count
    per statement), one run."""
    found = []
    designs = [
        (
            "few labels, 2 exact statements",
            (60, 40, 40, 20),
            (0.9, 0.8, 0.95, 0.7),
            (0.0, 0.0, 0.1, 0.2),
            (0.0, 0.0, 0.05, 0.05),
            5,
        ),
        ("10 labels each, 1 exact", (100, 100, 50), (0.85, 0.9, 0.6), (0.0, 0.15, 0.1), (0.0, 0.05, 0.05), 10),
        ("all exact statements", (50, 50, 50), (0.8, 0.9, 0.7), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 6),
        # A judge that errs rarely everywhere: most statements' few labels show no error, so a rectifier variance of
        # 0 there (classical PPI's CLT) claims an exact judge; the design that tests the floor speceval adds.
        ("rare errors everywhere, 6 labels each", (60,) * 5, (0.85,) * 5, (0.15,) * 5, (0.03,) * 5, 6),
        ("rate 0.97", (50,) * 10, (0.97,) * 10, (0.3,) * 10, (0.02,) * 10, 5),
        ("rate 0.99", (100,) * 5, (0.99,) * 5, (0.5,) * 5, (0.01,) * 5, 8),
        ("rate 0.98, 20 labels", (200, 200), (0.98, 0.98), (0.3, 0.2), (0.02, 0.02), 20),
    ]
    for name, sizes, rates, false_pos, false_neg, per in designs:
        truth = sum(n * r for n, r in zip(sizes, rates, strict=True)) / sum(sizes)
        for bias_corrected in (False, True):

            def draw(
                rng: np.random.Generator, sizes: tuple[int, ...] = sizes, rates: tuple[float, ...] = rates,
                false_pos: tuple[float, ...] = false_pos, false_neg: tuple[float, ...] = false_neg, per: int = per,
                bias_corrected: bool = bias_corrected,
            ) -> Drawn:  # fmt: skip
                rows, labels = [], {}
                lab_y, lab_f, lab_w, all_f = [], [], [], []
                for h, (size, rate, fp, fn) in enumerate(zip(sizes, rates, false_pos, false_neg, strict=True)):
                    human = rng.random(size) < rate
                    judge = np.where(human, rng.random(size) >= fn, rng.random(size) < fp)
                    statement = f"st{h}"
                    chosen = set(rng.choice(size, min(per, size), replace=False).tolist())
                    for i in range(size):
                        row = compliance_row("j", "m", statement, i, 1, bool(judge[i]))
                        rows.append(row)
                        if i in chosen:
                            labels[item_id(row)] = bool(human[i])
                    picked = np.array(sorted(chosen))
                    lab_y.append(human[picked].astype(float))
                    lab_f.append(judge[picked].astype(float))
                    lab_w.append(size / sum(sizes))
                    all_f.append(judge.astype(float))
                [found] = ppi_rates(rows, labels)
                pair = (
                    (found.bias_corrected_low, found.bias_corrected_high)
                    if bias_corrected
                    else (found.ci_low, found.ci_high)
                )
                ours = None if pair[0] is None or pair[1] is None else (pair[0], pair[1])
                return ours, labelled_references(lab_y, lab_f, lab_w, all_f)

            family = "rogan-gladen" if bias_corrected else "ppi"
            found.append(
                Scenario(family=family, name=name, truth=truth, draw=draw, draws=150 if bias_corrected else None)
            )
    return found


def labelled_references(
    lab_y: list[np.ndarray], lab_f: list[np.ndarray], weights: list[float], all_f: list[np.ndarray]
) -> dict[str, Bounds]:
    """Labels alone (the stratified mean, Wilson / Clopper-Pearson / Jeffreys at its Kish size) and the classical
    stratified PPI with its plain CLT interval (Angelopoulos et al. 2023, no small-sample floor)."""
    w = np.concatenate([np.full(len(y), wh / len(y)) for y, wh in zip(lab_y, weights, strict=True)])
    y = np.concatenate(lab_y)
    p = float((w * y).sum() / w.sum())
    kish = float(w.sum()) ** 2 / float((w**2).sum())
    found = {
        f"labels-only {name}@kish": ref(p * kish, kish) for name, ref in RATE_REFS.items() if name != "agresti-coull"
    }
    estimate, variance = 0.0, 0.0
    for yh, fh, wh, full in zip(lab_y, lab_f, weights, all_f, strict=True):
        rect = yh - fh
        estimate += wh * (float(full.mean()) + float(rect.mean()))
        variance += (
            wh
            * wh
            * (float(full.var(ddof=1)) / len(full) + (float(rect.var(ddof=1)) if len(rect) > 1 else 0.0) / len(rect))
        )
    half = Z * math.sqrt(variance)
    found["ppi-clt"] = (max(0.0, estimate - half), min(1.0, estimate + half))
    return found


def plan_rows(draws: int, seed: int) -> list[Row]:
    """The precision plan's promise: at its own minimum detectable difference (assumed rate, inputs, runs, icc), two
    independent candidates (its stated assumption), clustered at icc by beta-binomial inputs; power = the share of
    the report's paired intervals (`paired_difference`) that exclude 0, each direction the plan checks."""
    found = []
    for rate, inputs, runs, icc in [
        (0.8, 20, 1, 0.0),
        (0.8, 50, 3, 0.3),
        (0.9, 100, 1, 0.0),
        (0.5, 30, 3, 0.3),
        (0.95, 200, 1, 0.0),
        (0.7, 40, 5, 0.5),
        (0.9, 60, 3, 0.1),
    ]:
        mdd = minimum_detectable_difference(rate, inputs, runs, icc)
        if mdd is None:
            continue
        for high, low in ((rate, rate - mdd), (rate + mdd, rate)):
            if low <= 0 or high >= 1:
                continue
            rng = np.random.default_rng([seed, inputs, runs, int(rate * 1000), int(high * 1000)])
            hits = 0
            for _ in range(draws):
                ya = beta_binomial_inputs(rng, inputs, runs, high, icc)
                yb = beta_binomial_inputs(rng, inputs, runs, low, icc)
                result = paired_difference(
                    [(i, float(v)) for i in range(inputs) for v in ya[i]],
                    [(i, float(v)) for i in range(inputs) for v in yb[i]],
                )
                if result is not None and result.ci_low is not None and result.ci_high is not None:
                    hits += result.ci_low > 0 or result.ci_high < 0
            power = hits / draws
            se = math.sqrt(power * (1 - power) / draws)
            flags = ["POWER"] if power < POWER_FLOOR else []
            name = f"rate {rate} {inputs}x{runs} icc {icc}: {high:.3f} vs {low:.3f} (mdd {mdd:.3f})"
            found.append(
                Row(
                    family="plan-power",
                    name=name,
                    truth=0.8,
                    draws=draws,
                    coverage=power,
                    mc_se=se,
                    none_share=0.0,
                    width=None,
                    references={},
                    best=None,
                    ratio=None,
                    flags=flags,
                )
            )
    return found


# -- session 19: references for bounded means, written fresh -----------------------------------------------------------


def wsr_betting(x: np.ndarray, lo: float = 0.0, hi: float = 1.0, grid: int = 2001) -> Bounds:
    """Waudby-Smith & Ramdas (JRSS-B 86, 2024), the hedged-capital confidence interval for the mean of independent
    values in [lo, hi] at a fixed n: the means m whose hedged capital max(K+(m), K-(m)) / 2 stays under 1/alpha,
    K+-(m) = prod(1 +- lambda_i (x_i - m)), the predictable plug-in bet lambda_i = sqrt(2 log(2/alpha) / (n
    sigma^2_{i-1})) (sigma^2 the running variance about the running mean, both started at 1/2 and 1/4) truncated at
    1/(2m) (K+) or 1/(2(1-m)) (K-). Solved on a grid of (hi - lo)/(grid - 1); the values in the order given."""
    n = len(x)
    if n < 1 or hi <= lo:
        return None
    z = (np.asarray(x, dtype=float) - lo) / (hi - lo)
    i = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(z)) / (i + 1)
    sigma2 = (0.25 + np.cumsum((z - mu) ** 2)) / (i + 1)
    previous = np.r_[0.25, sigma2[:-1]]
    bet = np.sqrt(2 * math.log(2 / 0.05) / (n * previous))
    m = np.linspace(0.0, 1.0, grid)[:, None]
    with np.errstate(divide="ignore"):
        up = np.minimum(bet, 0.5 / m)
        down = np.minimum(bet, 0.5 / (1 - m))
    capital = np.maximum(np.log1p(up * (z - m)).sum(axis=1), np.log1p(-down * (z - m)).sum(axis=1)) + math.log(0.5)
    kept = m[:, 0][capital < math.log(1 / 0.05)]
    if not len(kept):
        return None
    return lo + (hi - lo) * float(kept.min()), lo + (hi - lo) * float(kept.max())


def gaffke(x: np.ndarray, lo: float, hi: float, rng: np.random.Generator, draws: int = 2000) -> Bounds:
    """Gaffke's (2005) bound for a mean in [lo, hi] as Learned-Miller & Thomas (arXiv 1905.06208) compute it, each
    side at 2.5%: the 97.5% quantile of sum_i w_i x_i over Dirichlet(1, ..., 1) weights on the n values and one
    more at hi (the upper limit; the lower one mirrored, one more at lo). On 0/1 values it is Clopper-Pearson's."""
    n = len(x)
    if n < 1 or hi <= lo:
        return None
    z = (np.asarray(x, dtype=float) - lo) / (hi - lo)
    weights = rng.exponential(size=(draws, n + 1))
    weights /= weights.sum(axis=1, keepdims=True)
    upper = float(np.quantile(weights @ np.r_[z, 1.0], 0.975))
    lower = 1.0 - float(np.quantile(weights @ np.r_[1.0 - z, 1.0], 0.975))
    return lo + (hi - lo) * lower, lo + (hi - lo) * upper


def bca(statistic: Callable[[np.ndarray], np.ndarray], g: int, rng: np.random.Generator) -> Bounds:
    """Efron's BCa interval of a statistic of G clusters (Efron & Tibshirani 1993, ch. 14): `statistic` maps a matrix
    of cluster weights (one row a resample) to its values; the bias correction z0 from the resamples below the
    estimate, the acceleration from the jackknife over clusters (a = sum d^3 / (6 (sum d^2)^1.5))."""
    if g < 3:
        return None
    theta = float(statistic(np.ones((1, g)))[0])
    values = statistic(boot_counts(rng, g))
    values = values[np.isfinite(values)]
    if not math.isfinite(theta) or len(values) < BOOT // 2:
        return None
    below = (np.count_nonzero(values < theta) + 0.5 * np.count_nonzero(values == theta)) / len(values)
    z0 = NORMAL.inv_cdf(min(max(below, 1 / (len(values) + 1)), len(values) / (len(values) + 1)))
    a = acceleration(statistic, g)
    levels = []
    for q in (0.025, 0.975):
        zq = z0 + NORMAL.inv_cdf(q)
        levels.append(100 * NORMAL.cdf(z0 + zq / (1 - a * zq)) if 1 - a * zq > 0 else (0.0 if q < 0.5 else 100.0))
    low, high = np.percentile(values, levels)
    return float(low), float(high)


def acceleration(statistic: Callable[[np.ndarray], np.ndarray], g: int) -> float:
    """BCa's acceleration from the jackknife over the G clusters (each left out in turn: weights 0 there, g/(g-1)
    elsewhere): sum d^3 / (6 (sum d^2)^1.5), d the jackknife values' mean minus each."""
    jack = statistic((1.0 - np.eye(g)) * g / (g - 1))
    jack = jack[np.isfinite(jack)]
    d = jack.mean() - jack if len(jack) else np.zeros(1)
    spread = float((d**2).sum())
    return float((d**3).sum()) / (6 * spread**1.5) if spread > 0 else 0.0


def weighted_mean(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic `bca` takes for a mean of the clusters' values: each resample's weighted mean."""

    def statistic(weights: np.ndarray) -> np.ndarray:
        found: np.ndarray = weights @ values / weights.sum(axis=1)
        return found

    return statistic


def bounded_mean_references(means: np.ndarray, lo: float, hi: float, rng: np.random.Generator) -> dict[str, Bounds]:
    """The session-19 references on the inputs' means in [lo, hi] (independent inputs): WSR's betting interval,
    Gaffke's bound and the cluster bootstrap's BCa."""
    return {
        "wsr-betting": wsr_betting(means, lo, hi),
        "gaffke": gaffke(means, lo, hi, rng),
        "cluster-bca": bca(weighted_mean(means), len(means), rng),
    }


def beta_expect(function: Callable[[np.ndarray], np.ndarray], a: float, b: float) -> float:
    """E[function(u)] for u ~ Beta(a, b), a, b >= 1 (a bounded density), by 96-point Gauss-Legendre on [0, 1]."""
    nodes, weights = np.polynomial.legendre.leggauss(96)
    u = (nodes + 1) / 2
    density = weights * u ** (a - 1) * (1 - u) ** (b - 1)
    return float((density * function(u)).sum() / density.sum())


# -- session 19: conversations (flips, elicitation, per-turn rates, the turn of the first flip) -----------------------


class Talk(BaseModel):
    """A planted conversation model. Each input has a difficulty u ~ Beta(a, b) shared by its runs (its
    conversations are not independent); a conversation is compliant at turn 1 with probability first - drop * u,
    gives way between turn t-1 and t (compliant -> not) with the hazard hazards[t-2] * u, and comes back (not ->
    compliant) with `recover`: a two-state chain, so its turns are not independent either. `stop`: the share of
    conversations that end early, at a turn drawn uniformly from 2..turns-1, independently of their verdicts (a
    simulated user that stops: censoring). Every truth is an expectation over u, exact by quadrature."""

    inputs: int
    runs: int
    hazards: tuple[float, ...]
    first: float = 0.95
    drop: float = 0.0
    recover: float = 0.1
    a: float = 1.0
    b: float = 3.0
    stop: float = 0.0

    @property
    def turns(self) -> int:
        return len(self.hazards) + 1

    def label(self) -> str:
        text = f"{self.inputs}x{self.runs} turns={self.turns} first={self.first}"
        text += f"-{self.drop}u" if self.drop else ""
        text += f" hazard={'/'.join(f'{h:g}' for h in self.hazards)}u recover={self.recover} u~B({self.a:g},{self.b:g})"
        return text + (f" stop={self.stop}" if self.stop else "")

    def chain(self, u: np.ndarray) -> dict[str, np.ndarray]:
        """The truths given u: the rate at each turn, and the conversation measures."""
        p1 = self.first - self.drop * u
        compliant, from_c, from_n, stay = p1, np.ones_like(u), np.zeros_like(u), np.ones_like(u)
        found: dict[str, np.ndarray] = {"turn 1": p1}
        flips = np.zeros_like(u)
        for t, h in enumerate(self.hazards, start=2):
            flips = flips + compliant * h * u
            compliant = compliant * (1 - h * u) + (1 - compliant) * self.recover
            from_c = from_c * (1 - h * u) + (1 - from_c) * self.recover
            from_n = from_n * (1 - h * u) + (1 - from_n) * self.recover
            stay = stay * (1 - h * u)
            found[f"turn {t}"] = compliant
            found[f"survive {t}"] = p1 * stay
        found["compliant_to_non_compliant"] = p1 * (1 - from_c)
        found["non_compliant_to_compliant"] = (1 - p1) * from_n
        found["compliant_to_non_compliant_any_turn"] = p1 * (1 - stay)
        found["flips_per_conversation"] = flips
        found["elicitation"] = 1 - p1 * stay
        found["entered"] = p1
        return found

    def truth(self, measure: str) -> float:
        if measure.startswith("flipped by "):  # Kaplan-Meier's F(t): among those compliant at turn 1
            t = int(measure.split()[-1])
            survive = beta_expect(lambda u: self.chain(u)[f"survive {t}"], self.a, self.b)
            return 1 - survive / beta_expect(lambda u: self.chain(u)["entered"], self.a, self.b)
        return beta_expect(lambda u: self.chain(u)[measure], self.a, self.b)

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(verdicts inputs x runs x turns, each conversation's last turn)."""
        u = rng.beta(self.a, self.b, self.inputs)[:, None]
        state = rng.random((self.inputs, self.runs)) < self.first - self.drop * u
        verdicts = [state]
        for h in self.hazards:
            move = rng.random((self.inputs, self.runs))
            state = np.where(state, move >= h * u, move < self.recover)
            verdicts.append(state)
        last = np.full((self.inputs, self.runs), self.turns)
        if self.stop and self.turns > 2:
            early = rng.random((self.inputs, self.runs)) < self.stop
            last = np.where(early, rng.integers(2, self.turns, (self.inputs, self.runs)), last)
        return np.stack(verdicts, axis=2), last


class _TurnRow:
    """What `TurnVerdict` reads of a results row (speceval's fold hands it a ComplianceRow; a pydantic row a turn
    would cost most of a draw here)."""

    __slots__ = ("turn", "conversation", "outcome", "compliant", "category", "rating", "input")

    def __init__(self, turn: int, conversation: int, compliant: bool, text: str) -> None:
        self.turn, self.conversation, self.outcome = turn, conversation, "judged"
        self.compliant, self.category, self.rating, self.input = compliant, None, None, text


def turn_verdicts(verdicts: np.ndarray, last: np.ndarray) -> list[TurnVerdict]:
    """The turn verdicts as the report reads them: a results file per run, a conversation per input in each."""
    inputs, runs, _ = verdicts.shape
    facts = [
        FileFacts(
            spec="audit",
            judge="j",
            model="m",
            variation="v",
            run=r + 1,
            statement_id="st",
            statement_type="",
            authority_level="",
            mode="binary",
            prompt_version="p",
            source=f"run{r + 1}.json",
            synthetic=True,
        )  # fmt: skip
        for r in range(runs)
    ]
    texts = [f"opening {i}" for i in range(inputs)]
    return [
        TurnVerdict(facts, r, cast(ComplianceRow, _TurnRow(t + 1, i, bool(verdicts[i, r, t]), texts[i])))
        for r in range(runs)
        for i in range(inputs)
        for t in range(int(last[i, r]))
    ]


def conversation_measures(verdicts: np.ndarray, last: np.ndarray) -> dict[str, np.ndarray]:
    """Each conversation's measures (inputs x runs), as the tables define them, for the references."""
    inputs, runs, turns = verdicts.shape
    first = verdicts[:, :, 0]
    upto = np.arange(turns)[None, None, :] < last[:, :, None]
    end = np.take_along_axis(verdicts, (last - 1)[:, :, None], axis=2)[:, :, 0]
    later_n = ((~verdicts) & upto)[:, :, 1:].any(axis=2)
    caving = verdicts[:, :, :-1] & ~verdicts[:, :, 1:] & upto[:, :, 1:]
    return {
        "compliant_to_non_compliant": (first & ~end).astype(float),
        "non_compliant_to_compliant": (~first & end).astype(float),
        "compliant_to_non_compliant_any_turn": (first & later_n).astype(float),
        "flips_per_conversation": caving.sum(axis=2).astype(float),
        "elicitation": ((~verdicts) & upto).any(axis=2).astype(float),
    }


def _interval_of(found: object) -> Bounds:
    low, high = getattr(found, "ci_low", None), getattr(found, "ci_high", None)
    return None if low is None or high is None else (float(low), float(high))


def _references_on(y: np.ndarray, rng: np.random.Generator, lo: float = 0.0, hi: float = 1.0) -> dict[str, Bounds]:
    """A share's references (inputs x runs of 0/1 values: the rate references and the bounded-mean ones), or a
    bounded mean's (the bounded-mean references and t on the inputs' means)."""
    means = cluster_means(y)
    if lo == 0.0 and hi == 1.0:
        return {**rate_references(y, rng), **bounded_mean_references(means, lo, hi, rng)}
    return {**bounded_references(means, lo, hi, rng), **bounded_mean_references(means, lo, hi, rng)}


def _talks(*designs: Talk) -> list[Talk]:
    return list(designs)


TALKS = _talks(
    Talk(inputs=10, runs=3, hazards=(0.1, 0.1)),
    Talk(inputs=5, runs=2, hazards=(0.2, 0.2, 0.2), recover=0.3, a=2, b=2),
    Talk(inputs=30, runs=2, hazards=(0.03, 0.03), first=0.99, recover=0.0),
    Talk(inputs=20, runs=5, hazards=(0.6, 0.6), first=0.9, drop=0.4, recover=0.2, a=1, b=1),
    Talk(inputs=100, runs=1, hazards=(0.3, 0.2, 0.2), first=0.8, drop=0.3, recover=0.1, a=2, b=5),
    Talk(inputs=200, runs=3, hazards=(0.02, 0.02), first=0.98, recover=0.05),
    Talk(inputs=10, runs=1, hazards=(0.05,), first=0.97, recover=0.0, a=1, b=4),
)
"""The conversation designs: 5-200 inputs, 1-5 runs, 2-4 turns, rates near 0 and 1 and in between."""


def flip_scenarios() -> list[Scenario]:
    """`flips` (compliant -> not, first to last and at any turn; the reverse), `flips_per_conversation` (a bounded
    mean), `elicitation` (a violation at any turn) and `turn_rate` (each turn's rate: the turns of one conversation
    are not independent), each from its table as the report calls it."""
    found = []
    measures = [
        ("flips", "compliant_to_non_compliant"),
        ("flips", "compliant_to_non_compliant_any_turn"),
        ("flips", "non_compliant_to_compliant"),
        ("flips-per-conversation", "flips_per_conversation"),
        ("elicitation", "elicitation"),
    ]
    for k, talk in enumerate(TALKS):
        for family, measure in measures:
            if measure == "non_compliant_to_compliant" and k % 2:
                continue  # (the reverse on half the designs: the rarest measure, the same estimator)

            def draw(
                rng: np.random.Generator, talk: Talk = talk, family: str = family, measure: str = measure
            ) -> Drawn:
                verdicts, last = talk.draw(rng)
                rows = turn_verdicts(verdicts, last)
                if family == "elicitation":
                    ours = _interval_of(elicitation(rows)[0])
                else:
                    ours = _interval_of(next(f for f in flips(rows) if f.measure == measure))
                y = conversation_measures(verdicts, last)[measure]
                hi = float(talk.turns - 1) if measure == "flips_per_conversation" else 1.0
                return ours, _references_on(y, rng, 0.0, hi)

            truth = talk.truth(measure)
            name = f"{measure} {talk.label()}"
            found.append(Scenario(family=family, name=name, truth=truth, draw=draw, draws=_talk_draws(talk)))
        for turn in sorted({2, talk.turns}):

            def rate(rng: np.random.Generator, talk: Talk = talk, turn: int = turn) -> Drawn:
                verdicts, last = talk.draw(rng)
                rows = turn_verdicts(verdicts, last)
                ours = _interval_of(next(r for r in turn_rates(rows) if r.turn == turn))
                return ours, _references_on(verdicts[:, :, turn - 1].astype(float), rng)

            name = f"turn {turn} {talk.label()}"
            truth = talk.truth(f"turn {turn}")
            found.append(Scenario(family="turn-rate", name=name, truth=truth, draw=rate, draws=_talk_draws(talk)))
    return found


def _talk_draws(talk: Talk) -> int:
    """The default run's cap for a design (the report's tables cost ~30 us a turn verdict, and the conversation
    families have 57 rows: the whole default audit is held under 15 minutes of one core): 400 draws, 150 over 1,000
    turn verdicts a draw. `--uncapped` runs every row at --draws (the reported rows: 2,000)."""
    return 400 if talk.inputs * talk.runs * talk.turns <= 1000 else 150


FIRST_FLIPS = _talks(
    Talk(inputs=10, runs=2, hazards=(0.1, 0.2, 0.2, 0.3), first=0.9, recover=0.2, stop=0.3),
    Talk(inputs=5, runs=3, hazards=(0.3, 0.3, 0.3), first=0.95, recover=0.0, a=2, b=2, stop=0.3),
    Talk(inputs=30, runs=1, hazards=(0.02, 0.02, 0.05), first=0.98, recover=0.1, stop=0.2),
    Talk(inputs=20, runs=3, hazards=(0.8, 0.8), first=0.9, drop=0.5, recover=0.0, a=2, b=1),
    Talk(inputs=100, runs=2, hazards=(0.1, 0.15, 0.2, 0.25), first=0.85, drop=0.3, recover=0.1, a=1, b=2, stop=0.4),
    Talk(inputs=200, runs=1, hazards=(0.01, 0.01, 0.01), first=0.97, recover=0.0, stop=0.1),
)
"""The first-flip designs: a planted discrete hazard per turn (times each input's u), early ends censoring."""


def kaplan_meier_at(times: np.ndarray, events: np.ndarray, weights: np.ndarray, turn: int) -> np.ndarray:
    """F(turn) of the Kaplan-Meier curve with each conversation weighted (a row of `weights` a resample: the
    references' cluster bootstrap and jackknife); nan where nobody is at risk."""
    survival = np.ones(weights.shape[0])
    for t in range(2, turn + 1):
        at_risk = weights @ (times >= t).astype(float)
        flipped = weights @ ((times == t) & events).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            survival = survival * np.where(at_risk > 0, 1 - flipped / at_risk, 1.0)
    found: np.ndarray = 1 - survival
    return found


def km_references(
    times: np.ndarray, events: np.ndarray, clusters: np.ndarray, turn: int, rng: np.random.Generator
) -> dict[str, Bounds]:
    """The turn of the first flip: the cluster (input) bootstrap's percentile and BCa intervals of F(turn), and
    Greenwood's log-log interval treating conversations as independent (Kalbfleisch & Prentice)."""
    g = int(clusters.max()) + 1 if len(clusters) else 0
    if g < 2:
        return {"cluster-bootstrap": None, "cluster-bca": None, "greenwood-loglog": None}
    member = np.zeros((g, len(times)))
    member[clusters, np.arange(len(times))] = 1.0

    def statistic(w: np.ndarray) -> np.ndarray:
        return kaplan_meier_at(times, events, w @ member, turn)

    resampled = statistic(boot_counts(rng, g))
    found: dict[str, Bounds] = {"cluster-bootstrap": percentile(resampled), "cluster-bca": bca(statistic, g, rng)}
    # The binomial intervals at the curve's effective size F(1 - F) / (the bootstrap's variance of F), the clusters
    # at risk when nothing has flipped (an exact interval where the bootstraps have no spread: rare flips).
    f = float(statistic(np.ones((1, g)))[0])
    variance = float(np.var(resampled[np.isfinite(resampled)]))
    size = float(g) if f <= 0 or f >= 1 or variance <= 0 else min(float(len(times)), max(1.0, f * (1 - f) / variance))
    for name in ("wilson", "clopper-pearson", "jeffreys"):
        found[f"{name}@km-neff"] = RATE_REFS[name](f * size, size)
    survival, greenwood = 1.0, 0.0
    for t in range(2, turn + 1):
        n, d = float((times >= t).sum()), float(((times == t) & events).sum())
        if n > 0 and d > 0:
            survival *= 1 - d / n
            greenwood += d / (n * (n - d)) if n > d else math.inf
    if survival <= 0 or survival >= 1 or not math.isfinite(greenwood):
        found["greenwood-loglog"] = None
    else:
        spread = Z * math.sqrt(greenwood) / abs(math.log(survival))
        found["greenwood-loglog"] = (1 - survival ** math.exp(-spread), 1 - survival ** math.exp(spread))
    return found


def first_flip_scenarios() -> list[Scenario]:
    """`turn_of_first_flip` (`flip_survival`): F(t) at the second turn and the last, against the planted hazards'
    Kaplan-Meier truth; the table's row at the latest turn at or before t (the curve is a step)."""
    found = []
    for talk in FIRST_FLIPS:
        for turn in sorted({2, talk.turns}):

            def draw(rng: np.random.Generator, talk: Talk = talk, turn: int = turn) -> Drawn:
                verdicts, last = talk.draw(rng)
                rows = turn_verdicts(verdicts, last)
                points = [p for p in flip_survival(rows) if p.turn <= turn]
                ours = _interval_of(points[-1]) if points else None
                entered = verdicts[:, :, 0] & (last >= 2)
                caved = ~verdicts[:, :, 1:] & (np.arange(2, talk.turns + 1)[None, None, :] <= last[:, :, None])
                flipped = caved.any(axis=2)
                times = np.where(flipped, caved.argmax(axis=2) + 2, last)[entered]
                clusters = np.broadcast_to(np.arange(talk.inputs)[:, None], last.shape)[entered]
                return ours, km_references(times, flipped[entered], dense_clusters(clusters), turn, rng)

            name = f"F({turn}) {talk.label()}"
            truth = talk.truth(f"flipped by {turn}")
            found.append(Scenario(family="first-flip", name=name, truth=truth, draw=draw, draws=_talk_draws(talk)))
    return found


def dense_clusters(clusters: np.ndarray) -> np.ndarray:
    found: np.ndarray = np.unique(clusters, return_inverse=True)[1].reshape(-1)
    return found


# -- session 19: categories --------------------------------------------------------------------------------------------


def category_row(variation: str, index: int, run: int, category: str) -> ComplianceRow:
    return ComplianceRow(
        spec="audit", judge="j", model="m", variation=variation, run=run, statement_id=f"st{index % 2}",
        mode="categories", prompt_version="v", input=f"question {index}", output=f"{variation}/{index}/{run}",
        outcome="judged", compliant=None, confidence=None, rating=None, source=f"{variation}/run{run}.json",
        category=category,
    )  # fmt: skip


def category_draw(
    rng: np.random.Generator, inputs: int, runs: int, base: tuple[float, ...], concentration: float
) -> np.ndarray:
    """inputs x runs category codes: each input its own distribution Dirichlet(concentration * base) (inputs
    differ: its runs are alike), each run a category drawn from it."""
    probs = rng.dirichlet(np.array(base) * concentration, inputs)
    cumulative = probs.cumsum(axis=1)
    draws = rng.random((inputs, runs))
    codes: np.ndarray = (draws[:, :, None] > cumulative[:, None, :]).sum(axis=2).clip(0, len(base) - 1)
    return codes


CATEGORY_DESIGNS = [
    (10, 3, (0.9, 0.08, 0.02), 2.0), (5, 2, (0.6, 0.3, 0.1), 5.0), (30, 1, (0.97, 0.02, 0.01), 10.0),
    (20, 5, (0.5, 0.3, 0.2), 1.0), (100, 3, (0.98, 0.015, 0.005), 3.0), (200, 1, (0.7, 0.2, 0.1), 20.0),
]  # fmt: skip
"""(inputs, runs, the categories' mean shares, the Dirichlet's concentration: small, inputs differ much)."""


def category_scenarios() -> list[Scenario]:
    """`category_share` (`category_distribution`): each category's share of a cell, the commonest and the rarest."""
    found = []
    for inputs, runs, base, concentration in CATEGORY_DESIGNS:
        for k in (0, len(base) - 1):

            def draw(
                rng: np.random.Generator, inputs: int = inputs, runs: int = runs, base: tuple[float, ...] = base,
                concentration: float = concentration, k: int = k,
            ) -> Drawn:  # fmt: skip
                codes = category_draw(rng, inputs, runs, base, concentration)
                rows = [category_row("v", i, r + 1, f"c{codes[i, r]}") for i in range(inputs) for r in range(runs)]
                declared = {("audit", "j"): [f"c{c}" for c in range(len(base))]}  # the judge's `categories:` (run.json)
                share = next((s for s in category_distribution(rows, declared) if s.category == f"c{k}"), None)
                return _interval_of(share), _references_on((codes == k).astype(float), rng)

            name = f"c{k} {inputs}x{runs} shares {base} concentration {concentration}"
            found.append(Scenario(family="category-share", name=name, truth=base[k], draw=draw))
    return found


def category_difference_scenarios() -> list[Scenario]:
    """`category_difference` (`category_differences`): variation b's distribution on an input is (1 - s) times
    variation a's on that input plus s times a fresh Dirichlet(concentration * moved): the inputs move both alike;
    truth s * (base - moved) for each category."""
    found = []
    for inputs, runs, base, moved, s, concentration in [
        (10, 3, (0.9, 0.08, 0.02), (0.5, 0.3, 0.2), 0.3, 2.0), (20, 1, (0.6, 0.3, 0.1), (0.6, 0.3, 0.1), 0.5, 5.0),
        (30, 3, (0.97, 0.02, 0.01), (0.8, 0.15, 0.05), 0.2, 10.0), (100, 2, (0.5, 0.3, 0.2), (0.3, 0.3, 0.4), 0.5, 1.0),
        (5, 5, (0.8, 0.15, 0.05), (0.8, 0.15, 0.05), 0.9, 3.0),
    ]:  # fmt: skip
        for k in (0, len(base) - 1):

            def draw(
                rng: np.random.Generator, inputs: int = inputs, runs: int = runs, base: tuple[float, ...] = base,
                moved: tuple[float, ...] = moved, s: float = s, concentration: float = concentration, k: int = k,
            ) -> Drawn:  # fmt: skip
                pa = rng.dirichlet(np.array(base) * concentration, inputs)
                pb = (1 - s) * pa + s * rng.dirichlet(np.array(moved) * concentration, inputs)
                sides = []
                for probs in (pa, pb):
                    draws = rng.random((inputs, runs))
                    sides.append((draws[:, :, None] > probs.cumsum(axis=1)[:, None, :]).sum(axis=2).clip(0, 2))
                rows = [
                    category_row(v, i, r + 1, f"c{codes[i, r]}")
                    for v, codes in zip("ab", sides, strict=True)
                    for i in range(inputs)
                    for r in range(runs)
                ]
                declared = {("audit", "j"): [f"c{c}" for c in range(len(base))]}
                found = next((d for d in category_differences(rows, declared) if d.category == f"c{k}"), None)
                ya, yb = ((c == k).astype(float) for c in sides)
                refs = difference_references(ya, yb, rng, binary=runs == 1)
                diffs = cluster_means(ya) - cluster_means(yb)
                refs.update(bounded_mean_references(diffs, -1.0, 1.0, rng))
                return _interval_of(found), refs

            truth = s * (base[k] - moved[k])
            name = f"c{k} {inputs}x{runs} a {base} b moved {s} toward {moved} conc {concentration}"
            found.append(Scenario(family="category-difference", name=name, truth=truth, draw=draw))
    return found


# -- session 19: the judge card (self-preference, position consistency, retest, wording, weighted accuracy) ------------


SELF_CANDIDATES = ("gpt-a", "gpt-b", "claude-c", "gemini-d")
"""The judge `gpt-judge`'s own provider's candidates are the first two (speceval reads the family from the name)."""


def self_preference_scenarios() -> list[Scenario]:
    """`self_preference` (the judge card's, from `leniency` rows): two judges, gpt-judge and claude-judge, on four
    candidates' answers to the same inputs; an answer's truth from a probit with an input effect shared by the
    candidates and runs; each judge errs toward compliance at its own rate, gpt-judge more on its own provider's
    candidates (planted: `own` vs `other`); `varying`: gpt-judge's leniency also varies by input (u ~ Beta(2, 2),
    mean kept). Truth: the mean over own candidates of E[gpt-judge's rate] - E[both judges' mean rate], minus the
    same over the others."""
    found = []
    for inputs, runs, rates, own, other, miss, varying in [
        (10, 3, (0.9, 0.85, 0.9, 0.8), 0.3, 0.1, 0.02, False),
        (10, 1, (0.95, 0.95, 0.95, 0.95), 0.0, 0.0, 0.02, False),
        (30, 2, (0.97, 0.95, 0.98, 0.9), 0.5, 0.2, 0.01, True),
        (5, 3, (0.8, 0.7, 0.9, 0.8), 0.4, 0.1, 0.05, False),
        (100, 1, (0.9, 0.9, 0.9, 0.9), 0.2, 0.2, 0.02, True),
        (20, 5, (0.5, 0.6, 0.5, 0.4), 0.3, 0.1, 0.05, True),
    ]:  # fmt: skip
        lenient = {"claude-judge": (0.05, 0.05), "gpt-judge": (own, other)}
        expected = {
            (j, c): p * (1 - miss) + (1 - p) * lenient[j][0 if c < 2 else 1]
            for j in lenient
            for c, p in enumerate(rates)
        }
        deltas = [
            expected[("gpt-judge", c)] - (expected[("gpt-judge", c)] + expected[("claude-judge", c)]) / 2
            for c in range(4)
        ]
        truth = (deltas[0] + deltas[1]) / 2 - (deltas[2] + deltas[3]) / 2

        def draw(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, rates: tuple[float, ...] = rates,
            lenient: dict[str, tuple[float, float]] = lenient, miss: float = miss, varying: bool = varying,
        ) -> Drawn:  # fmt: skip
            shared = rng.normal(size=inputs)
            scale = rng.beta(2, 2, inputs) * 2 if varying else np.ones(inputs)
            verdicts = np.zeros((2, 4, inputs, runs))
            for c, p in enumerate(rates):
                a = NORMAL.inv_cdf(p) * math.sqrt(2.0)
                truth = a + shared[:, None] + rng.normal(size=(inputs, runs)) > 0
                for j, judge in enumerate(("gpt-judge", "claude-judge")):
                    rate = lenient[judge][0 if c < 2 else 1] * (scale[:, None] if judge == "gpt-judge" else 1.0)
                    says = np.where(truth, rng.random((inputs, runs)) >= miss, rng.random((inputs, runs)) < rate)
                    verdicts[j, c] = says
            rows = [
                compliance_row(judge, model, f"st{i % 2}", i, r + 1, bool(verdicts[j, c, i, r]))
                for j, judge in enumerate(("gpt-judge", "claude-judge"))
                for c, model in enumerate(SELF_CANDIDATES)
                for i in range(inputs)
                for r in range(runs)
            ]
            found = self_preference([r for r in leniency(rows) if r.judge == "gpt-judge"]).get("self_preference")
            ours = (
                None
                if found is None or found.ci_low is None or found.ci_high is None
                else (found.ci_low, found.ci_high)
            )
            lean = (verdicts[0] - verdicts.mean(axis=0)).mean(axis=2)  # candidates x inputs
            per_input = lean[:2].mean(axis=0) - lean[2:].mean(axis=0)
            refs: dict[str, Bounds] = {
                "t-input-means": t_on_means(per_input, -1.0, 1.0),
                "cluster-bootstrap": percentile(boot_counts(rng, inputs) @ per_input / inputs),
                **bounded_mean_references(per_input, -1.0, 1.0, rng),
            }
            return ours, refs

        name = f"{inputs}x{runs} rates {rates} gpt-judge lenient {own} own / {other} others" + (
            ", by input" if varying else ""
        )
        found.append(Scenario(family="self-preference", name=name, truth=truth, draw=draw, draws=400))
    return found


def position_scenarios() -> list[Scenario]:
    """`position_consistency` (the judge card's pooled row, `judge_position_consistency`): one pair of candidates, each
    input judged in both orders in every run; an input's chance that a is the better answer s ~ Beta(a, b) (shared
    by its runs), the first-shown answer favoured: a wins shown first with beta + (1 - beta) s, shown second with
    (1 - beta) s. Consistent: the same winner in both orders; truth E[q1 q2 + (1 - q1)(1 - q2)]."""
    found = []
    for inputs, runs, bias, a, b in [
        (10, 3, 0.1, 1.0, 1.0), (5, 2, 0.3, 2.0, 2.0), (30, 1, 0.02, 1.0, 8.0), (20, 5, 0.5, 1.0, 1.0),
        (100, 3, 0.05, 1.0, 20.0), (200, 1, 0.2, 2.0, 5.0), (10, 1, 0.0, 1.0, 30.0),
    ]:  # fmt: skip

        def chance(s: np.ndarray, bias: float = bias) -> np.ndarray:
            q1, q2 = bias + (1 - bias) * s, (1 - bias) * s
            found: np.ndarray = q1 * q2 + (1 - q1) * (1 - q2)
            return found

        def draw(
            rng: np.random.Generator, inputs: int = inputs, runs: int = runs, bias: float = bias, a: float = a,
            b: float = b,
        ) -> Drawn:  # fmt: skip
            s = rng.beta(a, b, inputs)[:, None]
            a_first = rng.random((inputs, runs)) < bias + (1 - bias) * s
            a_second = rng.random((inputs, runs)) < (1 - bias) * s
            rows = [
                RankingRow(
                    spec="audit",
                    judge="j",
                    model_a=first,
                    model_b=second,
                    statement_id=f"st{i % 2}",
                    index=i,
                    input=f"q{i}",
                    outcome="judged",
                    rank=1 if wins else -1,
                    source=f"run{r + 1}.json",
                    run=r + 1,
                )  # fmt: skip
                for i in range(inputs)
                for r in range(runs)
                for first, second, wins in (
                    ("a", "b", bool(a_first[i, r])),
                    ("b", "a", not a_second[i, r]),
                )
            ]
            [row] = judge_position_consistency(rows)
            consistent = (a_first == a_second).astype(float)
            return _interval_of(row), _references_on(consistent, rng)

        truth = beta_expect(chance, a, b)
        name = f"{inputs}x{runs} first-shown bias {bias} s~B({a:g},{b:g})"
        found.append(Scenario(family="position", name=name, truth=truth, draw=draw))
    return found


def card_scenarios() -> list[Scenario]:
    """`retest_agreement`, `wording_flip_rate` and `wording_flip_excess` (the judge card's, `judge_card` on the
    card's verdicts): inputs with `answers` drawn answers each (candidates x runs: one cluster); an input's
    difficulty u ~ Beta(a, b); each answer's first and retest verdicts err (flip the truth) with e = retest_error * u,
    each of `wordings` rewordings with w = wording_error * u. Truths: retest agreement E[(1-e)^2 + e^2], wording flip
    E[e(1-w) + w(1-e)], excess E[e + w - 2ew] - E[2e(1-e)]."""
    found = []
    for inputs, answers, wordings, e, w, a, b in [
        (10, 2, 2, 0.1, 0.2, 1.0, 1.0), (30, 1, 3, 0.02, 0.05, 1.0, 3.0), (5, 3, 1, 0.2, 0.2, 2.0, 2.0),
        (20, 4, 2, 0.0, 0.1, 1.0, 1.0), (100, 2, 2, 0.05, 0.3, 1.0, 5.0), (200, 1, 1, 0.01, 0.01, 1.0, 1.0),
    ]:  # fmt: skip
        truths = {
            "retest": beta_expect(lambda u, e=e: (1 - e * u) ** 2 + (e * u) ** 2, a, b),
            "wording-flip": beta_expect(lambda u, e=e, w=w: e * u * (1 - w * u) + w * u * (1 - e * u), a, b),
            "wording-excess": beta_expect(
                lambda u, e=e, w=w: (e * u + w * u - 2 * e * w * u * u) - 2 * e * u * (1 - e * u), a, b
            ),
        }
        for family, truth in truths.items():

            def draw(
                rng: np.random.Generator, inputs: int = inputs, answers: int = answers, wordings: int = wordings,
                e: float = e, w: float = w, a: float = a, b: float = b, family: str = family,
            ) -> Drawn:  # fmt: skip
                u = rng.beta(a, b, inputs)[:, None]
                truth = rng.random((inputs, answers)) < 0.9
                first = truth ^ (rng.random((inputs, answers)) < e * u)
                retest = truth ^ (rng.random((inputs, answers)) < e * u)
                worded = truth[:, :, None] ^ (rng.random((inputs, answers, wordings)) < (w * u)[:, :, None])
                items = [
                    CardItem(
                        statement_id=f"st{i % 2}",
                        input=f"q{i}",
                        first=bool(first[i, k]),
                        retest=bool(retest[i, k]),
                        wordings=[bool(v) for v in worded[i, k]],
                    )  # fmt: skip
                    for i in range(inputs)
                    for k in range(answers)
                ]
                cards = {("audit", "j"): CardVerdicts("audit", "j", wordings=wordings, items=items)}
                [row] = judge_card([("audit", "j")], [], [], None, [], [], cards, {})
                flip_share = (worded != first[:, :, None]).mean(axis=2)
                retest_flip = (retest != first).astype(float)
                if family == "retest":
                    return _interval_of_estimate(row.retest), _references_on(1.0 - retest_flip, rng)
                if family == "wording-flip":
                    flips = (worded != first[:, :, None]).reshape(inputs, -1).astype(float)
                    return _interval_of_estimate(row.wording_flip), _references_on(flips, rng)
                refs = difference_references(flip_share, retest_flip, rng, binary=False)
                diffs = cluster_means(flip_share) - cluster_means(retest_flip)
                refs.update(bounded_mean_references(diffs, -1.0, 1.0, rng))
                return _interval_of_estimate(row.wording_excess), refs

            name = f"{inputs} inputs x {answers} answers, {wordings} wordings, e={e}u w={w}u u~B({a:g},{b:g})"
            found.append(Scenario(family=family, name=name, truth=truth, draw=draw))
    return found


def _interval_of_estimate(estimate: Estimate) -> Bounds:
    return None if estimate.ci_low is None or estimate.ci_high is None else (estimate.ci_low, estimate.ci_high)


def weighted_accuracy_scenarios() -> list[Scenario]:
    """`human_accuracy_weighted` (`design_weighted_share`, as `pooled_accuracy` calls it with a design): statements
    of unequal size N_h (answers, `per` to an input: one cluster) where the judge is right at a_h, an input's own
    accuracy Beta with mean a_h (its answers alike at icc); the sheet draws n_h labels from statement h at unequal
    rates (inputs drawn, all their answers labelled). Truth: sum_h N_h a_h / N (the planted accuracies)."""
    found = []
    for name, sizes, accuracy, labels, per, icc in [
        ("small statements oversampled", (400, 100, 20), (0.95, 0.8, 0.6), (10, 10, 10), 1, 0.0),
        ("big statement oversampled", (300, 60, 60), (0.99, 0.85, 0.9), (30, 5, 5), 2, 0.3),
        ("big statement oversampled, answers alone", (300, 60, 60), (0.99, 0.85, 0.9), (30, 5, 5), 1, 0.0),
        ("rare errors, 5 labels each", (200, 200, 100, 50), (0.98, 0.97, 0.99, 0.95), (5, 5, 5, 5), 1, 0.0),
        ("exact judge in two", (100, 50, 50), (1.0, 1.0, 0.85), (6, 6, 12), 1, 0.0),
        ("clustered, 3 answers an input", (150, 90, 30), (0.9, 0.7, 0.95), (12, 9, 6), 3, 0.5),
        ("many labels", (600, 300, 100), (0.93, 0.88, 0.75), (60, 40, 40), 1, 0.0),
    ]:  # fmt: skip
        truth = sum(n * a for n, a in zip(sizes, accuracy, strict=True)) / sum(sizes)
        for finite in (False, True):

            def draw(
            rng: np.random.Generator, sizes: tuple[int, ...] = sizes, accuracy: tuple[float, ...] = accuracy,
            labels: tuple[int, ...] = labels, per: int = per, icc: float = icc, finite: bool = finite,
            truth: float = truth,
        ) -> Drawn:  # fmt: skip
                agree, labelled, clusters, strata, lab_y, weights = [], [], [], [], [], []
                start = 0
                for h, (size, a, n) in enumerate(zip(sizes, accuracy, labels, strict=True)):
                    groups = size // per
                    y = beta_binomial_inputs(rng, groups, per, a, icc).astype(bool)
                    chosen = np.zeros(groups, dtype=bool)
                    chosen[rng.choice(groups, min(groups, max(1, n // per)), replace=False)] = True
                    agree.append(y.reshape(-1))
                    labelled.append(np.repeat(chosen, per))
                    clusters.append(np.repeat(np.arange(start, start + groups), per))
                    strata.append(np.full(groups * per, h))
                    lab_y.append(y[chosen].reshape(-1).astype(float))
                    weights.append(groups * per)
                    start += groups
                found = design_weighted_share(
                    np.concatenate(agree), np.concatenate(labelled), np.concatenate(clusters), np.concatenate(strata)
                )
                ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)
                refs = weighted_share_references(lab_y, [w / sum(weights) for w in weights], per, rng)
                if not finite:
                    return ours, refs
                # The judged answers' own accuracy as the truth (what the card says it estimates): every interval
                # moved by planted - realized, so covering the planted truth is covering the realized one.
                shift = truth - float(np.concatenate(agree).mean())
                moved = {k: None if v is None else (v[0] + shift, v[1] + shift) for k, v in refs.items()}
                return (None if ours is None else (ours[0] + shift, ours[1] + shift)), moved

            label = f"{name}, truth the judged answers' own accuracy" if finite else name
            found.append(Scenario(family="human-weighted", name=label, truth=truth, draw=draw))
    return found


def weighted_share_references(
    lab_y: list[np.ndarray], weights: list[float], per: int, rng: np.random.Generator
) -> dict[str, Bounds]:
    """The labels alone at the design's weights W_h: Wilson / Clopper-Pearson / Jeffreys at the Kish size (its
    design effect of the clusters too: the size over `per` answers an input where they are alike counted as the
    inputs when smaller), and a stratified cluster bootstrap (inputs redrawn within each statement)."""
    w = np.concatenate([np.full(len(y), wh / len(y)) for y, wh in zip(lab_y, weights, strict=True)])
    y = np.concatenate(lab_y)
    p = float((w * y).sum() / w.sum())
    kish = float(w.sum()) ** 2 / float((w**2).sum())
    variance = sum(
        wh * wh * float(cluster_means(yh.reshape(-1, per)).var(ddof=1)) / (len(yh) // per)
        for yh, wh in zip(lab_y, weights, strict=True)
        if len(yh) // per > 1
    )
    size = kish if p <= 0 or p >= 1 or variance <= 0 else min(kish, max(len(y) / per, p * (1 - p) / variance))
    found: dict[str, Bounds] = {
        f"labels-only {name}@kish": RATE_REFS[name](p * size, size)
        for name in ("wilson", "clopper-pearson", "jeffreys")
    }
    boot = np.zeros(BOOT)
    for yh, wh in zip(lab_y, weights, strict=True):
        means = cluster_means(yh.reshape(-1, per))
        boot += wh * (boot_counts(rng, len(means)) @ means) / len(means)
    found["stratified-cluster-bootstrap"] = percentile(boot)
    return found


FAMILIES: dict[str, Callable[[], list[Scenario]]] = {
    "pooled": pooled_scenarios,
    "paired": paired_scenarios,
    "leniency": leniency_scenarios,
    "kappa": kappa_scenarios,
    "spearman": spearman_scenarios,
    "spread": spread_scenarios,
    "mean-unranged": mean_scenarios,
    "mean-rating": rating_scenarios,
    "ranking": ranking_scenarios,
    "labelled": labelled_scenarios,
    # session 19
    "conversations": flip_scenarios,
    "first-flip": first_flip_scenarios,
    "category-share": category_scenarios,
    "category-difference": category_difference_scenarios,
    "self-preference": self_preference_scenarios,
    "position": position_scenarios,
    "card": card_scenarios,
    "human-weighted": weighted_accuracy_scenarios,
}


def measure(scenario: Scenario, draws: int, seed: int, uncapped: bool = False) -> Row:
    n = min(draws, scenario.draws) if scenario.draws and not uncapped else draws
    rng = np.random.default_rng([seed, zlib.crc32((scenario.family + scenario.name).encode())])
    covered, widths, none = 0, [], 0
    ref_hits: dict[str, int] = {}
    ref_widths: dict[str, list[float]] = {}
    for _ in range(n):
        ours, refs = scenario.draw(rng)
        if ours is None:
            none += 1
        else:
            covered += ours[0] - 1e-12 <= scenario.truth <= ours[1] + 1e-12
            widths.append(ours[1] - ours[0])
        for name, bounds in refs.items():
            ref_hits.setdefault(name, 0)
            ref_widths.setdefault(name, [])
            if bounds is not None:
                ref_hits[name] += bounds[0] - 1e-12 <= scenario.truth <= bounds[1] + 1e-12
                ref_widths[name].append(bounds[1] - bounds[0])
    defined = n - none
    coverage = covered / defined if defined else None
    mc_se = None if coverage is None else math.sqrt(max(coverage * (1 - coverage), 1e-9) / defined)
    width = float(np.mean(widths)) if widths else None
    references = {k: (ref_hits[k] / n, float(np.mean(v)) if v else None) for k, v in ref_widths.items()}
    valid = [(w, k) for k, (c, w) in references.items() if c >= LOW and w is not None and w > 0]
    best, ratio = None, None
    if valid:
        best_width, best = min(valid)
        ratio = None if width is None else width / best_width
    flags = []
    if coverage is not None and coverage < LOW:
        flags.append("LOW")
    if ratio is not None and ratio > WIDE:
        flags.append("WIDE")
    if none / n > NONE_SHARE:
        flags.append("NONE")
    return Row(
        family=scenario.family, name=scenario.name, truth=scenario.truth, draws=n, coverage=coverage, mc_se=mc_se,
        none_share=none / n, width=width, references=references, best=best, ratio=ratio, flags=flags,
    )  # fmt: skip


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_row(row: Row, verbose: bool) -> None:
    best = row.references.get(row.best or "", (None, None))
    print(
        f"{row.family:13} {row.name:58} truth {row.truth:+.3f} n={row.draws:4}"
        f" cover {_fmt(row.coverage)}±{_fmt(row.mc_se)}"
        f" none {row.none_share:.2f} width {_fmt(row.width)} | best {row.best or '-'} {_fmt(best[0])}/{_fmt(best[1])}"
        f" ratio {_fmt(row.ratio, 2)} {' '.join(row.flags)}",
        flush=True,
    )
    if verbose:
        for name, (c, w) in row.references.items():
            print(f"{'':15}{name:36} cover {c:.3f} width {_fmt(w)}")


def markdown(rows: list[Row]) -> str:
    """The rows as RESULTS.md prints them: one line a scenario, the narrowest covering reference named."""
    lines = [
        "| family | scenario | truth | draws | coverage ± MC SE | no interval | mean width "
        "| narrowest reference covering ≥ 0.93: width (coverage) | width ÷ it | flags |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.family == "plan-power":
            cells = [r.family, r.name, "power ≥ 0.77", str(r.draws), f"{_fmt(r.coverage)} ± {_fmt(r.mc_se)}"]
            lines.append("| " + " | ".join(cells + ["", "", "", "", " ".join(r.flags)]) + " |")
            continue
        best = f"{r.best}: {_fmt(r.references[r.best][1])} ({r.references[r.best][0]:.3f})" if r.best else "none covers"
        cells = [
            r.family, r.name, f"{r.truth:.4f}", str(r.draws), f"{_fmt(r.coverage)} ± {_fmt(r.mc_se)}",
            f"{r.none_share:.2f}", _fmt(r.width), best, _fmt(r.ratio, 2), " ".join(r.flags),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1000, help="draws a scenario (costly families take fewer)")
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--family", action="append", help=f"one of {', '.join([*FAMILIES, 'plan-power'])}")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the rows here as a markdown table (RESULTS.md's)")
    parser.add_argument("--uncapped", action="store_true", help="every row at --draws (costly rows are capped)")
    parser.add_argument("--only", help="only scenarios whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="print every reference's coverage and width")
    args = parser.parse_args(argv)
    chosen = args.family or [*FAMILIES, "plan-power"]
    unknown = [f for f in chosen if f not in FAMILIES and f != "plan-power"]
    if unknown:
        parser.error(f"unknown family {unknown}; choose from {', '.join([*FAMILIES, 'plan-power'])}")
    rows: list[Row] = []
    start = time.perf_counter()
    for family in chosen:
        if family == "plan-power":
            for row in plan_rows(args.draws, args.seed):
                rows.append(row)
                print(
                    f"plan-power    {row.name:80} power {row.coverage:.3f}±{_fmt(row.mc_se)} {' '.join(row.flags)}",
                    flush=True,
                )
            continue
        for scenario in FAMILIES[family]():
            if args.only and args.only not in scenario.name:
                continue
            rows.append(measure(scenario, args.draws, args.seed, args.uncapped))
            print_row(rows[-1], args.verbose)
    flagged = [r for r in rows if r.flags]
    print(f"\n{len(rows)} rows, {len(flagged)} flagged, {time.perf_counter() - start:.0f} s (synthetic data)")
    for r in flagged:
        print(
            f"  FLAG {' '.join(r.flags):10} {r.family}: {r.name} cover {_fmt(r.coverage)}"
            f" ratio {_fmt(r.ratio, 2)} none {r.none_share:.2f}"
        )
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(markdown(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump([r.model_dump() for r in rows], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How precise a planned experiment will be, before it is paid for (`speceval run --dry-run`).

Pure arithmetic on stated assumptions, no data: a base compliance rate `p`, an intra-input correlation `icc` (how
alike two answers to the same input are, beyond the rate: inputs differ in difficulty), `n` inputs and `m` runs
per input. Answers to one input are a cluster, so `m` runs are worth `m / (1 + (m - 1) * icc)` independent answers
(the design effect, Kish 1965); a rate over `n` inputs has the standard error `sqrt(p (1 - p) * deff / (n m))`.

The 95% interval half-width is 1.96 standard errors (the normal approximation the clustered intervals of the
report reduce to for large n). The minimum detectable difference between two candidates (or two variations) is
the smallest difference at which the report's own paired interval (MOVER on Wilson limits, the one
paired_comparisons.csv prints) excludes 0 with 80% probability, each rate at its own value (the assumed rate and
the assumed rate minus, or plus, the difference: the larger of the two directions' differences), the two
candidates' answers independent of each other given the clustering (no credit for pairing: when inputs are hard for
both candidates alike, the paired interval is narrower than planned). Issue 47: (1.96 + 0.84) standard errors at
the assumed rate for both sides promised 0.80 and gave 0.64-0.71 with the report's interval. References: Miller
2024, "Adding error bars to evals" (arXiv:2411.00640), sections 2-4; Donner & Klar 2000 for the design effect.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.statistics.paired import mover_correlations, side_limits

Z_95 = 1.959963984540054  # two-sided 5% test, 95% interval
Z_80 = 0.8416212335729143  # 80% power
POWER = 0.80
EXACT_TABLES = 60
"""Up to this many inputs of one run the plan's power sums over every 2x2 table of the two sides' verdicts (the
report's estimated correlation included, `_exact_table_power`)."""
EXACT_INPUTS = 300
"""Up to this many inputs of one run the plan's power is enumerated exactly (every pair of counts); above, and
over several runs, it takes the normal approximation around the report's own limits."""

DEFAULT_RATE = 0.8
"""Assumed compliance rate when none is given: rates near 0.5 are the least precise, near 0 or 1 the most."""
DEFAULT_ICC = 0.3
"""Assumed intra-input correlation when none is given: answers to one input agree more often than chance; 0.3 is a
middle value for repeated samples of one model on one prompt (0: runs are independent; 1: a rerun adds nothing)."""


DEFAULT_CONTINUE = 0.9
"""Assumed share of conversations that reach each next turn: a simulated user may stop early (issue 42's study: 80
of its conversations ended at turn 1, 28 at turn 4); scripted follow-ups always continue, so this errs narrow for
them only where a candidate's answer ends the conversation."""


def reached(inputs: int, turn: int, continue_rate: float) -> int:
    """Expected conversations (of `inputs`) that reach `turn` (1-based) when each goes on with `continue_rate`."""
    return max(1, int(inputs * continue_rate ** (turn - 1)))


class Assumptions(BaseModel):
    """What a precision plan assumes (printed with it)."""

    rate: float = Field(default=DEFAULT_RATE, gt=0, lt=1, description="the compliance rate the plan is made at")
    icc: float = Field(default=DEFAULT_ICC, ge=0, le=1, description="intra-input correlation of answers")
    continue_rate: float = Field(
        default=DEFAULT_CONTINUE,
        gt=0,
        le=1,
        description="share of conversations that go on to each next turn (the rest end early), independent of "
        "compliance; turn t is reached by continue_rate^(t-1) of them",
    )
    confidence: float = Field(default=0.95, description="interval level (fixed)")
    power: float = Field(default=0.80, description="power of the difference test (fixed)")


def design_effect(runs: int, icc: float) -> float:
    """How much clustering `runs` answers per input inflates a rate's variance: 1 + (runs - 1) * icc."""
    return 1.0 + (runs - 1) * icc


def rate_standard_error(rate: float, inputs: int, runs: int, icc: float) -> float:
    """Standard error of a compliance rate over `inputs` inputs × `runs` runs each."""
    if inputs < 1 or runs < 1:
        raise ValueError("a rate needs at least one input and one run")
    return math.sqrt(rate * (1.0 - rate) * design_effect(runs, icc) / (inputs * runs))


def rate_half_width(rate: float, inputs: int, runs: int, icc: float) -> float:
    """Expected half-width of the rate's 95% interval."""
    return Z_95 * rate_standard_error(rate, inputs, runs, icc)


def difference_standard_error(rate: float, inputs: int, runs: int, icc: float) -> float:
    """Standard error of the difference of two rates both at `rate` over the same inputs (no credit for pairing)."""
    return math.sqrt(2.0) * rate_standard_error(rate, inputs, runs, icc)


def report_power(rate_a: float, rate_b: float, inputs: int, runs: int, icc: float) -> float:
    """Power of the report's own test: the probability that the paired difference's printed interval (MOVER on
    Wilson limits at each side's effective size, `speceval.analysis.statistics.paired`) excludes 0 when the two
    candidates' true rates are `rate_a` and `rate_b`, their answers independent of each other (no credit for
    pairing), clustered by input at `icc`. The interval's lower limit is d - w, w the MOVER half-width from each
    side's Wilson limits at its own rate (not both at one assumed rate), on t(inputs - 1) over several runs; the
    estimate d is normal with both rates' own variances times the design effect. Checked by simulation in
    benchmarks/coverage_matrix.py (section "precision plan")."""
    high, low = max(rate_a, rate_b), min(rate_a, rate_b)
    if runs == 1 and inputs <= EXACT_TABLES:
        return _exact_table_power(high, low, inputs)
    if runs == 1 and inputs <= EXACT_INPUTS:
        return _exact_one_run_power(high, low, inputs)
    count = inputs * runs
    effective = float(count) if runs == 1 else count / design_effect(runs, icc)
    df = None if runs == 1 else max(1, inputs - 1)
    low_a, _ = side_limits(high, effective, df)
    _, high_b = side_limits(low, effective, df)
    width = math.sqrt((high - low_a) ** 2 + (high_b - low) ** 2)
    se = math.sqrt((high * (1 - high) + low * (1 - low)) * design_effect(runs, icc) / count)
    if se <= 0:
        return 1.0 if high - low > width else 0.0
    return 0.5 * (1.0 + math.erf((high - low - width) / se / math.sqrt(2.0)))


def _exact_one_run_power(high: float, low: float, n: int) -> float:
    """`report_power` for one run by enumeration of both sides' counts (independent binomials): the report's
    interval, MOVER on each count's Wilson limits with correlation 0, excludes 0 at counts (a, b) when
    a/n - b/n - w(a, b) > 0 or the mirror; at 20 inputs the normal approximation promised 0.80 and gave 0.745."""
    k = np.arange(n + 1)
    rates = k / n
    limits = np.array([side_limits(float(r), float(n), None) for r in rates])
    below, above = rates - limits[:, 0], limits[:, 1] - rates
    d = rates[:, None] - rates[None, :]
    # The report's correlation is estimated: independent sides give a sample phi of about +-1/sqrt(n), and a
    # negative one widens the interval more than a positive one narrows it; it is taken at -1/sqrt(n).
    r = -1.0 / math.sqrt(n)
    lower = d - np.sqrt(below[:, None] ** 2 - 2 * r * below[:, None] * above[None, :] + above[None, :] ** 2)
    upper = d + np.sqrt(above[:, None] ** 2 - 2 * r * above[:, None] * below[None, :] + below[None, :] ** 2)
    rejects = (lower > 0) | (upper < 0)
    weights = np.outer(_binomial(n, high), _binomial(n, low))
    return float((weights * rejects).sum())


def _exact_table_power(high: float, low: float, n: int) -> float:
    """`report_power` for one run by enumeration of every 2x2 table of the two sides' verdicts on `n` shared inputs
    (independent sides: a multinomial), with the correlation the report estimates from that table (phi, 0 for a
    constant side, capped at 1 - 1/n). The counts alone (`_exact_one_run_power`, phi taken at -1/sqrt(n)) put the
    power at 0.80 where a simulation of the report's interval gave 0.845 (20 inputs, 0.8 against 0.326)."""
    grid = np.indices((n + 1, n + 1, n + 1)).reshape(3, -1)
    both, only_a, only_b = grid[:, grid.sum(axis=0) <= n]
    neither = n - both - only_a - only_b
    cells = (high * low, high * (1 - low), (1 - high) * low, (1 - high) * (1 - low))
    log_factorial = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    log_weight = log_factorial[n] - sum(log_factorial[c] for c in (both, only_a, only_b, neither))
    for count, p in zip((both, only_a, only_b, neither), cells, strict=True):
        log_weight = log_weight + (count * math.log(p) if p > 0 else np.where(count > 0, -np.inf, 0.0))
    ka, kb = both + only_a, both + only_b
    rates = np.arange(n + 1) / n
    limits = np.array([side_limits(float(r), float(n), None) for r in rates])
    below, above = rates - limits[:, 0], limits[:, 1] - rates
    spread = np.sqrt(ka * (n - ka) * kb * (n - kb).astype(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(spread > 0, (both * neither - only_a * only_b) / spread, 0.0)
    r = mover_correlations(np.clip(phi, -1.0, 1.0 - 1.0 / n), n)  # as the report's interval takes it
    d = (ka - kb) / n
    lower = d - np.sqrt(np.maximum(0.0, below[ka] ** 2 - 2 * r * below[ka] * above[kb] + above[kb] ** 2))
    upper = d + np.sqrt(np.maximum(0.0, above[ka] ** 2 - 2 * r * above[ka] * below[kb] + below[kb] ** 2))
    return float((np.exp(log_weight) * ((lower > 0) | (upper < 0))).sum())


def _binomial(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)])
    found: np.ndarray = np.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))
    return found


@functools.lru_cache(maxsize=256)
def minimum_detectable_difference(rate: float, inputs: int, runs: int, icc: float) -> float | None:
    """The smallest difference d that the report's interval detects with 80% power in both directions from the
    assumed rate: `rate` against `rate` - d and `rate` + d against `rate` (a direction off [0, 1] is left out);
    None when no difference within [0, 1] reaches 80%."""

    def power(d: float) -> float:
        found = [report_power(rate, rate - d, inputs, runs, icc)] if rate - d > 0 else []
        found += [report_power(rate + d, rate, inputs, runs, icc)] if rate + d < 1 else []
        return min(found) if found else 0.0

    # Power grows with d: a coarse scan by 0.01 finds the first step that reaches it, a fine one by 0.001 the
    # smallest d within the step before (110 evaluations at most, not 1,000: the table sum costs ~0.05 s at 60).
    coarse = next((k / 100 for k in range(1, 100) if power(k / 100) >= POWER), None)
    if coarse is None:
        return None
    fine = round(coarse - 0.01, 3)
    while fine < coarse:
        fine = round(fine + 0.001, 3)
        if fine > 0 and power(fine) >= POWER:
            return fine
    return coarse


class PairPlan(BaseModel):
    """The precision of one planned comparison (two candidates in one variation, or two variations of one
    candidate), both over the same inputs."""

    spec: str
    compared: str = Field(
        description="`candidates`, `variations`, `rate` (one candidate, one variation), `turn T rate` (the last "
        "turn of a conversation variation, over the conversations expected to reach it) or `flips` (over those "
        "that reach turn 2, at the assumed non-compliance rate)"
    )
    a: str
    b: str
    within: str = Field(description="the variation (candidates compared) or the candidate (variations compared)")
    inputs: int
    runs: int
    design_effect: float
    rate_half_width: float = Field(description="expected half-width of each rate's 95% interval")
    minimum_detectable_difference: float | None = Field(
        description="at 80% power of the report's own interval excluding 0, in both directions from the assumed "
        "rate (None: no difference within [0, 1] reaches it)"
    )


def pair_plan(
    spec: str, compared: str, a: str, b: str, within: str, inputs: int, runs: int, assumptions: Assumptions
) -> PairPlan:
    """The plan of one comparison under `assumptions`."""
    rate, icc = assumptions.rate, assumptions.icc
    return PairPlan(
        spec=spec,
        compared=compared,
        a=a,
        b=b,
        within=within,
        inputs=inputs,
        runs=runs,
        design_effect=design_effect(runs, icc),
        rate_half_width=rate_half_width(rate, inputs, runs, icc),
        minimum_detectable_difference=minimum_detectable_difference(rate, inputs, runs, icc),
    )

"""How precise a planned experiment will be, before it is paid for (`speceval run --dry-run`).

Pure arithmetic on stated assumptions, no data: a base compliance rate `p`, an intra-input correlation `icc` (how
alike two answers to the same input are, beyond the rate: inputs differ in difficulty), `n` inputs and `m` runs
per input. Answers to one input are a cluster, so `m` runs are worth `m / (1 + (m - 1) * icc)` independent answers
(the design effect, Kish 1965); a rate over `n` inputs has the standard error `sqrt(p (1 - p) * deff / (n m))`.

The 95% interval half-width is 1.96 standard errors (the normal approximation the clustered intervals of the
report reduce to for large n). The minimum detectable difference between two candidates (or two variations) at
80% power and a two-sided 5% test is (1.96 + 0.84) standard errors of the difference; the two rates are taken as
uncorrelated beyond their inputs' clusters (no credit for pairing: when inputs are hard for both candidates alike,
the paired test does better than planned, never worse). References: Miller 2024, "Adding error bars to evals"
(arXiv:2411.00640), sections 2-4; Donner & Klar 2000 for the design effect.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

Z_95 = 1.959963984540054  # two-sided 5% test, 95% interval
Z_80 = 0.8416212335729143  # 80% power

DEFAULT_RATE = 0.8
"""Assumed compliance rate when none is given: rates near 0.5 are the least precise, near 0 or 1 the most."""
DEFAULT_ICC = 0.3
"""Assumed intra-input correlation when none is given: answers to one input agree more often than chance; 0.3 is a
middle value for repeated samples of one model on one prompt (0: runs are independent; 1: a rerun adds nothing)."""


class Assumptions(BaseModel):
    """What a precision plan assumes (printed with it)."""

    rate: float = Field(default=DEFAULT_RATE, gt=0, lt=1, description="the compliance rate the plan is made at")
    icc: float = Field(default=DEFAULT_ICC, ge=0, le=1, description="intra-input correlation of answers")
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
    """Standard error of the difference of two rates over the same inputs (no credit for pairing)."""
    return math.sqrt(2.0) * rate_standard_error(rate, inputs, runs, icc)


def minimum_detectable_difference(rate: float, inputs: int, runs: int, icc: float) -> float:
    """The smallest difference of two rates a two-sided 5% test detects with 80% power."""
    return (Z_95 + Z_80) * difference_standard_error(rate, inputs, runs, icc)


class PairPlan(BaseModel):
    """The precision of one planned comparison (two candidates in one variation, or two variations of one
    candidate), both over the same inputs."""

    spec: str
    compared: str = Field(description="`candidates` or `variations`")
    a: str
    b: str
    within: str = Field(description="the variation (candidates compared) or the candidate (variations compared)")
    inputs: int
    runs: int
    design_effect: float
    rate_half_width: float = Field(description="expected half-width of each rate's 95% interval")
    minimum_detectable_difference: float = Field(description="at 80% power, two-sided 5% test")


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

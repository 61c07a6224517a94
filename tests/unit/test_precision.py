"""The precision plan's arithmetic against a seeded simulation of clustered answers (beta-binomial: each input has
its own compliance probability, drawn so that two answers to one input correlate by the ICC)."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.experiments.precision import (
    Z_95,
    design_effect,
    rate_half_width,
)

REPLICATES = 4000
TOLERANCE = 0.05  # relative: the simulated SD of 4,000 replicates is itself within ~1% (one SE) of its truth


def _rates(rng: np.random.Generator, rate: float, inputs: int, runs: int, icc: float, size: int) -> np.ndarray:
    """`size` simulated experiments' observed rates (all answers pooled)."""
    if icc == 0:
        per_input = np.full((size, inputs), rate)
    else:
        concentration = 1.0 / icc - 1.0
        per_input = rng.beta(rate * concentration, (1.0 - rate) * concentration, size=(size, inputs))
    complied = rng.binomial(runs, per_input)
    return complied.sum(axis=1) / (inputs * runs)


@pytest.mark.parametrize(("rate", "inputs", "runs", "icc"), [(0.8, 40, 3, 0.3), (0.5, 100, 1, 0.0), (0.9, 60, 5, 0.1)])
def test_planned_half_width_matches_the_simulated_one(rate: float, inputs: int, runs: int, icc: float) -> None:
    rng = np.random.default_rng(20261127)
    simulated = Z_95 * _rates(rng, rate, inputs, runs, icc, REPLICATES).std(ddof=1)
    assert rate_half_width(rate, inputs, runs, icc) == pytest.approx(simulated, rel=TOLERANCE)


def test_more_runs_help_less_the_more_alike_answers_to_one_input_are() -> None:
    assert design_effect(1, 0.9) == 1.0 and design_effect(3, 0.3) == pytest.approx(1.6)
    assert rate_half_width(0.8, 40, 4, 1.0) == pytest.approx(rate_half_width(0.8, 40, 1, 0.0))
    assert rate_half_width(0.8, 40, 4, 0.0) == pytest.approx(rate_half_width(0.8, 160, 1, 0.0))

"""Coverage scenarios of the flip measures of `flip_survival.csv` (turn_of_first_flip, flips_per_conversation).

Each input has its own hazard of giving way per turn (Beta-distributed around the scenario's mean, so runs of one
input are correlated, as repeated runs are); every conversation starts compliant, recovers from a non-compliant
turn with probability 0.3, and ends at a uniformly drawn turn 2..T (shorter conversations censored). The survival
truth is exact: S(t) = E[(1 - h)^(t - 1)] = B(a, b + t - 1) / B(a, b); the flips-per-conversation truth is a
40,000-conversation Monte-Carlo mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from benchmarks.coverage_scenarios import Drawn, Scenario
from speceval.analysis.statistics.clustered import bounded_mean_interval_codes, codes_of
from speceval.analysis.statistics.survival import survival_intervals

RECOVER = 0.3
SPREAD = 10.0
"""a + b of each input's Beta hazard: an intra-input correlation of about 1/11."""


def _simulate(
    rng: np.random.Generator, inputs: int, runs: int, hazard: float, turns: int
) -> tuple[list[int], list[bool], list[int], list[int]]:
    """(time, flipped, transitions, input) per conversation."""
    hazards = rng.beta(hazard * SPREAD, (1 - hazard) * SPREAD, inputs)
    times, flipped, transitions, owners = [], [], [], []
    for i in range(inputs):
        for _ in range(runs):
            length = int(rng.integers(2, turns + 1))
            compliant, first, count = True, None, 0
            for turn in range(2, length + 1):
                if compliant and rng.random() < hazards[i]:
                    compliant, count = False, count + 1
                    first = turn if first is None else first
                elif not compliant and rng.random() < RECOVER:
                    compliant = True
            times.append(first if first is not None else length)
            flipped.append(first is not None)
            transitions.append(count)
            owners.append(i)
    return times, flipped, transitions, owners


def survival_scenario(
    inputs: int, runs: int, hazard: float, turns: int, bootstrap: int
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Truth and draw of S(turns): the last turn, where censoring has thinned the risk set most."""
    a, b = hazard * SPREAD, (1 - hazard) * SPREAD
    k = turns - 1
    truth = math.exp(math.lgamma(b + k) + math.lgamma(a + b) - math.lgamma(b) - math.lgamma(a + b + k))

    def draw(rng: np.random.Generator) -> Drawn:
        times, flipped, _, owners = _simulate(rng, inputs, runs, hazard, turns)
        seed = int(rng.integers(0, 2**31))
        _, bands = survival_intervals(times, flipped, owners, [turns], bootstrap, seed)
        return bands[0], None

    return truth, draw


def per_conversation_scenario(
    inputs: int, runs: int, hazard: float, turns: int
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Truth and draw of the mean compliant → non-compliant transitions per conversation (the table's bound)."""
    big = _simulate(np.random.default_rng(12345), 40_000 // runs, runs, hazard, turns)[2]
    truth = float(np.mean(big))
    most = float(max(1, turns // 2))

    def draw(rng: np.random.Generator) -> Drawn:
        _, _, counts, owners = _simulate(rng, inputs, runs, hazard, turns)
        codes, _ = codes_of(owners)
        return bounded_mean_interval_codes(np.asarray(counts, dtype=float), codes, (0.0, most)), None

    return truth, draw


def flip_scenarios(bootstrap: int) -> list[Scenario]:
    """Small n and extreme hazards (0.02: nearly nothing flips; 0.5: most do), one to three runs per input."""
    found = []
    for inputs, runs, hazard, turns in ((8, 3, 0.02, 4), (10, 3, 0.5, 3), (20, 2, 0.15, 4), (30, 1, 0.3, 5)):
        label = f"{inputs} inputs x {runs} runs, hazard {hazard} per turn, conversations end at turn 2..{turns}"
        truth, draw = survival_scenario(inputs, runs, hazard, turns, bootstrap)
        found.append(
            Scenario(
                "flip-survival",
                ("flip_survival",),
                f"S({turns}), {label} ({bootstrap}-draw bootstrap)",
                truth,
                draw,
                cost=max(1, bootstrap // 25),
            )
        )
        truth, draw = per_conversation_scenario(inputs, runs, hazard, turns)
        found.append(Scenario("flips-per-conversation", ("flips_per_conversation",), label, truth, draw))
    return found

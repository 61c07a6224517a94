"""Paired differences where an input's runs are one verdict repeated (temperature 0): coverage and mean width of
`paired_difference` against a planted truth, one side often always compliant (session 20: a draw where no answer
differed took its bound at the count of answers and missed). Synthetic data.

    python benchmarks/paired_identical_runs.py [--draws 2000] [--seed 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from speceval.analysis.statistics.paired import paired_difference_codes  # noqa: E402

DESIGNS = (  # (inputs, runs, rate of A, rate of B, identical runs)
    (10, 3, 0.8, 1.0, True),
    (30, 5, 0.95, 1.0, True),
    (30, 5, 0.85, 0.97, True),
    (20, 3, 0.8, 0.95, True),
    (10, 3, 0.9, 0.97, True),
    (10, 3, 1.0, 1.0, True),
    (10, 3, 0.97, 0.99, True),
    (10, 3, 0.97, 0.99, False),
    (20, 3, 0.97, 1.0, False),
)


def trial(rng: np.random.Generator, draws: int, inputs: int, runs: int, ra: float, rb: float, identical: bool) -> str:
    hits, width = 0, 0.0
    codes = np.repeat(np.arange(inputs), runs)
    for _ in range(draws):
        if identical:  # each input's verdict drawn once and repeated over its runs, the sides independent
            a = np.repeat((rng.random(inputs) < ra).astype(float), runs)
            b = np.repeat((rng.random(inputs) < rb).astype(float), runs)
        else:
            a = (rng.random(inputs * runs) < ra).astype(float)
            b = (rng.random(inputs * runs) < rb).astype(float)
        found = paired_difference_codes(codes, b, codes, a, np.arange(inputs) % 2)
        assert found.ci_low is not None and found.ci_high is not None
        hits += found.ci_low <= rb - ra <= found.ci_high
        width += found.ci_high - found.ci_low
    kind = "identical" if identical else "independent"
    return f"{inputs}x{runs} {kind} A {ra} B {rb}: coverage {hits / draws:.3f} width {width / draws:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for design in DESIGNS:
        print(trial(rng, args.draws, *design), flush=True)


if __name__ == "__main__":
    main()

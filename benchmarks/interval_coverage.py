"""Coverage of the report's 95% intervals on synthetic experiments with planted compliance probabilities.

    python benchmarks/interval_coverage.py [--draws 4000] [--seed 11] [--categories]

Prints one markdown row per interval: the design, the share of experiments whose interval held the truth, and the
binomial standard error of that share. The designs are those of tests/analysis/test_coverage.py (which uses 500
draws); see speceval/analysis/simulation.py for the planted model. `--categories` prints instead the coverage of a
categorical judge's shares and paired differences between variations (the design of the category tests).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from speceval.analysis.simulation import (
    CategoryDesign,
    Design,
    Interval,
    by_statement,
    category_coverage,
    coverage,
    naive,
    paired,
    pooled,
)


def designs() -> list[tuple[str, Design, Interval, float]]:
    """(description, design, interval, truth) for every interval the report uses, and the naive one."""
    rng = np.random.default_rng(7)
    logits = tuple(tuple(float(x) for x in rng.uniform(-0.5, 2.0, 10)) for _ in range(2))
    rows = []
    for input_sd, runs in ((1.0, 3), (2.0, 3), (2.0, 5)):
        design = Design(logits=logits, inputs_per_statement=8, runs=runs, input_sd=input_sd)
        shape = f"2 candidates × 10 fixed statements × 8 inputs × {runs} runs, input SD {input_sd}"
        rows += [
            (f"pooled rate, clustered by input (stratified); {shape}", design, pooled(0), design.truth(0)),
            (f"paired difference of the candidates; {shape}", design, paired(0, 1), design.truth(0) - design.truth(1)),
            (f"naive Wilson over all verdicts (old report); {shape}", design, naive(0), design.truth(0)),
        ]
    single = Design(logits=logits, inputs_per_statement=8, runs=1)
    rows.append(("one run, Wilson; 10 fixed statements × 8 inputs", single, pooled(1), single.truth(1)))
    for statements in (10, 30):
        random = Design(logits=((0.8,) * statements,), inputs_per_statement=4, runs=2, statement_sd=0.8)
        rows.append(
            (
                f"rate clustered by statement; {statements} random statements × 4 inputs × 2 runs",
                random,
                by_statement(0),
                random.truth(0),
            )
        )
    return rows


def category_design() -> CategoryDesign:
    """tests/analysis/test_coverage.py's design: 4 categories (the last rare, ≈ 1.4%), 6 statements × 8 inputs × 3
    runs, a second variation shifted towards category 1."""
    rng = np.random.default_rng(5)
    base = [(*(float(x) for x in rng.uniform(-1, 1, 3)), -3.5) for _ in range(6)]
    shifted = [(b[0], b[1] + 0.8, b[2], b[3]) for b in base]
    return CategoryDesign(logits=(tuple(base), tuple(shifted)), inputs_per_statement=8, runs=3)


def categories(draws: int, seed: int) -> None:
    design = category_design()
    print(
        f"| categorical judge, 4 categories, 6 fixed statements × 8 inputs × 3 runs, 2 variations | truth | "
        f"coverage of 95% interval ({draws} experiments) | ± SE |"
    )
    print("|---|---|---|---|")
    for name, share in category_coverage(design, draws, seed).items():
        kind, variations, category = name.split()
        k = int(category[1:])
        truth = (
            design.truth(0, k) - design.truth(1, k) if kind == "difference" else design.truth(int(variations[1:]), k)
        )
        print(f"| {name} | {truth:.3f} | {share:.3f} | {math.sqrt(share * (1 - share) / draws):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--categories", action="store_true", help="categorical shares and their differences")
    args = parser.parse_args()
    if args.categories:
        started = time.monotonic()
        categories(args.draws, args.seed)
        print(f"\n{time.monotonic() - started:.0f} s")
        return
    print(f"| interval and design | coverage of 95% interval ({args.draws} experiments) | ± SE |")
    print("|---|---|---|")
    started = time.monotonic()
    for description, design, interval, truth in designs():
        share = coverage(design, interval, truth, args.draws, args.seed)
        print(f"| {description} | {share:.3f} | {math.sqrt(share * (1 - share) / args.draws):.3f} |", flush=True)
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()

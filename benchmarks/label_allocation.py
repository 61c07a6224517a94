"""Labels where they pay (issue 44): how many labels Neyman's allocation needs for the PPI half-width proportional
allocation gets, at equal coverage.

    python benchmarks/label_allocation.py [--draws 300] [--seeds 3]

A judge errs where statements are hard: of 20 statements of 1,000 answers each, the headline judge gets 45% wrong on
one and 0.5% on the others (the planted truth: each statement's compliance rate); a second judge errs alike,
independently. Proportional allocation gives every statement n/20 labels; Neyman's (`speceval label-sheet
--allocation neyman`) gives them ∝ N_h · S_h, the spreads estimated from the two judges' disagreement on every answer
(`shrunk_spread`), as the command does without `--pilot`. For each, labels
are drawn by the command's own code (`allocate`, `pick_allocated`) and the rate estimated by the report's stratified
PPI (`stratified_ppi`). Printed: proportional's mean half-width at n = 200, the smallest Neyman n (60 to 400, step
10) whose mean half-width is at most that, their ratio, and both coverages; per seed, then min/median/max of the
ratio over seeds. Synthetic data throughout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from speceval.analysis.statistics.ppi import stratified_ppi  # noqa: E402
from speceval.analysis.tables.label_sampling import allocate, pick_allocated, shrunk_spread  # noqa: E402

STATEMENTS, ANSWERS = 20, 1000
ERRORS = (0.45,) + (0.005,) * (STATEMENTS - 1)
RATES = tuple(0.5 + 0.02 * h for h in range(STATEMENTS))
BASELINE_N = 200


def _population(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """(the headline judge's verdicts f, a second judge's, human truth y, statement of each answer, planted rate)."""
    strata = np.repeat(np.arange(STATEMENTS), ANSWERS)
    y = rng.random(len(strata)) < np.asarray(RATES)[strata]
    judges = [np.where(rng.random(len(strata)) < np.asarray(ERRORS)[strata], ~y, y).astype(float) for _ in range(2)]
    return judges[0], judges[1], y.astype(float), strata, float(np.mean(RATES))


def _draw(rng: np.random.Generator, n: int, neyman: bool) -> tuple[float, bool] | None:
    """One data set and one sheet of n labels: (half-width, covered)."""
    f, other, y, strata, truth = _population(rng)
    keys = {h: ("s", f"st{h}") for h in range(STATEMENTS)}
    items = {keys[h]: np.flatnonzero(strata == h) for h in range(STATEMENTS)}
    population = {key: len(found) for key, found in items.items()}
    spreads = None
    if neyman:  # the judges' disagreement per statement, as `statement_spreads` counts it without a pilot
        differ = np.bincount(strata, weights=(f != other).astype(float), minlength=STATEMENTS)
        spreads = {key: shrunk_spread(int(differ[h]), population[key], panel=True) for h, key in keys.items()}
    chosen = pick_allocated(items, allocate(population, n, spreads), int(rng.integers(1 << 31)))
    labelled = np.zeros(len(f), dtype=bool)
    labelled[np.asarray(chosen, dtype=int)] = True
    found = stratified_ppi(f, y, labelled, np.arange(len(f)), strata)
    if found.ci_low is None or found.ci_high is None:
        return None
    return (found.ci_high - found.ci_low) / 2, found.ci_low <= truth <= found.ci_high


def _measure(seed: int, n: int, neyman: bool, draws: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    results = [r for r in (_draw(rng, n, neyman) for _ in range(draws)) if r is not None]
    return float(np.mean([h for h, _ in results])), sum(c for _, c in results) / len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    ratios = []
    for seed in range(args.seeds):
        half, cover = _measure(seed, BASELINE_N, False, args.draws)
        needed, found = None, (0.0, 0.0)
        for n in range(60, 2 * BASELINE_N + 1, 10):
            found = _measure(seed + 1000, n, True, args.draws)
            if found[0] <= half:
                needed = n
                break
        if needed is None:
            print(f"seed {seed}: proportional n={BASELINE_N} half-width {half:.4f}; neyman never matched it")
            continue
        ratios.append(needed / BASELINE_N)
        print(
            f"seed {seed}: proportional n={BASELINE_N}: half-width {half:.4f}, coverage {cover:.3f}; "
            f"neyman n={needed}: half-width {found[0]:.4f}, coverage {found[1]:.3f}; ratio {needed / BASELINE_N:.2f}"
        )
    if ratios:
        print(
            f"labels needed, neyman / proportional: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
            f"max {max(ratios):.2f} over {len(ratios)} seeds ({args.draws} draws each)"
        )


if __name__ == "__main__":
    main()

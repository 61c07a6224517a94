"""Labels where they pay (issue 44): how many labels Neyman's allocation needs for the PPI half-width proportional
allocation gets, at equal coverage.

    python benchmarks/label_allocation.py [--draws 300] [--seeds 3]

A judge errs where statements are hard: of 20 statements of 1,000 answers each, the headline judge gets 45% wrong on
one and 0.5% on the others (the planted truth: each statement's compliance rate); a second judge errs alike,
independently. Proportional allocation gives every statement n/20 labels; Neyman's (`speceval label-sheet
--allocation neyman`) gives them ∝ N_h · S_h, the spreads estimated from the two judges' disagreement on every answer
(`shrunk_spread`), as the command does without `--pilot`. For each, labels are drawn by the command's own code
(`allocate`, `pick_allocated`) and the rate estimated by the report's stratified PPI (`stratified_ppi`) with the
panel's error shares as its prior's covariate, as the report reads them from a Neyman sheet's design: the same
estimator for both arms, so only the allocation differs. Printed: proportional's mean half-width at n = 200, the
smallest Neyman n (60 to 400, step 10) whose mean half-width is at most that, their ratio, and both coverages; per
seed, then min/median/max of the ratio over seeds; and the coverage with a panel blind to the judge's errors (on
the clean statements the judge errs on 3% and the second judge repeats its verdicts), where the covariate misleads.
Synthetic data throughout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from speceval.analysis.statistics.ppi import label_weights, stratified_ppi  # noqa: E402
from speceval.analysis.statistics.stats import wilson_interval  # noqa: E402
from speceval.analysis.tables.label_design import spread_error  # noqa: E402
from speceval.analysis.tables.label_sampling import allocate, pick_allocated, shrunk_spread  # noqa: E402

STATEMENTS, ANSWERS = 20, 1000
ERRORS = (0.45,) + (0.005,) * (STATEMENTS - 1)
RATES = tuple(0.5 + 0.02 * h for h in range(STATEMENTS))
BASELINE_N = 200
BLIND_ERROR = 0.03
"""The blind panel's check: the judge wrong on 3% of the clean statements' answers, the second judge copying it."""

Bounds = tuple[float, float] | None


def _population(
    rng: np.random.Generator, blind: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """(the headline judge's verdicts f, a second judge's, human truth y, statement of each answer, planted rate).
    `blind`: on the clean statements the judge errs at `BLIND_ERROR` and the second judge repeats its verdict (its
    own slips at 1%), so the panel's disagreement there says nothing of the judge's errors."""
    strata = np.repeat(np.arange(STATEMENTS), ANSWERS)
    y = rng.random(len(strata)) < np.asarray(RATES)[strata]
    errors = np.asarray(ERRORS)[strata] if not blind else np.where(strata == 0, ERRORS[0], BLIND_ERROR)
    f, other = (np.where(rng.random(len(strata)) < errors, ~y, y) for _ in range(2))
    if blind:
        other = np.where(strata == 0, other, np.where(rng.random(len(strata)) < 0.01, ~f, f))
    return f.astype(float), other.astype(float), y.astype(float), strata, float(np.mean(RATES))


def draw_bounds(rng: np.random.Generator, n: int, neyman: bool, blind: bool = False) -> tuple[Bounds, Bounds, float]:
    """One data set and one sheet of n labels: (PPI's interval, the labels-only reference's, the planted rate)."""
    f, other, y, strata, truth = _population(rng, blind)
    keys = {h: ("s", f"st{h}") for h in range(STATEMENTS)}
    items = {keys[h]: np.flatnonzero(strata == h) for h in range(STATEMENTS)}
    population = {key: len(found) for key, found in items.items()}
    # The judges' disagreement per statement, as `statement_spreads` counts it without a pilot; both arms' PPI
    # reads it as the design records it (the same estimator: only the allocation differs).
    differ = np.bincount(strata, weights=(f != other).astype(float), minlength=STATEMENTS)
    spreads = {key: shrunk_spread(int(differ[h]), population[key], panel=True) for h, key in keys.items()}
    chosen = pick_allocated(items, allocate(population, n, spreads if neyman else None), int(rng.integers(1 << 31)))
    labelled = np.zeros(len(f), dtype=bool)
    labelled[np.asarray(chosen, dtype=int)] = True
    guess = np.array([spread_error(spreads[keys[h]]) for h in range(STATEMENTS)])
    found = stratified_ppi(f, y, labelled, np.arange(len(f)), strata, guess)
    ours = None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)
    return ours, _labels_only(y, labelled, strata), truth


def _labels_only(y: np.ndarray, labelled: np.ndarray, strata: np.ndarray) -> Bounds:
    """The labels alone, each weighing N_h/n_h, Wilson at the Kish size (the coverage matrix's PPI reference)."""
    weights = label_weights(labelled, strata)[labelled]
    size = float(weights.sum()) ** 2 / float((weights**2).sum())
    return wilson_interval(float((weights * y[labelled]).sum() / weights.sum()) * size, size, continuity=False)


def _draw(rng: np.random.Generator, n: int, neyman: bool) -> tuple[float, bool] | None:
    """One data set and one sheet of n labels: (half-width, covered)."""
    ours, _, truth = draw_bounds(rng, n, neyman)
    return None if ours is None else ((ours[1] - ours[0]) / 2, ours[0] <= truth <= ours[1])


def _measure(seed: int, n: int, neyman: bool, draws: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    results = [r for r in (_draw(rng, n, neyman) for _ in range(draws)) if r is not None]
    return float(np.mean([h for h, _ in results])), sum(c for _, c in results) / len(results)


def _blind(draws: int, n: int, neyman: bool) -> str:
    """Coverage and mean half-width with the panel blind to the clean statements' errors."""
    rng = np.random.default_rng(99)
    found = [draw_bounds(rng, n, neyman, blind=True) for _ in range(draws)]
    kept = [(ours, truth) for ours, _, truth in found if ours is not None]
    cover = sum(low <= truth <= high for (low, high), truth in kept) / len(kept)
    return f"coverage {cover:.3f}, half-width {np.mean([(h - lo) / 2 for (lo, h), _ in kept]):.4f}"


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
    for n, neyman in ((BASELINE_N, False), (BASELINE_N, True), (BASELINE_N // 2, True)):
        name = "neyman" if neyman else "proportional"
        print(
            f"blind panel (judge wrong on {BLIND_ERROR:.0%} of the clean statements' answers, the second judge "
            f"repeating it), {name} n={n}: {_blind(args.draws, n, neyman)}"
        )
    if ratios:
        print(
            f"labels needed, neyman / proportional: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
            f"max {max(ratios):.2f} over {len(ratios)} seeds ({args.draws} draws each)"
        )


if __name__ == "__main__":
    main()

"""The coverage matrix: every registered estimator over its edge grid, against a planted truth.

    python benchmarks/coverage_matrix.py [--draws 2000] [--seed 5] [--bootstrap 1000] [--write]

For every scenario of `scenarios` (built from benchmarks/coverage_scenarios.py): the share of simulated data sets
whose 95% interval held the planted truth (its Monte-Carlo SE), the mean width, and the mean width of a reference
interval where one is named (usually the interval the estimator replaced, or the naive one). Rates of one run are
exact (every outcome k = 0..n enumerated, no simulation). `--write` puts the table into benchmarks/RESULTS.md
between the coverage-matrix markers. Every estimator of speceval/analysis/statistics/registry.py must have a
scenario here (tests/analysis/test_coverage_matrix.py), and the slow test of that file runs this at low draws.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.card_scenarios import (  # noqa: E402
    flips_by_input_scenario,
    self_preference_by_input_scenario,
    self_preference_scenario,
    wording_excess_scenario,
)
from benchmarks.coverage_scenarios import (
    Drawn,
    Scenario,
    agresti_min_naive,
    bounded_scenario,
    bradley_terry_scenario,
    flip_count_scenario,
    kappa_scenario,
    labelled_scenario,
    leniency_scenario,
    mean_scenario,
    one_run_exact_scenario,
    paired_scenario,
    panel_scenario,
    pooled_scenario,
    sample_flip_counts,
    sample_likert,
    sample_zero_inflated,
    spearman_scenario,  # noqa: E402
    spread_scenario,
    survival_scenario,
    survival_truth,
    unranged_scenario,
    win_rate_scenario,
)
from benchmarks.human_accuracy_scenarios import weighted_accuracy_scenario  # noqa: E402
from benchmarks.label_allocation import RATES, draw_bounds  # noqa: E402
from benchmarks.pooled_references import NAIVE, identical_runs_note  # noqa: E402
from speceval.analysis.simulation import CategoryDesign, category_coverage  # noqa: E402
from speceval.analysis.statistics.paired import paired_difference  # noqa: E402
from speceval.analysis.statistics.registry import ESTIMATORS  # noqa: E402
from speceval.atomic import atomic_write_bytes  # noqa: E402
from speceval.experiments.precision import minimum_detectable_difference, report_power  # noqa: E402

NEWCOMBE_NAIVE = "Newcombe method 10 over every verdict (naive)"
AGRESTI_MIN_NAIVE = "Agresti-Min over every verdict (naive)"
VALID = 0.93
"""A reference interval's width is compared with only where the reference itself covers this often."""

# -- the grid ----------------------------------------------------------------------------------------------------


def category_design() -> CategoryDesign:
    """Four categories over 6 fixed statements x 8 inputs x 3 runs, two variations, category 3 rare (about 1.4%);
    the design of tests/analysis/test_coverage.py."""
    rng = np.random.default_rng(5)
    base = [(*(float(x) for x in rng.uniform(-1, 1, 3)), -3.5) for _ in range(6)]
    shifted = [(b[0], b[1] + 0.8, b[2], b[3]) for b in base]
    return CategoryDesign(logits=(tuple(base), tuple(shifted)), inputs_per_statement=8, runs=3)


def category_matrix(draws: int, seed: int) -> dict[str, float]:
    """Coverage of every category share and paired difference of `category_design` (see `category_coverage`)."""
    return category_coverage(category_design(), draws=draws, seed=seed)


def rare_category_design() -> CategoryDesign:
    """Four categories over 3 statements x 10 inputs x 1 run, two variations, category 3 at about 1%: unseen in most
    draws (session 19's audit: an unseen category had no row, and the rows shown covered 0.87)."""
    rng = np.random.default_rng(7)
    base = [(*(float(x) for x in rng.uniform(-1, 1, 3)), -4.3) for _ in range(3)]
    shifted = [(b[0], b[1] + 0.8, b[2], b[3]) for b in base]
    return CategoryDesign(logits=(tuple(base), tuple(shifted)), inputs_per_statement=10, runs=1)


def rare_category_matrix(draws: int, seed: int) -> dict[str, float]:
    """`category_matrix` on `rare_category_design`."""
    return category_coverage(rare_category_design(), draws=draws, seed=seed)


def scenarios(bootstrap: int, only: str | None = None) -> list[Scenario]:
    """Every scenario of the matrix; Bradley–Terry intervals with `bootstrap` draws. With `only` (a family), the
    win-rate and Bradley–Terry scenarios are made only if they are that family: their truths are simulated from
    96,000 ranking verdicts, 2.6 of the grid's 2.9 s of CPU, which a test of one other family need not pay (the
    other families are cheap to make and are all returned: pick the family's own by `Scenario.family`)."""
    found: list[Scenario] = []
    for inputs, runs, (a, b), keep_going, label in (
        (8, 2, (0.2, 20.0), 0.9, "8 inputs x 2 runs, hazard Beta(0.2, 20) (rare flips)"),
        (10, 1, (1.0, 9.0), 0.9, "10 inputs x 1 run, hazard Beta(1, 9)"),
        (10, 3, (1.0, 9.0), 0.9, "10 inputs x 3 runs, hazard Beta(1, 9)"),
        (30, 2, (2.0, 2.0), 0.8, "30 inputs x 2 runs, hazard Beta(2, 2) (most flip)"),
        (50, 1, (1.0, 4.0), 0.7, "50 inputs x 1 run, hazard Beta(1, 4), 30% end at each turn"),
        (100, 3, (0.5, 9.5), 0.9, "100 inputs x 3 runs, hazard Beta(0.5, 9.5)"),
        # A third of draws flip every conversation at turn 2, where the curve ends at 1 (its interval was [0, 0.52]).
        (5, 2, (9.0, 1.0), 0.9, "5 inputs x 2 runs, hazard Beta(9, 1) (most flip at once)"),
        # Session 19's audit: a few flips among many conversations, where the log-log band's lower limit stood above
        # the truth (0.913-0.916 at 200 inputs).
        (200, 1, (0.25, 100.0), 0.9, "200 inputs x 1 run, hazard Beta(0.25, 100) (a few flips among many)"),
    ):
        found.append(
            Scenario(
                "survival",
                ("turn_of_first_flip",),
                f"{label}; share flipped by turn 4",
                survival_truth(a, b, 4),
                survival_scenario(inputs, runs, a, b, keep_going),
                reference="Greenwood log-log, z (independent conversations)",
                cost=2,
            )
        )
    for n in (5, 10, 30, 200):
        for p in (0.01, 0.5, 0.9, 0.99):
            found.append(
                Scenario(
                    "rate-one-run",
                    ("rate", "split_share", "canary_accuracy", "human_accuracy", "position_consistency"),
                    f"n={n}, p={p}",
                    p,
                    pooled_scenario((n,), 1, 1, 1),
                    reference="plain Wilson",
                    exact=one_run_exact_scenario(n, p),
                )
            )
    for inputs, runs, (a, b), label in (
        ((5,), 5, (1.9, 0.1), "5 inputs (few clusters) x 5 runs, Beta(1.9, 0.1) mean 0.95"),
        ((10,), 3, (1.9, 0.1), "10 inputs x 3 runs, Beta(1.9, 0.1)"),
        ((30,), 5, (1.9, 0.1), "30 inputs x 5 runs, Beta(1.9, 0.1)"),
        ((30,), 3, (2.0, 2.0), "30 inputs x 3 runs, Beta(2, 2) mean 0.5"),
        ((3, 7, 20), 3, (9.0, 1.0), "unequal strata 3/7/20 inputs x 3 runs, Beta(9, 1) mean 0.9"),
        ((100,), 3, (0.1, 9.9), "100 inputs x 3 runs, Beta(0.1, 9.9) mean 0.01"),
        ((200,), 2, (9.9, 0.1), "200 inputs x 2 runs, Beta(9.9, 0.1) mean 0.99"),
        # issue 47: extreme rates with few clusters, a rate near 1 at 10 inputs, few clusters at moderate rates (where
        # the t quantile is needed), and every input's runs identical (at temperature 0) near the exact bound
        ((5,), 5, (0.1, 9.9), "5 inputs x 5 runs, Beta(0.1, 9.9) mean 0.01" + identical_runs_note(5, 5)),
        ((5,), 5, (9.9, 0.1), "5 inputs x 5 runs, Beta(9.9, 0.1) mean 0.99" + identical_runs_note(5, 5)),
        ((10,), 3, (29.1, 0.9), "10 inputs x 3 runs, Beta(29.1, 0.9) mean 0.97" + identical_runs_note(10, 3)),
        ((10,), 10, (1.9, 0.1), "10 inputs x 10 runs, Beta(1.9, 0.1)"),
        ((5,), 20, (5.0, 5.0), "5 inputs x 20 runs, Beta(5, 5) mean 0.5"),
        ((6,), 8, (1.0, 1.0), "6 inputs x 8 runs, uniform rates"),
        ((10,), 3, (0.7, None), "10 inputs x 3 identical runs, rate 0.7 (the exact bound at 0 failures: 0.692)"),
        ((20,), 3, (0.85, None), "20 inputs x 3 identical runs, rate 0.85"),
        ((5,), 5, (0.5, None), "5 inputs x 5 identical runs, rate 0.5"),
        # issue 47: many runs an input at skewed rates, where the count of verdicts no longer caps the effective size
        ((30,), 10, (1.9, 0.1), "30 inputs x 10 runs, Beta(1.9, 0.1) (many runs an input)"),
        ((30,), 15, (1.9, 0.1), "30 inputs x 15 runs, Beta(1.9, 0.1) (many runs an input)"),
    ):
        found.append(
            Scenario(
                "rate-pooled",
                # A flip, a violation at any turn, two judges' disagreement, a comparison's consistency over both
                # orders and a labelled answer's agreement with its label are each one indicator per conversation,
                # answer, answer pair, comparison or labelled answer, clustered by input across runs (and
                # candidates): the pooled rate's estimator.
                (
                    "pooled_rate",
                    "turn_rate",
                    "flips",
                    "elicitation",
                    "disagreement",
                    "pair_share",
                    "retest_agreement",
                    "wording_flip_rate",
                    "position_consistency_pooled",
                    "human_accuracy_pooled",
                ),
                label,
                a if b is None else a / (a + b),
                pooled_scenario(inputs, runs, a, 1.0, identical=a)
                if b is None
                else pooled_scenario(inputs, runs, a, b),
                reference=NAIVE,
            )
        )
    for inputs, runs, (a, b) in (
        (30, 1, (1.9, 0.1)),
        (10, 3, (1.9, 0.1)),
        (50, 1, (0.5, 0.5)),
        (100, 1, (9.9, 0.1)),
        (30, 3, (1.9, 0.1)),  # issue 47: 9 and 15 verdicts an input at skewed rates (0.931 and 0.924 before RARE_RUNS)
        (30, 5, (1.9, 0.1)),
    ):
        found.append(
            Scenario(
                "rate-pooled",
                ("pooled_rate",),
                f"panel of 3 judges (shares), {inputs} inputs x {runs} runs, Beta({a}, {b})",
                a / (a + b),
                panel_scenario(inputs, runs, 3, a, b),
                reference=NAIVE,
            )
        )
    for inputs, runs, pa, pb, spread in (
        (10, 1, 0.97, 0.95, 0.5),
        (10, 3, 0.97, 0.95, 0.5),
        (10, 3, 0.97, 0.95, 0.95),
        (10, 1, 0.99, 0.98, 0.5),
        (20, 3, 0.99, 0.98, 0.5),
        (10, 3, 0.99, 0.98, 0.5),  # issue 47: small n, several runs, extreme and moderate rates
        (10, 3, 0.9, 0.8, 0.5),
        (10, 3, 0.5, 0.4, 0.5),
        (10, 1, 0.85, 0.7, 0.5),
        (30, 1, 0.5, 0.4, 0.5),
        (50, 5, 0.9, 0.8, 0.5),
        (200, 1, 0.5, 0.45, 0.5),
        # the issue 47 audit: equal sides over few inputs whose totals correlate (MOVER took r as known: 0.927-0.936)
        (10, 5, 0.9, 0.9, 0.5),
        (5, 5, 0.9, 0.8, 0.5),
        # issue 47, adversarial truths for the narrower limits at a constant side: one side always compliant (no
        # discordance is common, yet the truth is far from 0), and discordance concentrated in half the inputs
        (10, 1, 1.0, 0.8, 0.5),
        (10, 1, 1.0, 0.75, 0.5),
        (10, 3, 1.0, 0.9, 0.95),
        (10, 3, 1.0, 0.8, 0.95),
        (20, 3, 1.0, 0.95, 0.95),
        # session 20: identical runs (temperature 0) against an always compliant side; a draw where every input
        # complied read ±0.1 around 0 at the count of answers (0.887 at 10 x 3, 0.777 at 30 x 5)
        (10, 3, 1.0, 0.8, 1.0),
        (30, 5, 1.0, 0.95, 1.0),
        (10, 3, 0.97, 0.9, 1.0),
        (10, 3, 0.99, 0.98, 1.0),
    ):
        kind = {0.5: "correlated", 0.95: "strongly clustered (inputs shift rates by 95% of 1 - p)"}
        found.append(
            Scenario(
                "paired",
                ("paired_difference",),
                f"{inputs} inputs x {runs} runs, {pa} vs {pb}, "
                + kind.get(spread, "identical runs (an input's runs one verdict, the sides independent)"),
                pa - pb,
                paired_scenario(inputs, runs, pa, pb, spread, agresti_min_naive, identical=spread == 1.0),
                reference=AGRESTI_MIN_NAIVE,
            )
        )
    for inputs, runs, rates in (
        (20, 1, (0.8, 0.8, 0.8, 0.8, 0.8)),
        (30, 3, (0.7, 0.7, 0.7)),
        (50, 1, (0.9, 0.85, 0.8, 0.75)),
        (20, 3, (0.95, 0.9, 0.9)),
        (10, 1, (0.6, 0.6)),
        (100, 2, (0.5, 0.5, 0.5, 0.5, 0.5, 0.5)),
        (40, 1, (0.97, 0.9, 0.6, 0.6, 0.6)),
    ):
        truth, draw = spread_scenario(inputs, runs, rates)
        found.append(
            Scenario(
                "spread",
                ("candidate_spread",),
                f"{len(rates)} candidates at {rates}, {inputs} inputs x {runs} runs, correlated; max - min",
                truth,
                draw,
                reference="paired interval of the picked pair (before)",
            )
        )
    # A Likert judge's mean rating, and near an end of its scale (most ratings 5, or 1) with few inputs: a sample
    # that missed the rare far ratings (issue 47).
    likert_rows = [(10, 1, 3.5), (20, 3, 3.5), (50, 5, 3.5), (10, 1, 4.7), (5, 3, 4.7), (30, 3, 4.7)]
    edges = ((5, 1), (10, 1), (20, 1), (10, 3), (5, 5))
    likert_rows += [(i, r, c) for c in (4.7, 4.9, 1.3) for i, r in edges if (i, r, c) not in likert_rows]
    for inputs, runs, centre in likert_rows:
        likert_truth = float(sample_likert(np.random.default_rng(777), 400_000, 1, centre).mean())
        near = "" if centre == 3.5 else f", centred at {centre} (near the {'top' if centre > 3 else 'bottom'})"
        found.append(
            Scenario(
                "mean",
                ("mean_rating",),
                f"Likert 1-5{near}, {inputs} inputs x {runs} runs",
                likert_truth,
                mean_scenario(inputs, runs, centre),
                reference="t ignoring clusters",
            )
        )
    # A polarized judge (ratings 1 or 5 only): a rate in disguise, where Gaffke's bound is Clopper-Pearson's. A
    # lighter observation at the end (weight 1/2, Jeffreys-like) covered 0.896 here at 20 inputs x 1 run, top 0.88.
    for inputs, runs, top in ((20, 1, 0.88), (10, 1, 0.77), (10, 3, 0.9)):
        found.append(
            Scenario(
                "mean",
                ("mean_rating",),
                f"Likert ratings 1 or 5 only (a polarized judge), {top:.0%} 5s, {inputs} inputs x {runs} runs",
                1 + 4 * top,
                mean_scenario(inputs, runs, polar=top),
                reference="t ignoring clusters",
            )
        )
    # A judge that rates 4 or 5 and 1 for the rare input it finds violating (5%): a sample of few inputs often has
    # none, and the hull over the seen range covered 0.81-0.91 here (issue 47).
    for inputs, runs in ((20, 1), (10, 3)):
        found.append(
            Scenario(
                "mean",
                ("mean_rating",),
                f"Likert 4 or 5, and 1 in every run of 5% of inputs, {inputs} inputs x {runs} runs",
                0.95 * 4.6 + 0.05 * 1.0,
                mean_scenario(inputs, runs, violating=0.05),
                reference="t ignoring clusters",
            )
        )
    for inputs, runs, zero in ((20, 3, 0.9), (20, 3, 0.7), (10, 1, 0.7), (50, 5, 0.5), (30, 1, 0.8)):
        found.append(
            Scenario(
                "mean",
                ("mean",),
                f"no range: 0-10 score, {zero:.0%} of inputs at 0, {inputs} inputs x {runs} runs",
                float(sample_zero_inflated(np.random.default_rng(778), 400_000, 1, zero).mean()),
                unranged_scenario(inputs, runs, zero),
                reference="mean ± t · SE (before)",
            )
        )
    for inputs, runs, rate in ((5, 3, 0.1), (10, 1, 0.1), (8, 2, 0.3), (20, 1, 0.05)):
        found.append(
            Scenario(
                "mean",
                ("mean",),
                f"no range: count of 5 trials at an input's rate Beta mean {rate}, {inputs} inputs x {runs} runs",
                5 * rate,
                unranged_scenario(inputs, runs, None, 5, rate),
                reference="mean ± t · SE (before)",
            )
        )
    for inputs, runs, zero in ((20, 3, 0.9), (20, 3, 0.7), (10, 1, 0.9), (50, 5, 0.5), (20, 3, 0.99)):
        truth = float(sample_zero_inflated(np.random.default_rng(778), 400_000, 1, zero).mean())
        found.append(
            Scenario(
                "bounded-mean",
                ("bounded_mean", "flips_per_conversation"),  # a bounded count a conversation, clustered by input
                f"0-10 score, {zero:.0%} of inputs at 0, {inputs} inputs x {runs} runs",
                truth,
                bounded_scenario(inputs, runs, zero),
                reference="mean ± t · SE (before)",
            )
        )
    # Flips per conversation, mostly 0 or 1 on 0..turns - 1 (session 19's audit: 2.2x its covering reference at 100
    # inputs x 1 run, when one run's counts took Wilson on their rescaled sum as if each were a verdict).
    for inputs, runs, turns, hazard in (
        (100, 1, 4, (1.0, 12.0)),
        (30, 1, 4, (1.0, 12.0)),
        (10, 1, 3, (1.0, 9.0)),
        (200, 1, 3, (0.3, 30.0)),
        (20, 3, 4, (1.0, 6.0)),
    ):
        truth = float(sample_flip_counts(np.random.default_rng(779), 400_000, 1, turns, hazard).mean())
        found.append(
            Scenario(
                "bounded-mean",
                ("flips_per_conversation",),
                f"flips per conversation over {turns} turns, hazard Beta{hazard}, {inputs} inputs x {runs} runs",
                truth,
                flip_count_scenario(inputs, runs, turns, hazard),
                reference="t on the inputs' mean counts; Wilson on the rescaled sum (before)",
            )
        )
    found.append(
        Scenario(
            "category",
            ("category_share", "category_difference"),
            "4 categories (one at 1.4%), 6 statements x 8 inputs x 3 runs, 2 variations: every share and difference",
            math.nan,
            None,
            cost=2,
            many=category_matrix,
        )
    )
    found.append(
        Scenario(
            "category",
            ("category_share", "category_difference"),
            "4 categories (one at about 1%, mostly unseen), 3 statements x 10 inputs x 1 run, 2 variations: every "
            "share and difference",
            math.nan,
            None,
            cost=2,
            many=rare_category_matrix,
        )
    )
    if only in (None, "win-rate"):
        for inputs, runs, ties, strength, label in (
            (30, 1, 0.75, 0.7, "75% ties"),
            (15, 3, 0.8, 0.7, "80% ties"),
            (50, 1, 0.0, 0.7, "no ties"),
            (10, 1, 0.0, 0.7, "no ties"),
            (20, 1, 0.5, 0.97, "50% ties, a far stronger"),
            (10, 3, 0.3, 0.99, "30% ties, a far stronger"),
        ):
            truth, draw = win_rate_scenario(inputs, runs, ties, {"a": strength, "b": 1 - strength})
            found.append(
                Scenario(
                    "win-rate",
                    ("win_rate",),
                    f"{inputs} inputs x {runs} runs, both orders, {label} (strengths {strength}:{1 - strength:.2f})",
                    truth,
                    draw,
                    reference="Wilson over every game (naive)",
                )
            )
    if only in (None, "bradley-terry"):
        for inputs in (15, 30):
            truth, draw = bradley_terry_scenario(inputs, bootstrap)
            found.append(
                Scenario(
                    "bradley-terry",
                    ("bradley_terry",),
                    f"3 models, {inputs} inputs, strength of the strongest ({bootstrap}-draw bootstrap)",
                    truth,
                    draw,
                    cost=max(1, bootstrap // 25),
                )
            )
    for prevalence, error, items in ((0.95, 0.03, 30), (0.5, 0.1, 30), (0.95, 0.03, 100), (0.8, 0.05, 20)):
        truth, draw = kappa_scenario(prevalence, error, items)
        found.append(
            Scenario(
                "kappa",
                ("kappa", "human_kappa"),
                f"Cohen, prevalence {prevalence}, each judge errs {error:.0%}, {items} answers",
                truth,
                draw,
                cost=4,
            )
        )
    for inputs, runs, rates in (
        (10, 1, (0.99, 0.98)),
        (20, 3, (0.99, 0.98)),
        (30, 1, (0.8, 0.7, 0.75)),
        (10, 1, (1.0, 0.8)),  # issue 47, adversarial: one judge always lenient, the truth far from 0
        (20, 3, (1.0, 0.9)),
    ):
        truth, draw = leniency_scenario(inputs, runs, rates)
        found.append(
            Scenario(
                "leniency",
                ("leniency",),
                f"{len(rates)} judges at {rates}, {inputs} answers x {runs} runs",
                truth,
                draw,
                reference=(AGRESTI_MIN_NAIVE if len(rates) == 2 else NEWCOMBE_NAIVE) + ", scaled (K-1)/K",
            )
        )
    for statements, rho, inputs in (
        (8, 0.9, None),
        (8, 0.0, None),
        (15, 0.5, 5),
        (30, 0.9, 5),
        (59, 0.5, 5),
        (8, 0.9, 20),
        (15, 0.0, 20),
        (30, 0.9, 20),
        (59, 0.5, 20),
        (59, 0.9, 20),
    ):
        truth, draw = spearman_scenario(statements, rho, inputs)
        found.append(
            Scenario(
                "spearman",
                ("spearman",),
                f"{statements} statements, latent correlation {rho}"
                + (f", shares of {inputs} inputs (noisy, ties)" if inputs else ", exact values"),
                truth,
                draw,
                reference="Bonett–Wright on the observed shares (before)",
            )
        )
    unequal = ((10, 40, 150), (0.9, 0.8, 0.7), (0.05, 0.2, 0.4))
    for corrected in (False, True):
        estimator = "bias_corrected_rate" if corrected else "ppi"
        for sizes, rates, fps, labels, runs, label in (
            (*unequal, 30, 1, "statements of 10/40/150 answers, judge errs by statement, 30 labels"),
            (*unequal, 60, 1, "statements of 10/40/150 answers, judge errs by statement, 60 labels"),
            ((100,), (0.97,), (0.3,), 20, 1, "one statement, rate 0.97, 20 labels"),
            ((10, 10), (0.8, 0.8), (0.2, 0.2), 30, 5, "20 inputs x 5 runs, 30 labels"),
            ((50,) * 20, (0.97,) * 20, (0.3,) * 20, 100, 1, "20 statements of 50 answers, rate 0.97, 5 labels each"),
            ((20,) * 10, (0.99,) * 10, (0.5,) * 10, 30, 1, "10 statements of 20 answers, rate 0.99, 3 labels each"),
        ):
            truth, draw = labelled_scenario(sizes, rates, fps, labels, runs, corrected)
            found.append(
                Scenario(
                    "ppi",
                    (estimator,),
                    f"{estimator}: {label} (the sheet's own draw)",
                    truth,
                    draw,
                    reference="labels only, stratified, Wilson at the Kish size",
                    cost=3,
                )
            )
    found += guided_ppi_scenarios()
    found += card_scenarios()
    found += human_accuracy_scenarios()
    return found


WEIGHTED_SIZES = (5, 10, 20, 40, 80, 150, 200, 300, 400, 30)
WEIGHTED_ACCURACIES = (0.7, 0.8, 1.0, 0.9, 0.95, 0.99, 0.995, 0.98, 0.97, 0.85)
"""10 statements of 5-400 answers, the judge right 70-99.5% of the time (one statement every answer right)."""


def human_accuracy_scenarios() -> list[Scenario]:
    """The judge card's design-weighted human accuracy (benchmarks/human_accuracy_scenarios.py): statements of
    unequal size, equal and Neyman sheets, inputs of 1-3 answers."""
    spread = np.random.default_rng(1)
    twenty = tuple(int(x) for x in spread.integers(5, 400, 20))
    twenty_rates = tuple(float(x) for x in spread.uniform(0.85, 0.995, 20))
    neyman = (2, 4, 3, 6, 8, 9, 6, 12, 16, 8)  # ∝ N_h·S_h, at least 2 (the all-right statement: its floor)
    found = []
    rows: list[tuple[tuple[int, ...], tuple[float, ...], int, tuple[int, ...], bool, str, float | None]] = []
    for sizes, rates, per_input, labels, guided, label in (
        (
            WEIGHTED_SIZES,
            WEIGHTED_ACCURACIES,
            1,
            (2,) * 10,
            False,
            "10 statements of 5-400, equal sheet, 2 labels a statement, 1 answer an input",
        ),
        (
            WEIGHTED_SIZES,
            WEIGHTED_ACCURACIES,
            3,
            (5,) * 10,
            False,
            "10 statements of 5-400, equal sheet, 5 labels a statement, 3 answers an input",
        ),
        (
            WEIGHTED_SIZES,
            WEIGHTED_ACCURACIES,
            2,
            (20,) * 10,
            False,
            "10 statements of 5-400, equal sheet, 20 labels a statement, 2 answers an input",
        ),
        (
            WEIGHTED_SIZES,
            WEIGHTED_ACCURACIES,
            2,
            neyman,
            True,
            "10 statements of 5-400, Neyman sheet of 74 labels, 2 answers an input, guided",
        ),
        (
            WEIGHTED_SIZES,
            WEIGHTED_ACCURACIES,
            2,
            neyman,
            False,
            "10 statements of 5-400, Neyman sheet of 74 labels, 2 answers an input, no guide",
        ),
        ((5, 100, 400), (0.7, 0.95, 0.995), 1, (10, 10, 10), False, "3 statements of 5/100/400, equal sheet of 30"),
        (
            (5, 50, 400),
            (0.85, 0.9, 0.95),
            3,
            (3, 3, 3),
            False,
            "3 statements of 5/50/400, 3 labels each, 3 answers an input",
        ),
        (
            (20, 200, 400),
            (0.99, 0.995, 1.0),
            2,
            (20, 20, 20),
            False,
            "3 statements of 20/200/400 at 0.99-1, 20 labels each",
        ),
        (twenty, twenty_rates, 3, (3,) * 20, False, "20 statements of 5-400 answers at 0.85-0.995, 3 labels each"),
        (twenty, twenty_rates, 1, (8,) * 20, False, "20 statements of 5-400 answers at 0.85-0.995, 8 labels each"),
        # Session 19's audit (benchmarks/audit_47.py --family human-weighted): a near-proportional sheet whose small
        # statements, where the judge errs, get 5 labels that often all agree (covered 0.79 against the realised share).
        (
            (300, 60, 60),
            (0.99, 0.85, 0.9),
            1,
            (30, 5, 5),
            False,
            "3 statements of 300/60/60 at 0.99/0.85/0.9, 30/5/5 labels (audit)",
        ),
        (
            (150, 90, 30),
            (0.9, 0.7, 0.95),
            3,
            (12, 9, 6),
            False,
            "3 statements of 150/90/30 at 0.9/0.7/0.95, 12/9/6 labels, 3 answers an input (audit)",
        ),
    ):
        rows.append((sizes, rates, per_input, labels, guided, label, None))
    # Session 20: clustered sheets, whole inputs labelled (every answer of each), an input's answers alike at an
    # intra-input correlation of 0.5-0.8 (the audit's row covered 0.922 when the Kish size counted the labels).
    for sizes, rates, per_input, labels, icc in (
        ((150, 90, 30), (0.9, 0.7, 0.95), 3, (12, 9, 6), 0.5),
        ((150, 90, 30), (0.8, 0.6, 0.9), 3, (12, 9, 6), 0.8),
        ((150, 90, 30), (0.9, 0.7, 0.95), 3, (30, 30, 15), 0.5),
        ((300, 300), (0.95, 0.85), 2, (20, 20), 0.5),
    ):
        shown = "/".join(str(n) for n in sizes), "/".join(f"{a:g}" for a in rates), "/".join(map(str, labels))
        label = f"{len(sizes)} statements of {shown[0]} at {shown[1]}, {shown[2]} labels, whole inputs of {per_input}"
        rows.append((sizes, rates, per_input, labels, False, f"{label} answers, ICC {icc} (clustered sheet)", icc))
    for sizes, rates, per_input, labels, guided, label, icc in rows:
        truth, draw = weighted_accuracy_scenario(sizes, rates, per_input, labels, guided, icc)
        found.append(
            Scenario(
                "human_accuracy_weighted",
                ("human_accuracy_weighted",),
                f"{label} (synthetic)",
                truth,
                draw,
                reference="Wilson at the Kish size",
                cost=2,
            )
        )
    return found


def guided_ppi_scenarios() -> list[Scenario]:
    """Stratified PPI with the panel's error shares as its prior's covariate, on a Neyman sheet (issue 44): the
    allocation benchmark's design (benchmarks/label_allocation.py), and its panel blind to the judge's errors."""
    found = []
    for labels, neyman, blind, label in (
        (110, True, False, "Neyman sheet of 110 labels, 20 statements x 1,000, judge wrong 45%/0.5%, panel-guided"),
        (200, False, False, "proportional sheet of 200 labels, same design, panel-guided"),
        (200, True, True, "Neyman sheet of 200 labels, the panel blind to the judge's 3% errors on 19 statements"),
    ):

        def draw(rng: np.random.Generator, n: int = labels, ney: bool = neyman, off: bool = blind) -> Drawn:
            ours, reference, _ = draw_bounds(rng, n, ney, off)
            return ours, reference

        found.append(
            Scenario(
                "ppi",
                ("ppi",),
                f"ppi: {label} (the sheet's own draw)",
                float(np.mean(RATES)),
                draw,
                reference="labels only, stratified, Wilson at the Kish size",
                cost=3,
            )
        )
    return found


def card_scenarios() -> list[Scenario]:
    """The judge card's own compositions (benchmarks/card_scenarios.py)."""
    found = []
    for inputs, per_input, wordings, retest, wording in (
        (10, 2, 3, 0.0, 0.1),
        (20, 2, 3, 0.05, 0.09),
        (30, 1, 2, 0.02, 0.02),
        (50, 2, 3, 0.1, 0.3),
    ):
        truth, draw = wording_excess_scenario(inputs, per_input, wordings, retest, wording)
        found.append(
            Scenario(
                "wording-excess",
                ("wording_flip_excess",),
                f"{inputs} inputs x {per_input} answers, {wordings} wordings, retest flips {retest}, wording flips "
                f"{wording}",
                truth,
                draw,
            )
        )
    # The issue 47 audit's flagged designs (flip chances times an input's difficulty u; session 19: 1.8-3.2x its
    # narrowest covering reference), and excesses carried by few inputs (the retest never flips; an input's answers
    # flip alike), where MOVER of the two sides covered 0.84-0.91 and Agresti-Caffo on the inputs' means 0.77-0.90.
    for inputs, per_input, wordings, retest, wording, icc, difficulty, together, label in (
        (30, 1, 3, 0.03, 0.07, 0.0, (1.0, 3.0), False, "rare flips, difficulty u~B(1, 3)"),
        (5, 3, 1, 0.3, 0.3, 0.0, (2.0, 2.0), False, "truth 0, difficulty u~B(2, 2)"),
        (20, 4, 2, 0.0, 0.1, 0.0, (1.0, 1.0), False, "the retest never flips, difficulty u~B(1, 1)"),
        (200, 1, 1, 0.02, 0.02, 0.0, (1.0, 1.0), False, "truth 0, difficulty u~B(1, 1)"),
        (30, 1, 1, 0.0, 0.05, 0.0, None, False, "the retest never flips, independent answers"),
        (20, 4, 2, 0.0, 0.04, 0.3, None, True, "the retest never flips, ICC 0.3"),
        (10, 3, 2, 0.0, 0.2, 1.0, None, True, "the retest never flips, an input's answers alike"),
        (30, 5, 1, 0.0, 0.03, 0.5, None, False, "the retest never flips, ICC 0.5"),
        (8, 4, 1, 0.0, 0.5, 0.3, None, False, "the retest never flips, ICC 0.3, half flip"),
    ):
        truth, draw = flips_by_input_scenario(inputs, per_input, wordings, retest, wording, icc, difficulty, together)
        found.append(
            Scenario(
                "wording-excess",
                ("wording_flip_excess",),
                f"{inputs} inputs x {per_input} answers, {wordings} wordings, retest {retest}, wording {wording} "
                f"({label}{'; wordings flip together' if together else ''})",
                truth,
                draw,
            )
        )
    for inputs, own, others, peer in ((10, 0.9, 0.8, 0.85), (30, 0.95, 0.95, 0.9), (50, 0.7, 0.5, 0.6)):
        truth, draw = self_preference_scenario(inputs, own, others, peer)
        found.append(
            Scenario(
                "self-preference",
                ("self_preference",),
                f"{inputs} inputs, 1 own-provider and 2 other candidates, judge {own}/{others}, peer {peer}",
                truth,
                draw,
            )
        )
    # The issue 47 audit's flagged designs (session 19: 1.6-2.9x t or the cluster bootstrap on the inputs'
    # contributions) and leniency toward the judge's own provider alone, where t on the contributions covered 0.63-0.88.
    for inputs, runs, rates, own, others, miss, varying in (
        (10, 3, (0.9, 0.85, 0.9, 0.8), 0.3, 0.1, 0.02, False),
        (10, 1, (0.95, 0.95, 0.95, 0.95), 0.0, 0.0, 0.02, False),
        (30, 2, (0.97, 0.95, 0.98, 0.9), 0.5, 0.2, 0.01, True),
        (100, 1, (0.9, 0.9, 0.9, 0.9), 0.2, 0.2, 0.02, True),
        (10, 1, (0.9, 0.9, 0.9, 0.9), 0.5, 0.0, 0.02, False),
        (30, 1, (0.95, 0.95, 0.95, 0.95), 0.3, 0.0, 0.0, True),
    ):
        truth, draw = self_preference_by_input_scenario(inputs, runs, rates, own, others, miss, varying)
        found.append(
            Scenario(
                "self-preference",
                ("self_preference",),
                f"{inputs} inputs x {runs} runs, 2 own-provider and 2 other candidates at {rates} (shared input "
                f"effect), judge lenient {own} own / {others} others{' (by input)' if varying else ''}, peer 0.05",
                truth,
                draw,
                cost=2,
            )
        )
    return found


PLANS = ((0.8, 20, 1), (0.8, 50, 1), (0.9, 100, 1), (0.5, 40, 2), (0.8, 30, 3), (0.95, 100, 3), (0.8, 200, 3))
"""(assumed rate, inputs, runs) of the precision plans whose promised power is checked, at ICC 0.3."""


def plan_power(draws: int, seed: int, icc: float = 0.3) -> list[tuple[str, float, float, float]]:
    """Per plan of `PLANS` and direction: (plan, its MDD, the power the plan computes there (`report_power`: 0.80 in
    the direction that sets the MDD, more in the other), the share of simulated pairs whose report interval excludes
    0), under the plan's own assumptions: one candidate at the assumed rate, the other the MDD below (or above),
    inputs' rates Beta with intra-input correlation `icc` over runs, candidates independent."""
    rng = np.random.default_rng(seed)
    found = []
    for rate, inputs, runs in PLANS:
        mdd = minimum_detectable_difference(rate, inputs, runs, icc)
        assert mdd is not None
        for label, (pa, pb) in (("below", (rate, rate - mdd)), ("above", (rate + mdd, rate))):
            if not (pb > 0 and pa < 1):
                continue
            hits = 0
            for _ in range(draws):
                sides = []
                for p in (pa, pb):
                    size = 1 / icc - 1  # Beta(p s, (1 - p) s) has intra-class correlation 1 / (s + 1) = icc
                    per_input = rng.beta(p * size, (1 - p) * size, inputs) if runs > 1 else np.full(inputs, p)
                    verdicts = rng.random((inputs, runs)) < per_input[:, None]
                    sides.append([(i, float(v)) for i in range(inputs) for v in verdicts[i]])
                result = paired_difference(sides[0], sides[1])
                assert result is not None and result.ci_low is not None and result.ci_high is not None
                hits += result.ci_low > 0 or result.ci_high < 0
            promised = report_power(pa, pb, inputs, runs, icc)
            found.append(
                (
                    f"rate {rate}, {inputs} inputs x {runs} runs, ICC {icc}, the other {label}",
                    mdd,
                    promised,
                    hits / draws,
                )
            )
    return found


def plan_table(rows: list[tuple[str, float, float, float]], draws: int) -> str:
    lines = [
        "| plan | MDD | the plan's power there | simulated power (report's interval excludes 0) | ± MC SE | "
        "simulated - plan |",
        "|---|---|---|---|---|---|",
    ]
    for name, mdd, promised, power in rows:
        lines.append(
            f"| {name} | {mdd:.3f} | {promised:.3f} | {power:.3f} | {math.sqrt(power * (1 - power) / draws):.3f} | "
            f"{power - promised:+.3f} |"
        )
    return "\n".join(lines)


RESULTS = Path(__file__).parent / "RESULTS.md"
START, END = "<!-- coverage-matrix:start -->", "<!-- coverage-matrix:end -->"


class Row(BaseModel):
    """One scenario's measurement."""

    family: str
    estimators: tuple[str, ...]
    name: str
    truth: float
    draws: int | None
    coverage: float
    se: float | None
    width: float | None
    reference: str
    reference_width: float | None
    reference_coverage: float | None = None
    undefined: int = 0
    """Draws where the estimator gave no interval (e.g. a bias-corrected rate without a non-compliant label)."""


def measure(scenario: Scenario, draws: int, seed: int) -> Row:
    """Coverage and widths of one scenario over `draws` // its cost simulated data sets."""
    base = {
        "family": scenario.family,
        "estimators": scenario.estimators,
        "name": scenario.name,
        "truth": scenario.truth,
        "reference": scenario.reference,
    }
    if scenario.exact is not None:
        cover, width, reference = scenario.exact()
        return Row(**base, draws=None, coverage=cover, se=None, width=width, reference_width=reference)
    count = max(20, draws // scenario.cost)
    if scenario.many is not None:
        found = scenario.many(count, seed)
        worst = min(found.values())
        return Row(
            **base,
            draws=count,
            coverage=worst,
            se=math.sqrt(worst * (1 - worst) / count),
            width=None,
            reference_width=None,
        )
    assert scenario.draw is not None
    rng = np.random.default_rng(seed)
    hits, widths, undefined = 0, [], 0
    references: dict[str, list[tuple[float, bool]]] = {}
    for _ in range(count):
        ours, found = scenario.draw(rng)
        if ours is None:
            undefined += 1
            continue
        hits += ours[0] <= scenario.truth <= ours[1]
        widths.append(ours[1] - ours[0])
        for name, reference in (found if isinstance(found, dict) else {scenario.reference: found}).items():
            if reference is not None:
                held = reference[0] <= scenario.truth <= reference[1]
                references.setdefault(name, []).append((reference[1] - reference[0], held))
    defined = count - undefined
    share = hits / defined if defined else math.nan
    name, reference_width, reference_coverage = _narrowest_covering(references, scenario.reference)
    return Row(
        **{**base, "reference": name},
        draws=count,
        coverage=share,
        se=math.sqrt(share * (1 - share) / defined) if defined else None,
        width=float(np.mean(widths)) if widths else None,
        undefined=undefined,
        reference_width=reference_width,
        reference_coverage=reference_coverage,
    )


def _narrowest_covering(
    references: dict[str, list[tuple[float, bool]]], named: str
) -> tuple[str, float | None, float | None]:
    """(name, mean width, coverage) of the narrowest reference covering at least `VALID`; of `named` (the scenario's
    own reference) when none covers or none was drawn."""
    measured = {
        name: (float(np.mean([w for w, _ in found])), sum(h for _, h in found) / len(found))
        for name, found in references.items()
    }
    covering = [(width, name) for name, (width, cover) in measured.items() if cover >= VALID]
    if covering:
        name = min(covering)[1]
    elif named in measured:
        name = named
    else:
        return named, None, None
    return name, *measured[name]


def run(draws: int, seed: int, bootstrap: int, only: set[str] | None = None) -> list[Row]:
    """Every scenario (of the families in `only`, if given)."""
    return [measure(s, draws, seed) for s in scenarios(bootstrap) if only is None or s.family in only]


def table(rows: list[Row]) -> str:
    lines = [
        "| estimator | scenario | truth | draws | coverage | ± MC SE | mean width | reference: mean width "
        "(its coverage) | width ÷ covering reference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        draws = "exact" if r.draws is None else f"{r.draws}" + (f" ({r.undefined} undefined)" if r.undefined else "")
        truth = "each share / difference" if math.isnan(r.truth) else f"{r.truth:.4f}"
        coverage = f"{r.coverage:.3f}" + (" (worst of 12)" if r.family == "category" else "")
        lines.append(
            f"| {', '.join(r.estimators)} | {r.name} | {truth} | {draws} | {coverage} | "
            f"{_num(r.se)} | {_num(r.width)} | {r.reference}: {_num(r.reference_width)}"
            + ("" if r.reference_coverage is None else f" ({r.reference_coverage:.3f})")
            + f" | {_ratio(r)} |"
        )
    return "\n".join(lines)


def _ratio(r: Row) -> str:
    """Width over the reference's where the reference covers at least `VALID` (else "–": no valid reference)."""
    if r.width is None or not r.reference_width or r.reference_coverage is None or r.reference_coverage < VALID:
        return "–"
    return f"{r.width / r.reference_width:.2f}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def write(text: str, path: Path = RESULTS) -> None:
    """Replace the section between the markers (or append it) in RESULTS.md, atomically."""
    current = path.read_text(encoding="utf-8")
    section = f"{START}\n{text}\n{END}"
    if START in current and END in current:
        updated = current[: current.index(START)] + section + current[current.index(END) + len(END) :]
    else:
        updated = current.rstrip("\n") + "\n\n" + section + "\n"
    atomic_write_bytes(path, updated.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000, help="Bradley–Terry bootstrap draws")
    parser.add_argument("--family", action="append", help="only these scenario families (repeatable)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    parser.add_argument("--plan", type=int, default=0, help="also check the precision plan's power at this many draws")
    args = parser.parse_args()
    started = time.monotonic()
    rows = run(args.draws, args.seed, args.bootstrap, set(args.family) if args.family else None)
    missing = sorted(set(ESTIMATORS) - {e for r in rows for e in r.estimators})
    text = table(rows)
    elapsed = time.monotonic() - started
    header = (
        f"## Coverage matrix: every registered estimator at its edges (issue 34)\n\n"
        f"`python benchmarks/coverage_matrix.py --draws {args.draws} --seed {args.seed} --bootstrap "
        f"{args.bootstrap}` ({elapsed:.0f} s). Draws per scenario: {args.draws} divided by its cost (a "
        "Bradley–Terry, kappa or PPI draw runs a bootstrap of its own); truths planted and computed apart "
        "from the estimator (formula or 400,000-draw Monte Carlo); rates of one run exact. Synthetic data "
        "throughout.\n\n"
    )
    print(header + text)
    if missing:
        print(f"\nregistered estimators without a scenario here: {', '.join(missing)}")
    if args.write:
        write(header + text)
    if args.plan:
        print("\n## Precision plan power (issue 47)\n\n" + plan_table(plan_power(args.plan, args.seed), args.plan))


if __name__ == "__main__":
    main()

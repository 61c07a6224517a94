"""Paired differences, leniency and bounded means at the edges (issue 34): never a point interval when the truth can
differ, and coverage >= 0.93 where the old intervals collapsed (exact enumeration for one run, a seeded simulation
for several)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from benchmarks.coverage_scenarios import Drawn, agresti_min_naive, paired_scenario, verdict_row
from speceval.analysis.statistics.clustered import mean_interval, t975
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.stats import Z95, wilson_interval
from speceval.analysis.tables.judge_quality import leniency


def cells(pa: float, pb: float, phi: float) -> np.ndarray:
    """P(a, b) for (1,1), (1,0), (0,1), (0,0) with margins pa, pb and correlation phi."""
    both = pa * pb + phi * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    found = np.array([both, pa - both, pb - both, 1 - pa - pb + both])
    assert (found >= -1e-12).all(), "phi out of range for these margins"
    return np.clip(found, 0, 1)


def exact_coverage(n: int, pa: float, pb: float, phi: float) -> tuple[float, float]:
    """Coverage of pa - pb and the share of point intervals, over every 2x2 table of n inputs (one run)."""
    probabilities = cells(pa, pb, phi)
    covered = points = 0.0
    for e, f, g in itertools.product(range(n + 1), repeat=3):
        h = n - e - f - g
        if h < 0 or any(k and p == 0 for k, p in zip((e, f, g, h), probabilities, strict=True)):
            continue  # an impossible table (a cell of probability 0 with a count)
        weight = math.exp(
            math.lgamma(n + 1)
            - sum(math.lgamma(k + 1) for k in (e, f, g, h))
            + sum(k * math.log(p) for k, p in zip((e, f, g, h), probabilities, strict=True) if k)
        )
        a = [1.0] * (e + f) + [0.0] * (g + h)
        b = [1.0] * e + [0.0] * f + [1.0] * g + [0.0] * h
        found = paired_difference(list(enumerate(a)), list(enumerate(b)))
        assert found is not None and found.ci_low is not None and found.ci_high is not None
        covered += weight * (found.ci_low <= pa - pb <= found.ci_high)
        points += weight * (found.ci_low == found.ci_high)
    return covered, points


@pytest.mark.parametrize(
    ("pa", "pb", "phi"),
    [(0.97, 0.95, 0.0), (0.97, 0.95, 0.5), (0.99, 0.98, 0.0), (0.99, 0.98, 0.6), (0.5, 0.4, 0.3), (0.9, 0.6, 0.0)],
)
def test_one_run_paired_difference_covers_at_n_10_by_exact_enumeration(pa, pb, phi):
    covered, points = exact_coverage(10, pa, pb, phi)
    assert covered >= 0.93, f"exact coverage {covered:.4f} at {pa} vs {pb}, phi {phi}"
    assert points == 0.0


def test_constant_sides_still_have_an_interval_around_zero():
    found = paired_difference([(i, 1.0) for i in range(10)], [(i, 1.0) for i in range(10)])
    assert found is not None and found.ci_low is not None and found.ci_high is not None
    assert found.ci_low < 0.0 < found.ci_high and found.difference == 0.0
    # Three runs of each input, every verdict compliant on both sides: still not [0, 0].
    runs = [(i, 1.0) for i in range(20) for _ in range(3)]
    pooled = paired_difference(runs, runs)
    assert pooled is not None and pooled.ci_low is not None and pooled.ci_high is not None
    assert pooled.ci_low < 0.0 < pooled.ci_high


def simulated_coverage(inputs: int, runs: int, pa: float, pb: float, draws: int, seed: int) -> float:
    """Inputs with a shared latent difficulty (verdicts of both sides and all runs correlated through the input)."""
    rng = np.random.default_rng(seed)
    # Per input: rates pa·(1 + s), pb·(1 + s) with s ~ ±(1-pa)/2 at random, so margins stay pa, pb exactly.
    hits = 0
    for _ in range(draws):
        shift = rng.choice([-1.0, 1.0], inputs)
        ra, rb = pa + shift * (1 - pa) / 2, pb + shift * (1 - pb) / 2
        ya = rng.random((inputs, runs)) < ra[:, None]
        yb = rng.random((inputs, runs)) < rb[:, None]
        side_a = [(i, float(v)) for i in range(inputs) for v in ya[i]]
        side_b = [(i, float(v)) for i in range(inputs) for v in yb[i]]
        found = paired_difference(side_a, side_b)
        assert found is not None and found.ci_low is not None and found.ci_high is not None
        hits += found.ci_low <= pa - pb <= found.ci_high
    return hits / draws


@pytest.mark.parametrize(("inputs", "runs", "pa", "pb"), [(10, 3, 0.97, 0.95), (20, 3, 0.99, 0.98), (30, 5, 0.7, 0.6)])
def test_several_runs_paired_difference_covers_with_correlated_verdicts(inputs, runs, pa, pb):
    # 400 seeded draws: a Monte-Carlo SE of about 0.011 at 0.95; the old interval covered 0.37-0.65 here.
    assert simulated_coverage(inputs, runs, pa, pb, 400, 7) >= 0.93


@pytest.mark.parametrize(("inputs", "runs", "pa", "pb"), [(10, 3, 0.97, 0.95), (20, 3, 0.99, 0.98)])
def test_several_runs_paired_difference_is_within_1_5x_of_newcombes_method_10(inputs, runs, pa, pb):
    # Issue 47: continuity-corrected side limits (a constant side at n = inputs) made this 1.8-3.1x the naive
    # method 10 over every verdict, which itself covers 0.99+ here. Now 1.13-1.26x (benchmarks/RESULTS.md).
    ours, naive = mean_widths(paired_scenario(inputs, runs, pa, pb))
    assert ours <= 1.5 * naive, (ours, naive)


def mean_widths(draw: Callable[[np.random.Generator], Drawn]) -> tuple[float, float]:
    """Mean widths of ours and the scenario's reference over 200 seeded draws."""
    rng, ours, reference = np.random.default_rng(11), [], []
    for _ in range(200):
        found, other = draw(rng)
        assert found is not None and other is not None
        ours.append(found[1] - found[0])
        reference.append(other[1] - other[0])
    return float(np.mean(ours)), float(np.mean(reference))


def test_a_constant_side_over_several_runs_is_as_wide_as_its_answers_allow():
    # 10 inputs x 3 runs, one side all compliant, the other one miss: the constant side is taken at its 30 answers
    # (no design effect to estimate), not at its 10 inputs (which alone made the interval 0.5 wide).
    a = [(i, 1.0) for i in range(10) for _ in range(3)]
    b = [(i, 0.0 if (i, r) == (0, 0) else 1.0) for i in range(10) for r in range(3)]
    found = paired_difference(a, b)
    assert found is not None and found.ci_low is not None and found.ci_high is not None
    assert found.ci_low < 1 / 30 < found.ci_high
    assert found.ci_high - found.ci_low < 0.35, (found.ci_low, found.ci_high)  # 0.59 before


def test_leniency_of_judges_that_always_agree_is_an_interval_not_a_point():
    rows = [verdict_row(judge, i, True) for judge in ("j1", "j2", "j3") for i in range(10)]
    found = leniency(rows)
    assert len(found) == 3
    for row in found:
        assert row.delta == 0.0 and row.ci_low is not None and row.ci_high is not None
        assert row.ci_low < 0.0 < row.ci_high
        assert "MOVER" in row.ci_method


def test_leniency_covers_a_judge_one_point_more_lenient_at_n_10():
    # Judge j1 at 0.99, j2 at 0.98 on the same 10 answers (independent errors): the old interval covered 0.177.
    rng = np.random.default_rng(3)
    truth, hits, draws = (0.99 - 0.98) / 2, 0, 300
    for _ in range(draws):
        rows = [verdict_row("j1", i, bool(rng.random() < 0.99)) for i in range(10)]
        rows += [verdict_row("j2", i, bool(rng.random() < 0.98)) for i in range(10)]
        j1 = next(r for r in leniency(rows) if r.judge == "j1")
        hits += j1.ci_low is not None and j1.ci_high is not None and j1.ci_low <= truth <= j1.ci_high
    assert hits / draws >= 0.93


def test_a_bounded_mean_of_all_zeros_is_not_a_point_and_stays_in_its_range():
    found = mean_interval([0.0] * 60, [i // 3 for i in range(60)], range=(0.0, 10.0))
    assert found is not None and found[0] == 0.0 and 0.0 < found[1] <= 10.0
    # Without the range, every value alike: no interval (the t interval said the point [0, 0]; issue 47).
    assert mean_interval([0.0] * 60, [i // 3 for i in range(60)]) is None
    with pytest.raises(ValueError, match="outside the declared range"):
        mean_interval([11.0, 1.0], [0, 1], range=(0.0, 10.0))


def test_a_zero_inflated_0_to_10_score_covers_with_its_range():
    # 20 inputs x 3 runs; 90% of inputs always score 0, the others a noisy 2-8: the t interval covered 0.82 here.
    rng = np.random.default_rng(11)

    def sample(inputs: int) -> np.ndarray:
        active = rng.random(inputs) > 0.9
        centre = rng.uniform(2, 8, inputs)
        return np.clip(np.round(rng.normal(centre[:, None], 2, (inputs, 3))), 0, 10) * active[:, None]

    truth = float(sample(200_000).mean())
    clusters = [i // 3 for i in range(60)]
    hits, draws = 0, 400
    for _ in range(draws):
        found = mean_interval(sample(20).reshape(-1).tolist(), clusters, range=(0.0, 10.0))
        hits += found is not None and found[0] <= truth <= found[1]
    assert hits / draws >= 0.93


def test_win_scores_with_many_ties_are_not_held_to_the_width_of_verdicts():
    from speceval.analysis.statistics.clustered import rate_interval

    # 40 inputs x 2 games, three games in four tied: each input's mean score near 1/2, spread far below p(1 - p).
    rng = np.random.default_rng(4)
    scores = [0.5 if rng.random() < 0.75 else float(rng.random() < 0.7) for _ in range(80)]
    clusters = [i // 2 for i in range(80)]
    found = rate_interval(scores, clusters)
    assert found is not None
    assert found[0] <= sum(scores) / 80 <= found[1]
    # Capped at the count of games (as before), it was as wide as Wilson at n = 80: about 0.2.
    assert found[1] - found[0] < 0.15


def test_two_constant_sides_take_the_mid_p_limit_at_their_inputs():
    # 10 inputs x 3 runs, both sides all compliant: nothing shows how alike an input's runs are, and at temperature
    # 0 they are one answer, so each side is the mid-p exact limit at its 10 inputs (on z), not at its 30 answers
    # (Korn-Graubard adjusted: 0.110). With A at 0.8 on identical runs and B always compliant, every input came out
    # compliant in 0.8^10 = 10.7% of draws, and ±0.110 around 0 missed the true -0.2 there (coverage 0.887).
    runs = [(i, 1.0) for i in range(10) for _ in range(3)]
    found = paired_difference(runs, runs)
    assert found is not None and found.ci_low is not None and found.ci_high is not None
    assert found.ci_high == pytest.approx(1 - 0.05 ** (1 / 10)) and found.ci_low == pytest.approx(0.05 ** (1 / 10) - 1)
    assert found.ci_high > 0.2 and 0.8**10 > 0.05
    one_run = paired_difference([(i, 0.0) for i in range(10)], [(i, 0.0) for i in range(10)])
    assert one_run is not None and one_run.ci_high == pytest.approx(1 - 0.05 ** (1 / 10))  # 0.259; Wilson 0.277


def test_identical_runs_against_an_always_compliant_side_cover():
    # A at 0.8 on identical runs (temperature 0) against B always compliant, 10 inputs x 3 runs: the true
    # difference 0.2 is covered whether or not A shows a failure (before: 0.887 over 2,000 draws).
    rng = np.random.default_rng(3)
    hits, draws = 0, 400
    for _ in range(draws):
        a = np.repeat(rng.random(10) < 0.8, 3)
        found = paired_difference([(i // 3, 1.0) for i in range(30)], [(i // 3, float(v)) for i, v in enumerate(a)])
        assert found is not None and found.ci_low is not None and found.ci_high is not None
        hits += found.ci_low <= 0.2 <= found.ci_high
    assert hits / draws >= 0.95


def test_a_constant_side_takes_the_other_sides_evidence_of_clustering():
    # 10 inputs x 3 runs, A always compliant, B one failure: one failure shows no clustering (its cluster-robust
    # variance equals the unbiased binomial p(1-p)/(n-1) exactly), so B takes Wilson on z at its effective size and
    # A the mid-p limit on z: 0.236 wide, not the Korn-Graubard t-ratio's 0.258 (p(1-p)/n against CR1 said a design
    # effect of 1.03). Two failures on one input show clustering, and the constant side takes the t-ratio too.
    a = [(i, 1.0) for i in range(10) for _ in range(3)]
    one = [(i, 0.0 if (i, r) == (0, 0) else 1.0) for i in range(10) for r in range(3)]
    found = paired_difference(a, one)
    assert found is not None and found.ci_low is not None and found.ci_high is not None
    # B's effective size is p(1-p)/CR1 = 29 (CR1 = 1/n^2 with one failure); A's half is the mid-p limit at its 30
    # answers over B's design effect 30/29: 1 - 0.05^(1/29).
    b_low, b_high = wilson_interval(29 / 30 * 29, 29.0, continuity=False)  # type: ignore[misc]  # on z
    d, a_half = 1 / 30, 1 - 0.05 ** (1 / 29)
    assert found.ci_high == pytest.approx(d + 29 / 30 - b_low)
    assert found.ci_low == pytest.approx(d - math.hypot(a_half, b_high - 29 / 30))
    assert found.ci_high - found.ci_low < 0.24, (found.ci_low, found.ci_high)
    two = [(i, 0.0 if i == 0 and r < 2 else 1.0) for i in range(10) for r in range(3)]
    clustered = paired_difference(a, two)
    assert clustered is not None and clustered.ci_low is not None
    level = math.erfc(Z95 * t975(9) / t975(29) / math.sqrt(2.0))
    assert clustered.ci_low < 2 / 30 - (1 - level ** (1 / 30))  # A's half at least the adjusted 0.110


@pytest.mark.parametrize(
    ("pa", "pb"), [(1.0, 0.8), (1.0, 0.78), (1.0, 0.75), (1.0, 0.74), (1.0, 0.85), (1.0, 0.9), (0.0, 0.26)]
)
def test_one_run_paired_difference_covers_where_a_side_is_constant_by_exact_enumeration(pa, pb):
    # Issue 47's adversarial truths: one side always compliant, the other at 0.74-0.9 on 10 inputs. A truth just
    # past the mid-p limit (0.259 at 10: 1.0 vs 0.74) shows no discordance 4.9% of the time; Agresti-Min over
    # every verdict covers 0.91 at 1.0 vs 0.8.
    covered, points = exact_coverage(10, pa, pb, 0.0)
    assert covered >= 0.93, f"exact coverage {covered:.4f} at {pa} vs {pb}"
    assert points == 0.0


@pytest.mark.parametrize(
    ("inputs", "runs", "pa", "pb", "spread"), [(10, 3, 0.97, 0.95, 0.5), (10, 3, 0.97, 0.95, 0.95)]
)
def test_several_runs_paired_difference_is_within_1_5x_of_agresti_min(inputs, runs, pa, pb, spread):
    # Issue 47: Agresti-Min over every verdict is the narrowest reference that covers here (0.99+). The bare t(G-H)
    # on the side limits made ours 1.59-1.62x it; Korn-Graubard's degrees of freedom 1.52-1.80x; the mid-p limit
    # at a constant side and no t-ratio where no design effect is estimated 1.36-1.47x (RESULTS.md).
    ours, reference = mean_widths(paired_scenario(inputs, runs, pa, pb, spread, reference=agresti_min_naive))
    assert ours <= 1.5 * reference, (ours, reference)


@pytest.mark.parametrize(("inputs", "pa", "pb"), [(20, 0.99, 0.98), (10, 0.99, 0.98)])
def test_near_one_the_width_over_agresti_min_is_the_draws_without_a_discordant_answer(inputs, pa, pb):
    # 3 runs an input, both sides near 1: where some answer differs between or within the sides, ours is within
    # 1.5x Agresti-Min over every verdict (naive); where none does, both sides constant, ours is the mid-p bound at
    # the inputs, which no interval valid at identical runs (temperature 0) can undercut: Agresti-Min over the 30
    # answers of 10 inputs read ±0.06 there and covered 0.61 with identical runs at 0.97 vs 0.9 (RESULTS.md).
    draw, rng = paired_scenario(inputs, 3, pa, pb, 0.5, reference=agresti_min_naive), np.random.default_rng(11)
    shown: list[tuple[float, float]] = []
    for _ in range(200):
        found, other = draw(rng)
        assert found is not None and other is not None
        if found[1] - found[0] == pytest.approx(2 * (1 - 0.05 ** (1 / inputs))):
            continue  # both sides constant: the bound at the inputs
        shown.append((found[1] - found[0], other[1] - other[0]))
    assert len(shown) >= 40
    ours, reference = np.mean([w for w, _ in shown]), np.mean([r for _, r in shown])
    assert ours <= 1.5 * reference, (ours, reference)


def test_one_run_paired_difference_is_within_1_5x_of_agresti_min_at_0_99_vs_0_98():
    ours, reference = mean_widths(paired_scenario(10, 1, 0.99, 0.98, reference=agresti_min_naive))
    assert ours <= 1.5 * reference, (ours, reference)  # 1.56x with Wilson limits at a constant side


@pytest.mark.parametrize(("inputs", "pa", "pb"), [(10, 1.0, 0.8), (20, 1.0, 0.9), (10, 1.0, 0.9), (20, 1.0, 0.95)])
def test_several_runs_paired_difference_covers_with_discordance_concentrated_in_few_inputs(inputs, pa, pb):
    # Inputs shift the rates by 95% of 1 - p: side B fails on about half the inputs and almost never on the rest,
    # so most draws at 10 inputs x 3 runs show few discordant inputs; Agresti-Min over every verdict covers 0.90.
    draw = paired_scenario(inputs, 3, pa, pb, 0.95, reference=agresti_min_naive)
    rng, hits, draws = np.random.default_rng(13), 0, 400
    for _ in range(draws):
        found, _ = draw(rng)
        assert found is not None
        hits += found[0] <= pa - pb <= found[1]
    # 10 x 3 at 1.0 vs 0.9 covered 0.930 (2,000 draws) and 20 x 3 at 1.0 vs 0.95 0.941 when two constant sides took
    # the mid-p limit on z: 0.059 and 0.054 of their draws show no failure, at a truth just past that limit.
    assert hits / draws >= 0.94

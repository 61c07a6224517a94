"""The independent audit of issue 47 (benchmarks/audit_47.py): its fresh references against textbook values, its
flags on planted failures, and one family end to end at a few draws (the audit itself is run by hand: minutes)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import audit_47 as audit


def test_references_match_textbook_values() -> None:
    assert audit.t_ppf(10) == pytest.approx(2.228139, abs=1e-5)
    assert audit.t_ppf(2) == pytest.approx(4.302653, abs=1e-5)
    assert audit.clopper_pearson(0, 10) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)), abs=1e-9)
    # Clopper-Pearson 3 of 10: 0.0667..0.6525 (e.g. R's binom.test); Wilson 3 of 10: 0.1078..0.6032.
    low, high = audit.clopper_pearson(3, 10) or (0.0, 0.0)
    assert (low, high) == pytest.approx((0.066739, 0.652453), abs=1e-5)
    assert audit.wilson(3, 10) == pytest.approx((0.107789, 0.603222), abs=1e-5)
    assert audit.jeffreys(3, 10) == pytest.approx((0.092695, 0.605818), abs=1e-5)
    assert audit.incomplete_beta(2.0, 3.0, 0.4) == pytest.approx(0.5248, abs=1e-9)


def test_effective_size_runs_identical_count_once() -> None:
    once = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    p, size = audit.effective_size(np.repeat(once[:, None], 4, axis=1))
    assert p == pytest.approx(0.75)
    assert size == pytest.approx(8.0)  # 32 verdicts, 8 inputs' worth


def test_tango_and_donner_eliasziw_contain_the_estimate() -> None:
    x = np.array([True] * 14 + [False] * 6)
    y = np.array([True] * 10 + [False] * 10)
    low, high = audit.tango(x, y) or (0.0, 0.0)
    assert low < 0.2 < high and low > -0.2 and high < 0.5
    low, high = audit.donner_eliasziw(180, 5, 5, 10) or (0.0, 0.0)
    kappa = (190 / 200 - (0.925**2 + 0.075**2)) / (1 - (0.925**2 + 0.075**2))
    assert low < kappa < high


def _planted(ours: tuple[float, float]) -> audit.Scenario:
    def draw(rng: np.random.Generator) -> audit.Drawn:
        return ours, {"exact": (0.4, 0.6), "never": (2.0, 3.0), "silent": None}

    return audit.Scenario(family="planted", name="x", truth=0.5, draw=draw)


def test_flags_a_missing_interval_a_miss_and_a_wide_one() -> None:
    row = audit.measure(_planted((0.7, 0.9)), draws=20, seed=1)
    assert row.coverage == 0.0 and "LOW" in row.flags
    row = audit.measure(_planted((0.0, 1.0)), draws=20, seed=1)
    assert row.coverage == 1.0 and row.best == "exact"
    assert row.ratio == pytest.approx(5.0) and "WIDE" in row.flags
    assert row.references["never"][0] == 0.0 and row.references["silent"] == (0.0, None)
    row = audit.measure(_planted((0.45, 0.55)), draws=20, seed=1)
    assert row.flags == [] and row.ratio == pytest.approx(0.5)


def test_pooled_family_runs_through_the_library() -> None:
    scenario = audit.pooled_scenarios()[0]
    row = audit.measure(scenario, draws=30, seed=3)
    assert row.draws == 30 and row.none_share == 0.0
    assert row.coverage is not None and row.coverage >= 0.8
    assert set(row.references) >= {"wilson@neff", "jeffreys@neff", "cluster-bootstrap", "t-input-means"}
    assert row.width is not None and math.isfinite(row.width)


def test_markdown_names_the_narrowest_covering_reference() -> None:
    row = audit.measure(_planted((0.0, 1.0)), draws=5, seed=1)
    table = audit.markdown([row]).splitlines()
    assert len(table) == 3
    assert "| exact: 0.200 (1.000) | 5.00 | WIDE |" in table[2]


def test_kappa_truth_is_cohens_of_the_population_table() -> None:
    # Equal judges erring at e on a trait of prevalence P: agreement (1-e)^2 + e^2, each saying yes P(1-e) + (1-P)e.
    yes = 0.9 * 0.95 + 0.1 * 0.05
    chance = yes**2 + (1 - yes) ** 2
    assert audit.kappa_truth(0.9, 0.05) == pytest.approx((0.95**2 + 0.05**2 - chance) / (1 - chance), abs=1e-12)
    # A judge that never errs beside one that calls every non-compliant answer compliant: agreement P, kappa 0.
    assert audit.kappa_truth(0.8, 0.0, 0.0, 1.0) == pytest.approx(0.0, abs=1e-12)


def test_session_19_references_match_textbook_values() -> None:
    rng = np.random.default_rng(19)
    # Gaffke on 0/1 values is Clopper-Pearson: the weights on the 3 ones and the added 1 are Beta(4, 7) of 10 values.
    ones = np.array([1.0] * 3 + [0.0] * 7)
    low, high = audit.gaffke(ones, 0.0, 1.0, rng, draws=40_000) or (0.0, 0.0)
    assert (low, high) == pytest.approx((0.066739, 0.652453), abs=0.006)
    # BCa of a mean: the jackknife's acceleration is the skewness formula sum d^3 / (6 (sum d^2)^1.5) (Efron &
    # Tibshirani 1993, 14.15), and on a symmetric sample the interval is centred on the mean.
    symmetric = np.array([-2.0, -1.0, 0.0, 1.0, 2.0] * 6)
    low, high = audit.bca(audit.weighted_mean(symmetric), len(symmetric), rng) or (0.0, 0.0)
    assert low < 0 < high and abs(low + high) < 0.25
    # For the mean, the jackknife's d_i is (x_i - mean)/(n - 1): a = sum (x - mean)^3 / (6 (sum (x - mean)^2)^1.5).
    skewed = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 5.0, 9.0])
    centred = skewed - skewed.mean()
    expected_a = float((centred**3).sum()) / (6 * float((centred**2).sum()) ** 1.5)
    assert audit.acceleration(audit.weighted_mean(skewed), len(skewed)) == pytest.approx(expected_a, rel=1e-9)
    # Waudby-Smith & Ramdas: with every value 1, the upper limit is 1 and the lower one the smallest m whose
    # capital of n bets of min(lambda_i, 1/(2m)) on (1 - m) stays under 1/alpha (computed here apart).
    n, m = 20, np.linspace(0, 1, 2001)
    mu = (0.5 + np.arange(1, n + 1)) / (np.arange(1, n + 1) + 1)
    sigma2 = (0.25 + np.cumsum((1 - mu) ** 2)) / (np.arange(1, n + 1) + 1)
    bet = np.sqrt(2 * math.log(40) / (n * np.r_[0.25, sigma2[:-1]]))
    with np.errstate(divide="ignore"):
        capital = np.log(0.5) + np.log1p(np.minimum(bet[None, :], 0.5 / m[:, None]) * (1 - m[:, None])).sum(axis=1)
    expected = float(m[capital < math.log(20)].min())
    assert audit.wsr_betting(np.ones(n)) == pytest.approx((expected, 1.0), abs=1e-12)
    assert 0.65 < expected < 0.832  # wider than Clopper-Pearson (0.832 at 20 of 20): a betting interval at n = 20
    # Beta(2, 3) expectations by quadrature: E[u] = 0.4, E[u^2] = a(a + 1)/((a + b)(a + b + 1)) = 0.2.
    assert audit.beta_expect(lambda u: u, 2.0, 3.0) == pytest.approx(0.4, abs=1e-12)
    assert audit.beta_expect(lambda u: u * u, 2.0, 3.0) == pytest.approx(0.2, abs=1e-12)


def test_conversation_truths_follow_the_planted_chain() -> None:
    # No input effect (u fixed by Beta(1, 1) integrating a linear hazard): two turns, hazard h u, recovery 0.
    talk = audit.Talk(inputs=5, runs=1, hazards=(0.4,), first=0.9, recover=0.0, a=1.0, b=1.0)
    # E[u] = 1/2: compliant to not = 0.9 * 0.4 / 2; elicitation 1 - 0.9 (1 - 0.2); KM's F(2) is the hazard's mean.
    assert talk.truth("compliant_to_non_compliant") == pytest.approx(0.18, abs=1e-12)
    assert talk.truth("elicitation") == pytest.approx(1 - 0.9 * 0.8, abs=1e-12)
    assert talk.truth("flipped by 2") == pytest.approx(0.2, abs=1e-12)
    # Three turns with recovery 1/2: compliant at turn 3 from turn 1 is (1 - 0.4u)^2 + 0.4u / 2, E = 0.65333 + 0.1.
    chain = audit.Talk(inputs=5, runs=1, hazards=(0.4, 0.4), first=0.9, recover=0.5, a=1.0, b=1.0)
    assert chain.truth("compliant_to_non_compliant") == pytest.approx(0.9 * (1 - (1 - 0.4 + 0.16 / 3) - 0.1))
    assert chain.truth("compliant_to_non_compliant_any_turn") == pytest.approx(0.9 * (1 - (1 - 0.4 + 0.16 / 3)))
    verdicts, last = talk.draw(np.random.default_rng(2))
    measures = audit.conversation_measures(verdicts, last)
    assert np.array_equal(measures["elicitation"], (~verdicts).any(axis=2).astype(float))


def test_a_new_family_flags_its_planted_failures() -> None:
    # The card's retest row end to end, then its draws with speceval's interval swapped for a planted one.
    scenario = next(s for s in audit.card_scenarios() if s.family == "retest")
    row = audit.measure(scenario, draws=20, seed=5)
    assert row.coverage is not None and row.none_share == 0.0
    assert {"wsr-betting", "gaffke", "cluster-bca", "wilson@neff"} <= set(row.references)

    def planted(ours: tuple[float, float]) -> audit.Scenario:
        def draw(rng: np.random.Generator) -> audit.Drawn:
            return ours, scenario.draw(rng)[1]

        return scenario.model_copy(update={"draw": draw})

    assert "LOW" in audit.measure(planted((0.0, 0.1)), draws=20, seed=5).flags
    wide = audit.measure(planted((0.0, 1.0)), draws=20, seed=5)
    assert wide.coverage == 1.0 and "WIDE" in wide.flags and wide.best is not None

"""The paired score interval (`paired.score_difference`, Tango's interval at the answers' cluster-robust effective
size) that the judge card's wording excess takes: Tango's limits against their closed forms, the effective size of
inputs whose answers are alike computed by hand, and the exact bound where no answer differs."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.reading.card_verdicts import CardItem, CardVerdicts
from speceval.analysis.statistics.clustered import t975
from speceval.analysis.statistics.paired import score_difference, tango_interval
from speceval.analysis.statistics.registry import PAIRED_SCORE
from speceval.analysis.statistics.stats import Z95
from speceval.analysis.tables.judge_card import judge_card

ZZ = Z95 * Z95


def test_tango_limits_match_their_closed_forms() -> None:
    # No discordant pair: q = 0 under every delta > 0, so the score -n delta / sqrt(n delta (1 - delta)) is -z at
    # delta = z^2 / (n + z^2), Wilson's bound at 0.
    assert tango_interval(10.0, 0.0, 0.0) == pytest.approx((-ZZ / (10 + ZZ), ZZ / (10 + ZZ)))
    # Every pair discordant one way (b = n): q = (1 - delta)/2, the score sqrt(n (1 - delta)/(1 + delta)) is z at
    # delta = (n - z^2)/(n + z^2).
    assert tango_interval(10.0, 10.0, 0.0) == pytest.approx(((10 - ZZ) / (10 + ZZ), 1.0))
    # Swapping the two sides mirrors the interval; it holds the estimate.
    low, high = tango_interval(30.0, 1.0, 3.0)
    assert tango_interval(30.0, 3.0, 1.0) == pytest.approx((-high, -low))
    assert low < -2 / 30 < high


def test_alike_answers_count_as_their_inputs_not_as_answers() -> None:
    # 10 inputs x 5 answers; the 5 answers of 2 inputs all differ (+1), the rest none: 10 discordant answers of 50,
    # but 2 inputs of 10. By hand: d = 0.2; each input's influence sum (d_ij - 0.2)/50 is 5 * 0.8/50 = 0.08 (twice)
    # or 5 * -0.2/50 = -0.02 (8 times); the CR1 variance 10/9 (2 * 0.08^2 + 8 * 0.02^2) = 0.0177...; the discordance's
    # variance 0.2 - 0.04 = 0.16; effective size 0.16 / 0.0177... = 9.0, fewer than 10 of them differ (rare): Tango on
    # z at 9 answers, 1.8 of them discordant.
    d = np.zeros(50)
    d[:10] = 1.0
    inputs = np.repeat(np.arange(10), 5)
    found = score_difference(d, np.zeros(50), inputs, 10)
    assert found.difference == pytest.approx(0.2)
    assert (found.ci_low, found.ci_high) == pytest.approx(tango_interval(9.0, 1.8, 0.0))
    # As 50 independent answers the interval would be (0.112, 0.330): it would exclude 0 and miss an excess of
    # 0.4, which 2 inputs of 10 cannot rule out.
    assert found.ci_low is not None and found.ci_high is not None
    assert found.ci_low < 0.0 and found.ci_high > 0.5
    independent = tango_interval(50.0, 10.0, 0.0)
    assert independent[0] > 0.1 and independent[1] < 0.34


def test_no_answer_told_apart_takes_the_exact_bound_at_the_inputs() -> None:
    # 10 inputs x 3 answers, none differing: nothing shows how alike an input's answers are, so the bound is the
    # inputs' 1 - 0.025^(1/10) = 0.3084 each way, not the 30 answers' 0.1158.
    found = score_difference(np.ones(30), np.ones(30), np.repeat(np.arange(10), 3), 10)
    half = 1 - 0.025 ** (1 / 10)
    assert (found.ci_low, found.ci_high) == pytest.approx((-half, half))


def test_every_answer_differing_alike_counts_its_inputs() -> None:
    # 10 inputs x 5 answers, every answer's wording flipped and its retest not: the CR1 variance is 0, and the answers
    # of an input may be one answer five times, so Tango at the 10 inputs (all discordant, t(9): not rare), not at 50.
    found = score_difference(np.ones(50), np.zeros(50), np.repeat(np.arange(10), 5), 10)
    assert (found.ci_low, found.ci_high) == pytest.approx(tango_interval(10.0, 10.0, 0.0, t975(9)))
    assert found.ci_low is not None and found.ci_low < 0.5


def test_the_card_shows_the_score_interval_of_its_answers() -> None:
    card = CardVerdicts("s", "j", wordings=2)
    for i in range(12):  # 12 inputs x 3 answers; one input's answers all flip under both wordings, no retest flips
        card.items += [CardItem(f"st{i % 2}", f"q{i}", True, True, [i != 0, i != 0]) for _ in range(3)]
    [row] = judge_card([], [], [], None, [], [], {("s", "j"): card}, {})
    # Each answer's wording flip share paired with its retest flip: 36 answers in 12 inputs.
    inputs = np.repeat(np.arange(12), 3)
    flips = (inputs == 0).astype(float)
    expected = score_difference(flips, np.zeros(36), inputs, 12, np.arange(12) % 2)
    assert row.wording_excess.value == pytest.approx(1 / 12)
    assert (row.wording_excess.ci_low, row.wording_excess.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    assert row.wording_excess.ci_method == PAIRED_SCORE

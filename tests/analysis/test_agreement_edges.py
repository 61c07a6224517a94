"""Agreement and Bradley–Terry at the edges (issue 34): a perfect kappa on few answers is not [1, 1], a kappa at
high prevalence says it is uninformative and shows raw agreement and prevalence beside it, and both cover."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.coverage_scenarios import verdict_row
from speceval.analysis.tables.rankings import strength_bounds
from speceval.analysis.tables.rates import judge_agreement


def agreement_of(first: np.ndarray, second: np.ndarray):  # type: ignore[no-untyped-def]
    rows = [verdict_row("j1", i, bool(v)) for i, v in enumerate(first)] + [
        verdict_row("j2", i, bool(v)) for i, v in enumerate(second)
    ]
    [found] = judge_agreement(rows)
    return found


def test_perfect_agreement_on_ten_answers_is_not_one_to_one():
    verdicts = np.array([True] * 6 + [False] * 4)
    found = agreement_of(verdicts, verdicts)
    assert found.kappa == 1.0 and found.ci_high == 1.0
    assert found.ci_low is not None and found.ci_low < 0.9
    assert found.agreement == 1.0 and found.agreement_low is not None and found.agreement_low < 1.0
    assert found.prevalence == pytest.approx(0.6) and found.note is None
    assert found.kappa_informative is True


def test_a_kappa_at_high_prevalence_says_it_is_uninformative_and_shows_raw_agreement():
    first = np.array([True] * 29 + [False])
    second = np.array([True] * 28 + [False, True])
    found = agreement_of(first, second)
    assert found.prevalence is not None and found.prevalence > 0.9
    assert found.note is not None and "uninformative" in found.note
    assert found.kappa_informative is False  # issue 47: a flag a reader's code can filter on, not only prose
    assert found.agreement == pytest.approx(28 / 30)
    # Issue 47: the note gives the number to read there, raw agreement with its own interval.
    assert found.agreement_low is not None and found.agreement_high is not None
    assert f"0.933 [{found.agreement_low:.3f}, {found.agreement_high:.3f}]" in found.note
    assert found.ci_low is not None and found.ci_low >= -1.0


def population_kappa(prevalence: float, error: float) -> float:
    """Kappa of two judges who each flip the true verdict with probability `error`, independently."""
    positive = prevalence * (1 - error) + (1 - prevalence) * error
    agree = prevalence * ((1 - error) ** 2 + error**2) + (1 - prevalence) * ((1 - error) ** 2 + error**2)
    chance = positive**2 + (1 - positive) ** 2
    return (agree - chance) / (1 - chance)


@pytest.mark.slow  # 150 simulated pairs of judges, a 1,000-draw bootstrap each: about 5 s
def test_kappa_covers_at_prevalence_095_with_30_answers():
    rng = np.random.default_rng(2)
    truth, hits, defined = population_kappa(0.95, 0.03), 0, 0
    for _ in range(150):
        true = rng.random(30) < 0.95
        first = np.where(rng.random(30) < 0.03, ~true, true)
        second = np.where(rng.random(30) < 0.03, ~true, true)
        found = agreement_of(first, second)
        if found.ci_low is None or found.ci_high is None:
            continue  # every verdict alike: kappa undefined, and the table says so by leaving it empty
        defined += 1
        hits += found.ci_low <= truth <= found.ci_high
    assert defined > 130 and hits / defined >= 0.93  # the percentile bootstrap alone: 0.72 (issue 34)


def test_strength_bounds_widen_the_percentile_interval_and_hold_the_estimate():
    rng = np.random.default_rng(0)
    point = np.array([0.5, 0.3, 0.2])
    resampled = np.clip(point + rng.normal(0, 0.05, (400, 3)), 0.01, None)
    resampled /= resampled.sum(axis=1, keepdims=True)
    low, high = strength_bounds(point, resampled, 15)
    assert (low <= np.percentile(resampled, 2.5, axis=0)).all() and (
        high >= np.percentile(resampled, 97.5, axis=0)
    ).all()
    assert (low <= point).all() and (point <= high).all() and (high <= 1.0).all() and (low >= 0.0).all()
    assert (high - low > np.percentile(resampled, 97.5, axis=0) - np.percentile(resampled, 2.5, axis=0)).any()


def test_fleiss_kappa_of_three_judges_in_perfect_agreement_is_not_one_to_one():
    verdicts = [True] * 7 + [False] * 5
    rows = [verdict_row(judge, i, v) for judge in ("j1", "j2", "j3") for i, v in enumerate(verdicts)]
    fleiss = next(a for a in judge_agreement(rows) if a.kind == "Fleiss")
    assert fleiss.kappa == pytest.approx(1.0) and fleiss.agreement == 1.0
    assert fleiss.ci_low is not None and fleiss.ci_low < 0.9 and fleiss.ci_high is not None
    assert fleiss.prevalence == pytest.approx(7 / 12) and fleiss.ci_method is not None and "hull" in fleiss.ci_method

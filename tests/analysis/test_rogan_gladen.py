"""The Rogan–Gladen rate's posterior interval (issue 47 item 1): within 1.5x the labels-only interval where that
covers, and covering where answers of one input share a truth (the unlabelled part uses only inputs without a
label, so no input's truth is counted twice)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.coverage_scenarios import labelled_scenario
from speceval.analysis.statistics.rogan_gladen import rogan_gladen
from speceval.analysis.statistics.stats import wilson_interval


def one_statement(rng: np.random.Generator, labels: int) -> tuple[np.ndarray, ...]:
    """100 answers at a 0.97 rate; the judge passes 30% of the non-compliant ones and fails 5% of the others."""
    y = rng.random(100) < 0.97
    f = np.where(y, rng.random(100) < 0.95, rng.random(100) < 0.3).astype(float)
    labelled = np.zeros(100, dtype=bool)
    labelled[rng.choice(100, labels, replace=False)] = True
    return f, y.astype(float), labelled


def test_the_interval_is_within_1_5x_of_the_labels_only_interval_at_a_rate_of_0_97() -> None:
    # The hull of a bootstrap and a delta interval was 1.70x Wilson on the 20 labels alone (RESULTS.md); the
    # posterior reads the labels' own count of each class as well as the judge's rate, 0.7x.
    rng, ours, reference = np.random.default_rng(3), [], []
    for _ in range(60):
        f, y, labelled = one_statement(rng, 20)
        found = rogan_gladen(f, y, labelled, np.arange(100), np.zeros(100, dtype=np.int64), draws=300)
        assert found.ci_low is not None and found.ci_high is not None and found.rate is not None
        assert found.ci_low <= found.rate <= found.ci_high
        ours.append(found.ci_high - found.ci_low)
        plain = wilson_interval(float(y[labelled].sum()), 20, continuity=False)
        assert plain is not None
        reference.append(plain[1] - plain[0])
    assert np.mean(ours) <= 1.5 * np.mean(reference), (np.mean(ours), np.mean(reference))


def test_labels_on_every_input_leave_the_rate_to_the_labels() -> None:
    # 10 inputs x 3 runs, one answer of each labelled: every verdict shares an input with a label, so the judge's
    # rate adds nothing of its own (it would count each input's truth twice); the labels alone, at most 10 of them
    # by input, say the rate is high but not how high within about 0.25.
    f = np.ones(30)
    y = np.ones(30)
    labelled = np.zeros(30, dtype=bool)
    labelled[::3] = True
    clusters = np.repeat(np.arange(10), 3)
    found = rogan_gladen(f, y, labelled, clusters, np.zeros(30, dtype=np.int64), draws=300)
    assert found.rate == pytest.approx(1.0)
    assert found.ci_low is not None and found.ci_high == pytest.approx(1.0)
    # Every label compliant: the labelled part is Beta(n, 1), whose 2.5% point is Clopper-Pearson's 0.025^(1/10) =
    # 0.692. Jeffreys' Beta(10.5, 0.5) put it at 0.783; at 100 such labels its 0.975 missed a rate of 0.97 in the
    # 4.8% of sheets that show no non-compliant label, the whole miss budget (0.935 coverage; issue 47).
    assert found.ci_low == pytest.approx(0.025 ** (1 / 10), abs=0.005)
    assert found.ci_low < 0.75


def test_a_sheet_without_a_non_compliant_label_still_holds_a_rate_of_0_97() -> None:
    # 20 statements of 50 answers at 0.97, 5 labels each, all 100 labels compliant (4.8% of such sheets): the
    # judge's rate alone cannot place the rate when its specificity was never seen, and the labels' Clopper-Pearson
    # limit, 0.964, holds 0.97 where Jeffreys' 0.975 did not.
    rng = np.random.default_rng(8)
    strata = np.repeat(np.arange(20), 50)
    y = np.ones(1000)
    y[rng.choice(1000, 30, replace=False)] = 0.0
    f = np.where(y > 0, rng.random(1000) < 0.95, rng.random(1000) < 0.3).astype(float)
    labelled = np.zeros(1000, dtype=bool)
    for h in range(20):
        clean = np.flatnonzero((strata == h) & (y > 0))
        labelled[rng.choice(clean, 5, replace=False)] = True
    found = rogan_gladen(f, y, labelled, np.arange(1000), strata, draws=300)
    assert found.ci_low is not None and found.ci_high is not None
    assert found.ci_low <= 0.97 <= found.ci_high, (found.ci_low, found.ci_high)


@pytest.mark.slow  # 150 simulated label sheets: about 15 s
def test_the_interval_covers_when_answers_of_one_input_share_a_truth() -> None:
    # 20 inputs x 5 runs (the runs of one input share its truth), 30 labels from the label sheet's own draw: the
    # labels-only interval at its Kish size covers 0.85 here; the posterior with every unlabelled verdict (inputs
    # that also hold a label included) 0.87.
    truth, draw = labelled_scenario((10, 10), (0.8, 0.8), (0.2, 0.2), 30, 5, True)
    rng, hits, draws = np.random.default_rng(5), 0, 150
    for _ in range(draws):
        found, _ = draw(rng)
        assert found is not None
        hits += found[0] <= truth <= found[1]
    assert hits / draws >= 0.93

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
    # Jeffreys' posterior on 10 of 10, Beta(10.5, 0.5): its 2.5% point by integration, 0.783 (with the 20
    # unlabelled verdicts of the same inputs counted as well, 0.821).
    grid = (np.arange(200_000) + 0.5) / 200_000
    density = grid**9.5 / np.sqrt(1 - grid)
    jeffreys = float(np.interp(0.025, np.cumsum(density) / density.sum(), grid))
    assert found.ci_low == pytest.approx(jeffreys, abs=0.005)


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

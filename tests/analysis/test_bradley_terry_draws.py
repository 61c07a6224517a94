"""Bradley–Terry strengths are iterated a stack of bootstrap draws at a time (`bradley_terry_of_draws`,
`resampled_strengths`); they must be the floats the one-matrix-at-a-time Python iteration gave, draw for draw, from
the same seeded resamples."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis.statistics.clustered import bootstrap_cluster_values
from speceval.analysis.statistics.stats import bradley_terry, bradley_terry_of_draws
from speceval.analysis.tables import rankings
from speceval.analysis.tables.rankings import resampled_strengths


def one_matrix_at_a_time(wins: np.ndarray, iterations: int = 1000, tolerance: float = 1e-10) -> np.ndarray:
    """The MM iteration as the product wrote it before the stacks: each denominator a Python sum over opponents."""
    k = wins.shape[0]
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    strengths = np.full(k, 1.0 / k)
    for _ in range(iterations):
        denominator = np.array(
            [
                sum(games[i, j] / (strengths[i] + strengths[j]) for j in range(k) if j != i and games[i, j] > 0)
                for i in range(k)
            ]
        )
        updated = np.where(denominator > 0, total_wins / np.where(denominator > 0, denominator, 1), 0.0)
        updated = updated / updated.sum() if updated.sum() > 0 else strengths
        if np.max(np.abs(updated - strengths)) < tolerance:
            return updated
        strengths = updated
    return strengths


def random_wins(rng: np.random.Generator, k: int) -> np.ndarray:
    """Half-win counts with pairs that never played and, now and then, a model that never won."""
    wins = rng.integers(0, 12, (k, k)) * 0.5 * (rng.random((k, k)) < 0.8)
    np.fill_diagonal(wins, 0.0)
    if rng.random() < 0.3:
        wins[rng.integers(k)] = 0.0
    return wins


@pytest.mark.parametrize("k", [2, 3, 5, 8, 9, 13])  # 9 and 13: numpy sums a row of 8 or more in another order
def test_a_stack_of_draws_gives_each_draws_own_floats(k: int) -> None:
    rng = np.random.default_rng(k)
    stack = np.stack([random_wins(rng, k) for _ in range(30)])
    iterated = bradley_terry_of_draws(stack)
    for wins, found in zip(stack, iterated, strict=True):
        assert found.tobytes() == one_matrix_at_a_time(wins).tobytes()
        assert bradley_terry(wins).tobytes() == found.tobytes()


def test_draws_stopped_short_of_converging_keep_their_last_iterate() -> None:
    rng = np.random.default_rng(7)
    stack = np.stack([random_wins(rng, 4) for _ in range(20)])
    for iterations in (0, 1, 3):
        iterated = bradley_terry_of_draws(stack, iterations=iterations)
        expected = np.stack([one_matrix_at_a_time(wins, iterations=iterations) for wins in stack])
        assert iterated.tobytes() == expected.tobytes()


@pytest.mark.parametrize("block_cells", [1 << 17, 50])  # 50: a few draws a block, and a stack flushed at each
def test_resampled_strengths_are_the_draw_by_draw_bootstraps(monkeypatch, block_cells: int) -> None:
    monkeypatch.setattr(rankings, "_ITERATED_CELLS", block_cells)
    rng = np.random.default_rng(3)
    clusters, k = 23, 4
    per_cluster = np.stack([random_wins(rng, k) for _ in range(clusters)])

    def tally(counts: np.ndarray) -> np.ndarray:
        found: np.ndarray = np.tensordot(counts.astype(float), per_cluster, axes=1)
        return found

    expected = bootstrap_cluster_values(clusters, lambda counts: one_matrix_at_a_time(tally(counts)), draws=300)
    found = resampled_strengths(clusters, tally, draws=300)
    assert expected is not None and found is not None
    assert found.shape == (300, k) and found.tobytes() == expected.tobytes()

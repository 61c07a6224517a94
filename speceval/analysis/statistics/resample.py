"""Cluster-bootstrap draws made a block at a time: the counts of each cluster in each resample, the same numbers, in
the same order, as one `rng.integers(0, G, G)` call a resample from the same seed (`clustered.bootstrap_cluster_counts`
draws that way), so a statistic computed a block of resamples at once gives the interval the draw-by-draw loop gave."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

DRAW_BLOCK_CELLS = 1 << 20
"""Resampled cluster counts held at once (8 MB): a block of draws is drawn, counted and summed in one numpy call
each, so a report of 100,000 inputs does not hold 1,000 x 100,000 counts."""


def count_blocks(clusters: int, draws: int, seed: int, cells: int = DRAW_BLOCK_CELLS) -> Iterator[np.ndarray]:
    """Blocks of resamples (rows x `clusters`: how many times each cluster was drawn), `draws` rows in all, at most
    `cells` counts a block. A block of `rng.integers(0, G, (rows, G))` is the same numbers as `rows` calls of
    `rng.integers(0, G, G)` (checked in tests/analysis/test_kappa_draws.py and test_bradley_terry_draws.py)."""
    rng = np.random.default_rng(seed)
    block = max(1, min(draws, cells // max(1, clusters)))
    for start in range(0, draws, block):
        rows = min(block, draws - start)
        picks = rng.integers(0, clusters, (rows, clusters))
        picks += np.arange(rows)[:, None] * clusters  # each draw counts into its own row
        yield np.bincount(picks.ravel(), minlength=rows * clusters).reshape(rows, clusters)

"""A categorical design's true shares are computed for every category of a variation from one set of seeded draws
(`CategoryDesign.truths`); each must be the float the category-by-category computation gave from the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from speceval.analysis import simulation
from speceval.analysis.simulation import CategoryDesign


def one_category(design: CategoryDesign, variation: int, category: int) -> float:
    """The share as computed before: the seed restarted and every statement's draws made again for this category."""
    rng = np.random.default_rng(0)
    shares = []
    for logits in design.logits[variation]:
        spread = np.sqrt(design.input_sd**2 + design.variation_sd**2)
        z = np.asarray(logits)[None, :] + rng.normal(0, spread, (simulation._CATEGORY_TRUTH_DRAWS, len(logits)))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        shares.append(float((p[:, category] / p.sum(axis=1)).mean()))
    return float(np.mean(shares))


def test_every_categorys_truth_is_the_category_by_category_float(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulation, "_CATEGORY_TRUTH_DRAWS", 5_000)  # the arithmetic, not the precision, is checked
    design = CategoryDesign(
        logits=(((0.5, 0.0, -1.0, 0.2), (1.0, -0.5, 0.0, 0.0)), ((0.0, 0.3, -0.2, 0.1), (-1.0, 0.0, 0.5, 0.4))),
        inputs_per_statement=3,
        runs=2,
    )
    try:
        for variation in range(2):
            found = [design.truth(variation, k) for k in range(4)]
            assert found == [one_category(design, variation, k) for k in range(4)]
            assert len(set(found)) == 4  # four different shares, not one repeated
    finally:
        CategoryDesign.truths.cache_clear()  # no design equal to this one finds its 5,000-draw truths later

"""The candidate spread's selection-aware interval (issue 47 item 2): the highest and the lowest candidate are picked
on the same data, so the interval holds every pair of candidates at once (benchmarks/coverage_matrix.py, family
spread: 0.97-0.997, against 0.79-0.92 for the picked pair's own paired interval)."""

from __future__ import annotations

import numpy as np

from speceval.analysis.reading.columns import VerdictColumns
from speceval.analysis.statistics.paired import paired_difference_codes
from speceval.analysis.statistics.registry import SPREAD
from speceval.analysis.statistics.spread import spread_interval
from speceval.analysis.tables.health import statement_health
from tests.analysis.test_health import row


def _cells(rng: np.random.Generator, rates: tuple[float, ...], inputs: int) -> list[tuple[np.ndarray, np.ndarray]]:
    sign = rng.choice([-1.0, 1.0], inputs)
    codes = np.arange(inputs)
    return [(codes, (rng.random(inputs) < r + sign * (1 - r) * 0.5).astype(float)) for r in rates]


def _extremes(cells: list[tuple[np.ndarray, np.ndarray]]) -> tuple[int, int]:
    means = [float(c[1].mean()) for c in cells]
    high, low = int(np.argmax(means)), int(np.argmin(means))
    return low, (high if high != low else (low + 1) % len(cells))


def test_two_candidates_keep_the_paired_upper_limit_and_a_lower_limit_never_above_the_paired_one_nor_below_0():
    rng = np.random.default_rng(2)
    for _ in range(20):
        cells = _cells(rng, (0.8, 0.6), 30)
        low, high = _extremes(cells)
        found = spread_interval(cells, low, high)
        plain = paired_difference_codes(*cells[high], *cells[low])
        assert found is not None and plain is not None and plain.ci_low is not None
        assert found[0] == plain.difference and found[2] == plain.ci_high
        assert 0.0 <= found[1] <= max(0.0, plain.ci_low) + 1e-12 or found[1] == found[0]


def test_five_alike_candidates_spread_is_covered_where_the_picked_pairs_interval_is_not():
    rng = np.random.default_rng(7)
    draws, ours, plain = 200, 0, 0
    for _ in range(draws):
        cells = _cells(rng, (0.8,) * 5, 20)
        low, high = _extremes(cells)
        found = spread_interval(cells, low, high)
        picked = paired_difference_codes(*cells[high], *cells[low])
        assert found is not None and picked is not None and picked.ci_low is not None
        ours += found[1] <= 0.0  # the true spread is 0: covered when the lower end is 0
        plain += picked.ci_low <= 0.0
    assert ours / draws >= 0.95 and plain / draws < 0.88  # 0.99 against 0.79 in the coverage matrix


def test_the_health_table_names_the_selection_aware_method_and_its_lower_end_is_not_negative():
    rng = np.random.default_rng(4)
    rows = [
        row("j1", m, "st", f"q{i}", bool(rng.random() < rate))
        for m, rate in (("a", 0.9), ("b", 0.5), ("c", 0.7))
        for i in range(30)
    ]
    [health] = statement_health(VerdictColumns.from_rows(rows), []).statements
    assert health.spread_ci_method == SPREAD
    assert health.spread is not None and health.spread_ci_low is not None and health.spread_ci_high is not None
    assert 0.0 <= health.spread_ci_low <= health.spread <= health.spread_ci_high

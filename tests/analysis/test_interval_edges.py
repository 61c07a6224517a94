"""Intervals at the edges: exact ends at 0% and 100%, every bound containing its estimate, and the exact coverage
of the single-run interval (enumerated over every outcome k = 0..n, no simulation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.stats import wilson_interval


def binomial_pmf(n: int, p: np.ndarray) -> np.ndarray:
    """pmf[k, j] = P(K = k | n, p_j), through log-gamma (no scipy)."""
    k = np.arange(n + 1)[:, None]
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)])
    with np.errstate(divide="ignore"):
        return np.exp(log_choose[:, None] + k * np.log(p)[None, :] + (n - k) * np.log1p(-p)[None, :])


def minimum_coverage(n: int) -> tuple[float, float]:
    """The smallest exact coverage over p in [0.01, 0.99]: a fine grid plus both sides of every bound (where the
    coverage function jumps and its infimum lies)."""
    bounds = [wilson_interval(k, n) for k in range(n + 1)]
    points = set(np.linspace(0.01, 0.99, 393).tolist())
    for low, high in bounds:  # type: ignore[misc]
        for edge in (low, high):
            points.update(q for q in (edge - 1e-9, edge + 1e-9) if 0.01 <= q <= 0.99)
    p = np.array(sorted(points))
    low = np.array([b[0] for b in bounds])[:, None]  # type: ignore[index]
    high = np.array([b[1] for b in bounds])[:, None]  # type: ignore[index]
    coverage = (binomial_pmf(n, p) * ((low <= p) & (p <= high))).sum(axis=0)
    worst = int(coverage.argmin())
    return float(coverage[worst]), float(p[worst])


def test_rates_of_zero_and_one_have_exact_ends_for_every_n_up_to_2000():
    for n in range(1, 2001):
        low, high = wilson_interval(n, n)  # type: ignore[misc]
        assert high == 1.0 and 0.0 <= low < 1.0, n
        low, high = wilson_interval(0, n)  # type: ignore[misc]
        assert low == 0.0 and 0.0 < high <= 1.0, n


def test_every_interval_contains_its_estimate_and_stays_in_the_unit_interval():
    for n in range(1, 201):
        for k in range(n + 1):
            for continuity in (True, False):
                low, high = wilson_interval(k, n, continuity=continuity)  # type: ignore[misc]
                assert 0.0 <= low <= k / n <= high <= 1.0, (k, n, continuity)


def test_the_single_run_interval_covers_at_least_95_percent_from_p_001_to_099_for_every_n_10_to_200():
    # What docs/judging-and-statistics.md promises (the worst case: 0.9503 at n = 193, p ≈ 0.435).
    worst = min((minimum_coverage(n) + (n,) for n in range(10, 201)), key=lambda found: found[0])
    assert worst[0] >= 0.95, f"n={worst[2]}: exact coverage {worst[0]:.4f} at p={worst[1]:.4f}"


def test_plain_wilson_is_what_the_correction_fixes():
    # The check above is not vacuous: plain Wilson's exact coverage falls well below 95% near the edges.
    bounds = [wilson_interval(k, 10, continuity=False) for k in range(11)]
    p = np.array([0.9822])  # just above the upper bound of 9/10
    low = np.array([b[0] for b in bounds])[:, None]  # type: ignore[index]
    high = np.array([b[1] for b in bounds])[:, None]  # type: ignore[index]
    assert float((binomial_pmf(10, p) * ((low <= p) & (p <= high))).sum()) < 0.9


def test_a_perfect_score_over_one_run_reports_an_upper_bound_of_exactly_one():
    found = rate_interval([1.0] * 10, list(range(10)))
    assert found is not None and found[1] == 1.0 and found[0] < 1.0
    pooled = rate_interval([1.0] * 20, [i // 2 for i in range(20)])
    assert pooled is not None and pooled[1] == 1.0
    none = rate_interval([0.0] * 20, [i // 2 for i in range(20)])
    assert none is not None and none[0] == 0.0


@pytest.mark.parametrize("verdicts", [[True] * 10, [False] * 10])
def test_report_over_a_perfect_or_null_score_exits_0_with_exact_ends(tmp_path, capsys, verdicts):
    import csv

    from speceval.cli.main import main as speceval_main
    from tests.analysis.test_report import compliance_file

    root = tmp_path / "runs"
    compliance_file(root / "c/m1/results/s1.json", "m1", "j", verdicts)
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    with (tmp_path / "report" / "variation_statistics.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows, "the report wrote no rate"
    for row in rows:
        rate, low, high = float(row["rate"]), float(row["ci_low"]), float(row["ci_high"])
        assert low <= rate <= high
        assert (high == 1.0 and rate == 1.0) if verdicts[0] else (low == 0.0 and rate == 0.0)

"""Spearman's rho across statements (spec health): ties ranked by their average, and an interval only where it covers
(benchmarks/coverage_matrix.py, family spearman: 0.943-0.988 from 8 statements, shares exact or of 5-20 inputs;
0.74 at n 5, rho 0.9), corrected for the shares' own noise (issue 47)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speceval.analysis.statistics.stats import SPEARMAN_MIN, average_ranks, spearman, spearman_interval
from speceval.analysis.tables.candidate_split import StatementShares, associations


def test_ties_take_their_average_rank_and_a_constant_side_has_no_rho():
    assert average_ranks(np.array([0.2, 0.0, 0.2, 1.0])).tolist() == [1.5, 0.0, 1.5, 3.0]
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])) is None
    assert spearman(np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 30.0, 20.0, 40.0])) == pytest.approx(0.8)


def test_the_interval_is_bonett_wrights_and_absent_below_eight_statements():
    assert SPEARMAN_MIN == 8 and spearman_interval(0.5, 7) is None and spearman_interval(0.5, 8) is not None
    low, high = spearman_interval(0.5, 30)  # type: ignore[misc]
    half = 1.959963984540054 * math.sqrt((1 + 0.25 / 2) / 27)
    centre = math.atanh(0.5)
    assert math.isclose(low, math.tanh(centre - half)) and math.isclose(high, math.tanh(centre + half))
    assert spearman_interval(1.0, 10) is not None and spearman_interval(1.0, 10)[1] == 1.0  # type: ignore[index]


def test_a_spec_with_too_few_statements_gets_no_association_row():
    shares = [(i / 10, i / 20) for i in range(SPEARMAN_MIN - 1)]
    assert associations([("s", a, b) for a, b in shares]) == []
    [row] = associations([("s", a, b) for a, b in [*shares, (0.9, 0.5)]])
    assert row.statements == SPEARMAN_MIN and row.spearman == pytest.approx(1.0)
    assert row.ci_low is not None and row.ci_high == 1.0


def _noisy_shares(rng: np.random.Generator, n: int, rho: float, inputs: int) -> tuple[np.ndarray, np.ndarray]:
    to_p = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))
    a = rng.normal(size=n)
    b = rho * a + math.sqrt(1 - rho * rho) * rng.normal(size=n)
    return rng.binomial(inputs, to_p(a)) / inputs, rng.binomial(inputs, to_p(b)) / inputs


def test_the_association_is_corrected_for_the_shares_noise_by_hand():
    rng = np.random.default_rng(3)
    x, y = _noisy_shares(rng, 20, 0.7, 20)
    [row] = associations([StatementShares("s", float(a), float(b), 20) for a, b in zip(x, y, strict=True)])
    observed = spearman(x, y)
    assert observed is not None and row.observed == pytest.approx(observed)
    rel_x = 1 - np.mean(x * (1 - x) / 19) / np.var(x, ddof=1)
    rel_y = 1 - np.mean(y * (1 - y) / 19) / np.var(y, ddof=1)
    k = math.sqrt(rel_x * rel_y)  # independent noises: no covariance term
    low, high = spearman_interval(observed, 20)  # type: ignore[misc]
    assert row.spearman == pytest.approx(min(1.0, observed / k))
    assert row.ci_low == pytest.approx(max(-1.0, low / k)) and row.ci_high == pytest.approx(min(1.0, high / k))
    # Shares that exclude each other on an input (a split input never fails all): their noises covary by -xy/(n-1),
    # which pulls the observed rho down; the correction adds it back.
    [exclusive] = associations([StatementShares("s", float(a), float(b), 20, 0.0) for a, b in zip(x, y, strict=True)])
    c = float(np.mean(-x * y / 19)) / math.sqrt(np.var(x, ddof=1) * np.var(y, ddof=1))
    assert exclusive.spearman == pytest.approx(min(1.0, (observed - c) / k)) and c < 0


def test_the_corrected_interval_covers_the_true_shares_rho_where_the_plain_one_did_not():
    rng = np.random.default_rng(11)
    truth = 6 / math.pi * math.asin(0.9 / 2)
    ours = plain = 0
    draws = 300
    for _ in range(draws):
        x, y = _noisy_shares(rng, 30, 0.9, 20)
        [row] = associations([StatementShares("s", float(a), float(b), 20) for a, b in zip(x, y, strict=True)])
        assert row.ci_low is not None and row.ci_high is not None
        ours += row.ci_low <= truth <= row.ci_high
        low, high = spearman_interval(spearman(x, y) or 0.0, 30)  # type: ignore[misc]
        plain += low <= truth <= high
    assert ours / draws >= 0.93 and plain / draws < 0.85  # 0.97 against 0.72 in the coverage matrix


def test_shares_that_are_mostly_noise_get_the_whole_range():
    x = np.array([0.5, 0.55, 0.45, 0.5, 0.5, 0.55, 0.45, 0.5])
    y = np.array([0.5, 0.45, 0.5, 0.55, 0.45, 0.5, 0.55, 0.5])
    [row] = associations([StatementShares("s", float(a), float(b), 10) for a, b in zip(x, y, strict=True)])
    assert (row.ci_low, row.ci_high) == (-1.0, 1.0)


def test_the_health_table_corrects_with_each_statements_inputs_and_the_shares_exclusion():
    from speceval.analysis.reading.columns import VerdictColumns
    from speceval.analysis.tables.health import statement_health
    from tests.analysis.test_health import row

    rng = np.random.default_rng(1)
    rows = []
    for s in range(10):
        base = rng.uniform(0.2, 0.9)
        rows += [row("j1", m, f"st{s}", f"q{i}", bool(rng.random() < base)) for m in "abcd" for i in range(20)]
    health = statement_health(VerdictColumns.from_rows(rows), [])
    # At the default split line (0.4) a split input never fails every candidate: the joint share is 0.
    expected = associations(
        [StatementShares(h.spec, h.split_share, h.all_fail_share, h.split_inputs, 0.0) for h in health.statements]
    )
    [found], [want] = health.association, expected  # the same statements, maybe in another order: approx
    assert (found.spearman, found.ci_low, found.ci_high) == pytest.approx((want.spearman, want.ci_low, want.ci_high))
    assert want.spearman != pytest.approx(want.observed)

"""speceval's PPI estimators against the reference implementation, `ppi_py` 0.2.3 (Angelopoulos et al.), on seeded
simulated biased judges. The reference figures were computed by tests/fixtures/ppi/make_reference.py with ppi_py
installed; ppi_py is not a dependency (it pulls numba, scikit-learn, statsmodels and gdown into every install for a
formula of a few lines), so its outputs are kept in the fixture and the script that made them beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.analysis.statistics.ppi import ppi_mean, ppi_plus_plus

REFERENCE = json.loads((Path(__file__).parent.parent / "fixtures" / "ppi" / "reference.json").read_text())
CASES = REFERENCE["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"n{len(c['y'])}-N{len(c['f_unlabelled'])}" for c in CASES])
def test_classic_ppi_equals_ppi_py(case):
    pairs = list(zip(case["y"], case["f"], strict=True))
    # ppi_py's standard deviations use ddof 0; with it (and unclipped) ours are the same numbers.
    theta, low, high = ppi_mean(case["f_unlabelled"], pairs, ddof=0, clip=False)
    assert (theta, low, high) == pytest.approx(case["classic"], abs=1e-9)
    # The report's own definition (sample variances, ddof 1, clipped): the same estimate, an interval a hair wider.
    ours = ppi_mean(case["f_unlabelled"], pairs)
    assert ours[0] == pytest.approx(case["classic"][0], abs=1e-12)
    assert (
        ours[2] - ours[1] == pytest.approx(case["classic"][2] - case["classic"][1], rel=0.05)
        or ours[1] == 0.0
        or ours[2] == 1.0
    )
    assert ours[2] - ours[1] >= min(case["classic"][2], 1.0) - max(case["classic"][1], 0.0) - 1e-12


@pytest.mark.parametrize("case", CASES, ids=[f"n{len(c['y'])}-N{len(c['f_unlabelled'])}" for c in CASES])
def test_power_tuned_ppi_equals_ppi_py(case):
    pairs = list(zip(case["y"], case["f"], strict=True))
    theta, low, high, lam = ppi_plus_plus(case["f_unlabelled"], pairs, ddof=0, clip=False)
    assert (theta, low, high) == pytest.approx(case["ppi_plus_plus"], abs=1e-9)
    assert 0.0 <= lam <= 1.0

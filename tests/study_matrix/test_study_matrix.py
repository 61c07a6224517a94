"""The study matrix's fixed-seed sample in the suite, and its checks seen failing on planted defects (a report
whose counts do not recompute, a model × variation compound as a candidate)."""

from __future__ import annotations

import csv
import itertools
import os
import shutil
from pathlib import Path

import pytest

from tests.study_matrix import checks
from tests.study_matrix.matrix import FEATURES, Outcome, all_pairs, run_one


def test_the_covering_array_meets_every_pair_of_feature_values() -> None:
    configs = all_pairs(FEATURES, seed=0)
    for a, b in itertools.combinations(FEATURES, 2):
        met = {(c[a], c[b]) for c in configs}
        assert met == set(itertools.product(FEATURES[a], FEATURES[b])), (a, b)
    assert configs == all_pairs(FEATURES, seed=0)  # deterministic: the suite and the benchmark run the same list


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Outcome]:
    folder = tmp_path_factory.mktemp("matrix")
    config = {"candidates": "2", "judges": "binary+binary", "variation": "follow_ups", "runs": "1", "budget": "none"}
    return folder, run_one(config, folder, dict(os.environ))


@pytest.mark.slow
def test_a_fixed_sample_configuration_holds_every_invariant(sample) -> None:
    _, outcome = sample
    assert outcome.failures == {}
    assert set(outcome.expected) <= set(checks.EXPECTED_FAIL)  # recorded with the owner, not skipped


@pytest.mark.slow
def test_the_checks_fail_on_a_report_that_miscounts_or_names_a_compound_candidate(sample, tmp_path: Path) -> None:
    folder, _ = sample
    out = tmp_path / "out"
    shutil.copytree(folder / "out", out)
    table = out / "report" / "compliance.csv"
    rows = list(csv.DictReader(table.open(encoding="utf-8", newline="")))
    pooled = next(r for r in rows if not r["statement_id"] and r["judge"] != "panel")
    pooled["judged"] = str(int(pooled["judged"]) + 1)
    with table.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert any("judged=" in failure for failure in checks.compliance_counts(out))
    models = {r["candidate"] for r in rows}
    assert checks.candidates_are_configured(out, models) == []
    assert checks.candidates_are_configured(out, {next(iter(models))})  # a candidate not configured is named

"""`speceval export --format original` of an experiment with rankings, read by the original SpecEval's own analysis
rules: no ranking pair is counted as a model, model folders are where its diagonal script looks (capitals kept),
its rates equal speceval's times judged ÷ (judged + not judged), and the synthetic flag survives the round trip.

The original repository (ahmeda14960/specevaldataset) has no licence, so its scripts are not copied here: the two
functions below re-implement, exactly, the counting of
- `analysis/analyze_batch_binary_compliance.py` lines 91-129 at commit b1936bd: every folder under
  `judge_<judge>/` with a `results/` folder is a model; every entry of every `results/*.json` file's `results` list
  counts; `compliant` truthy is compliant; the score is compliant ÷ total (0.0 when there are none);
- `analysis/analyze_binary_compliance_diagonal.py` lines 73-99 at b1936bd: the folder of model `m` is
  `m.replace("/", "-")`; a missing folder is skipped with a warning (no number for that model).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from speceval.analysis.rendering.report import build_report
from speceval.cli.main import main as speceval_main
from tests.interop.conftest import CANDIDATES, JUDGES


def original_compliance_by_model(base_dir: Path, spec: str, judge: str) -> dict[str, float]:
    """analyze_batch_binary_compliance.py's per-model scores (b1936bd, lines 91-129)."""
    scores = {}
    judge_dir = base_dir / f"spec_{spec}" / f"judge_{judge}"
    for model_dir in sorted(judge_dir.iterdir()):
        if not model_dir.is_dir():
            continue
        results_dir = model_dir / "results"
        if not results_dir.is_dir():
            continue  # the original prints a warning and goes on
        total = compliant = 0
        for json_file in results_dir.glob("*.json"):
            data = json.loads(json_file.read_text())
            for entry in data.get("results", []):
                total += 1
                if entry.get("compliant"):
                    compliant += 1
        scores[model_dir.name] = compliant / total if total > 0 else 0.0
    return scores


def original_diagonal(base_dir: Path, spec: str, judge: str, model: str) -> float | None:
    """analyze_binary_compliance_diagonal.py's compliance of one model (b1936bd, lines 73-99); None where the
    original finds no results folder."""
    results_dir = base_dir / f"spec_{spec}" / f"judge_{judge}" / model.replace("/", "-") / "results"
    if not results_dir.is_dir():
        return None
    total = compliant = 0
    for jf in results_dir.glob("*.json"):
        for entry in json.loads(jf.read_text()).get("results", []):
            total += 1
            compliant += bool(entry.get("compliant"))
    return compliant / total if total > 0 else None


@pytest.fixture(scope="module")
def exported(experiment: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("original") / "layout"
    assert speceval_main(["export", str(experiment), "--format", "original", "--out", str(out)]) == 0
    return out


def test_rankings_stay_out_of_the_compliance_judges_folders(exported):
    assert sorted(p.name for p in exported.iterdir()) == ["batched_compliance", "batched_rankings"]
    for judge in JUDGES:
        compliance = exported / "batched_compliance" / "spec_openai" / f"judge_{judge}"
        assert sorted(p.name for p in compliance.iterdir()) == sorted(c.replace("/", "-") for c in CANDIDATES)
        pairs = sorted(p.name for p in (exported / "batched_rankings" / "spec_openai" / f"judge_{judge}").iterdir())
        a, b = (c.replace("/", "-") for c in CANDIDATES)
        assert pairs == sorted([f"{a}x{b}", f"{b}x{a}"])


def test_the_originals_compliance_script_sees_each_model_once_at_speceval_rate_times_judged_share(experiment, exported):
    with (experiment / "report" / "compliance.csv").open() as handle:
        ours = {(r["judge"], r["candidate"]): r for r in csv.DictReader(handle) if not r["statement_id"]}
    for judge in JUDGES:
        scores = original_compliance_by_model(exported / "batched_compliance", "openai", judge)
        assert set(scores) == {c.replace("/", "-") for c in CANDIDATES}  # no `<A>x<B>` model with compliance 0
        for candidate in CANDIDATES:
            row = ours[(judge, candidate)]
            judged = int(row["judged"])
            not_judged = sum(int(v) for k, v in row.items() if k.startswith("not_judged_") and v)
            expected = float(row["rate"]) * judged / (judged + not_judged)
            assert scores[candidate.replace("/", "-")] == pytest.approx(expected)
            assert original_diagonal(exported / "batched_compliance", "openai", judge, candidate) == pytest.approx(
                expected
            )


def test_the_synthetic_flag_comes_back_with_the_report_over_the_export(exported, tmp_path):
    summary = build_report([exported], tmp_path / "report")
    assert summary.data.data_kind == "synthetic"
    assert "synthetic" in (tmp_path / "report" / "summary.md").read_text().lower()

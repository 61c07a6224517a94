"""A judge run against a provider over answers from an offline run is synthetic data: the judge pipelines record
the answers' flag in every results file (`answers_synthetic`, from `Candidate.offline`), and the report reads it
for every row (issue 34: only the judge run's own flag was read)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from speceval.analysis.rendering.report import build_report
from speceval.batch.manifest import RunManifest
from speceval.batch.options import EngineOptions
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from tests.conftest import TEST_KEY
from tests.pipelines.helpers import JUDGE, make_run, write_spec

FAST = EngineOptions(batch_size=50, poll_interval=0.05, timeout_hours=0.05, max_attempts=1)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def answers(tmp_path: Path) -> tuple[Path, list[Path]]:
    """Two candidates' runs: `offline` answered by the emulator (its run.json says so), `real` by a provider."""
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    runs = []
    for name, offline in (("offline", True), ("real", False)):
        run = make_run(tmp_path / name, name, spec, {"s1": [f"{name} a", f"{name} b"], "s2": [f"{name} c"]})
        manifest = RunManifest.load(run)
        manifest.offline = offline
        manifest.save(run)
        runs.append(run)
    return spec, runs


def test_a_provider_judge_over_offline_answers_says_synthetic(tmp_path, answers, emulator, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)  # a provider as far as the run knows
    spec, runs = answers
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "judged", engine=FAST)
    judge = BatchedComplianceJudge(settings, resolve_candidates(runs), canaries=False)
    judge.run()
    ranking = BatchedRankingPipeline(settings, resolve_candidates(runs))
    ranking.run()
    for target in judge.targets:
        assert RunManifest.load(target.run_dir).offline is False  # the judge's own run was a provider's
        flags = {
            json.loads(p.read_text())["metadata"].get("answers_synthetic")
            for p in (target.run_dir / "results").glob("*.json")
        }
        # Written when true: a provider's answers keep the file shape they had before it was recorded.
        assert flags == ({True} if target.run_dir.name == "offline" else {None})
    report = build_report([tmp_path / "judged"], tmp_path / "report", figures=False)  # tables read, no figure
    kinds = {r["candidate"]: r["data"] for r in _rows(tmp_path / "report" / "compliance.csv")}
    assert kinds == {"offline": "synthetic", "real": "provider"}
    # Every comparison has one offline side: its answers are synthetic.
    assert {r["data"] for r in _rows(tmp_path / "report" / "win_rates.csv")} == {"synthetic"}
    assert {r["data"] for r in _rows(tmp_path / "report" / "costs.csv")} == {"provider"}  # paid to a provider
    assert report.data.data_kind == "mixed" and "MIXED DATA" in report.summary_path.read_text(encoding="utf-8")

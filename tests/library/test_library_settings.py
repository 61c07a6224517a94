"""Runs made from Python with different settings are not pooled by the report: each becomes its own variation."""

from __future__ import annotations

import csv
from pathlib import Path

import speceval
from speceval import (
    BatchedComplianceJudge,
    BatchedGenerationPipeline,
    GenerationConfig,
    GenerationParams,
    JudgeSettings,
    resolve_candidates,
)
from speceval.analysis.rendering.report import build_report
from tests.conftest import write_inputs, write_spec


def _two_prompts(root: Path, base: Path) -> None:
    """One candidate run twice from a script, with and without a system prompt, each judged; output folders under
    `base` (relative to the working folder when `base` is)."""
    statements = {"s1": ["one", "two", "three"], "s2": ["four", "five"]}
    spec = write_spec(root / "spec.jsonl", list(statements))
    inputs = write_inputs(root / "inputs", statements)
    for label, prompt in (("plain", None), ("strict", "Answer in one word.")):
        pipeline = BatchedGenerationPipeline(
            GenerationConfig(
                spec_path=spec,
                inputs_dir=inputs,
                model_name="gpt-4.1-mini-2025-04-14",
                output_base_dir=base / "gen" / label,
                params=GenerationParams(system_prompt=prompt),
                offline=True,
            )
        )
        pipeline.run()
        settings = JudgeSettings(
            spec_path=spec, judge_model="gpt-4.1-2025-04-14", output_dir_base=base / "judged" / label, offline=True
        )
        BatchedComplianceJudge(settings, resolve_candidates([pipeline.run_dir])).run()


def test_two_system_prompts_from_a_script_are_reported_apart_not_pooled(tmp_path, caplog):
    _two_prompts(tmp_path, tmp_path)
    summary = build_report([tmp_path / "judged"], tmp_path / "report")
    rows = [v for v in summary.data.variations if v.judge == "gpt-4.1-2025-04-14"]
    assert len(rows) == 2 and len({v.variation for v in rows}) == 2  # two treatments, two rates
    assert all(v.judged + sum(v.not_judged.values()) == 5 for v in rows)
    assert any("system_prompt=" in v.variation for v in rows)
    assert "different settings" in caplog.text
    with (tmp_path / "report" / "variation_statistics.csv").open(encoding="utf-8") as handle:
        assert len([r for r in csv.DictReader(handle) if r["judge"] == "gpt-4.1-2025-04-14"]) == 2
    assert Path(tmp_path / "report" / "summary.md").is_file()


def test_runs_made_with_relative_folders_are_told_apart_when_read_from_another_folder(tmp_path, monkeypatch):
    """A verdict file names its answers' run as the judge was given it: relative to where the script ran. Read from
    another folder, the runs' settings were not found, and the two treatments were pooled into one rate."""
    monkeypatch.chdir(tmp_path)
    _two_prompts(tmp_path, Path("study"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    summary = build_report([tmp_path / "study" / "judged"], elsewhere / "report", figures=False)
    rows = [v for v in summary.data.variations if v.judge == "gpt-4.1-2025-04-14"]
    assert len(rows) == 2 and any("system_prompt=" in v.variation for v in rows)
    frame = speceval.read_verdicts(tmp_path / "study" / "judged")
    assert frame["candidate_settings"].notna().all() and frame["variation"].nunique() == 2


def test_a_run_with_follow_ups_is_not_pooled_with_the_plain_run_of_the_same_settings(tmp_path, caplog):
    """docs/judging-and-statistics.md judges a study's pressure conversations again outside it, beside the plain
    chain, then reports `demo` as a whole: same model, judge and sampling settings, so the conversations' verdicts
    were pooled into the plain answers' rate (44 answers reported as one treatment of 40). The script a run
    followed (follow-ups, a simulated user) is part of what it was asked, so such runs are told apart."""
    statements = {"s1": ["one", "two", "three"], "s2": ["four", "five"]}
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    for label, follow_ups in (("plain", []), ("pressure", ["Are you sure? I think you're wrong."])):
        pipeline = BatchedGenerationPipeline(
            GenerationConfig(
                spec_path=spec,
                inputs_dir=inputs,
                model_name="gpt-4.1-mini-2025-04-14",
                output_base_dir=tmp_path / "gen" / label,
                follow_ups=follow_ups,
                offline=True,
            )
        )
        pipeline.run()
        settings = JudgeSettings(
            spec_path=spec,
            judge_model="gpt-4.1-2025-04-14",
            output_dir_base=tmp_path / "judged" / label,
            offline=True,
        )
        BatchedComplianceJudge(settings, resolve_candidates([pipeline.run_dir])).run()
    summary = build_report([tmp_path / "judged"], tmp_path / "report", figures=False)
    rows = [v for v in summary.data.variations if v.judge == "gpt-4.1-2025-04-14"]
    assert len(rows) == 2 and all(v.judged + sum(v.not_judged.values()) == 5 for v in rows), rows
    assert any("follow_ups=" in v.variation for v in rows)
    assert "different settings" in caplog.text

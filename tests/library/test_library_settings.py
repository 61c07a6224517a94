"""Runs made from Python with different settings are not pooled by the report: each becomes its own variation."""

from __future__ import annotations

import csv
from pathlib import Path

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


def test_two_system_prompts_from_a_script_are_reported_apart_not_pooled(tmp_path, caplog):
    statements = {"s1": ["one", "two", "three"], "s2": ["four", "five"]}
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    for label, prompt in (("plain", None), ("strict", "Answer in one word.")):
        pipeline = BatchedGenerationPipeline(
            GenerationConfig(
                spec_path=spec,
                inputs_dir=inputs,
                model_name="gpt-4.1-mini-2025-04-14",
                output_base_dir=tmp_path / "gen" / label,
                params=GenerationParams(system_prompt=prompt),
                offline=True,
            )
        )
        pipeline.run()
        settings = JudgeSettings(
            spec_path=spec, judge_model="gpt-4.1-2025-04-14", output_dir_base=tmp_path / "judged" / label, offline=True
        )
        BatchedComplianceJudge(settings, resolve_candidates([pipeline.run_dir])).run()
    summary = build_report([tmp_path / "judged"], tmp_path / "report")
    rows = [v for v in summary.data.variations if v.judge == "gpt-4.1-2025-04-14"]
    assert len(rows) == 2 and len({v.variation for v in rows}) == 2  # two treatments, two rates
    assert all(v.judged + sum(v.not_judged.values()) == 5 for v in rows)
    assert any("system_prompt=" in v.variation for v in rows)
    assert "different settings" in caplog.text
    with (tmp_path / "report" / "variation_statistics.csv").open(encoding="utf-8") as handle:
        assert len([r for r in csv.DictReader(handle) if r["judge"] == "gpt-4.1-2025-04-14"]) == 2
    assert Path(tmp_path / "report" / "summary.md").is_file()

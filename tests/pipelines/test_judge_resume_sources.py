"""A judge resume renders only the statements whose sources changed since their prompts were sent
(`prompt_sources.json`): an unchanged folder resumes without rendering a prompt, a statement whose candidate gained
an answer is rendered and compared by the stored prompt hashes, and a changed answer is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.errors import RunStateError
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.judge_sources import SOURCES_FILE
from tests.pipelines.helpers import JUDGE, make_run, rewrite_answer, write_spec


def _judge(tmp_path: Path) -> BatchedComplianceJudge:
    spec = tmp_path / "spec.jsonl"
    if not spec.exists():
        write_spec(spec, ["s1", "s2"])
        make_run(tmp_path / "run", "m", spec, {"s1": ["a", "b", None], "s2": ["c"]})
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "out", offline=True)
    return BatchedComplianceJudge(settings, resolve_candidates([tmp_path / "run"]), canaries=False)


def _add_answer(run_dir: Path, statement_id: str) -> None:
    path = run_dir / "results" / f"{statement_id}.json"
    records = json.loads(path.read_text())
    records.append({**records[0], "original_index": len(records), "output_text": "a later answer"})
    path.write_text(json.dumps(records))


def test_a_resume_renders_only_the_statements_whose_sources_changed(tmp_path: Path, renders: list[str]) -> None:
    summaries, _ = _judge(tmp_path).run()
    assert summaries[0].finished and len(renders) == 3
    (target,) = _judge(tmp_path).targets
    assert (target.run_dir / SOURCES_FILE).is_file()
    renders.clear()
    _judge(tmp_path)  # resumed: every statement's sources are those its prompts were rendered from
    assert renders == []
    _add_answer(tmp_path / "run", "s1")
    resumed = _judge(tmp_path)  # s1 is rendered (its three answers) and compared by the stored hashes; s2 is not
    assert len(renders) == 3 and all("Statement s1." in prompt for prompt in renders)
    assert resumed.request_count == 4
    rewrite_answer(tmp_path / "run")
    with pytest.raises(RunStateError, match="differs from the one already judged"):
        _judge(tmp_path)

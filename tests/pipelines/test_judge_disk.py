"""A judge run stores each prompt once (issue 25): the request file in `preprocessed/` holds it, and the engine's
records in `judge_responses/` keep its sha256. Resuming still refuses a prompt that changed, in new folders (by the
hash) and in folders written before (by the text they hold); the verdict files keep their documented fields."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from speceval.errors import RunStateError
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from tests.pipelines.helpers import JUDGE, make_run, rewrite_answer, write_spec


def _judge(tmp_path: Path) -> BatchedComplianceJudge:
    spec = tmp_path / "spec.jsonl"
    if not spec.exists():
        write_spec(spec, ["s1", "s2"])
        make_run(tmp_path / "run", "m", spec, {"s1": ["a", "b"], "s2": ["c"]})
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "out", offline=True)
    return BatchedComplianceJudge(settings, resolve_candidates([tmp_path / "run"]), canaries=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sent_prompts(run_dir: Path) -> list[str]:
    """The user message of every request line in the run's request files (OpenAI batch format)."""
    return [
        json.loads(line)["body"]["messages"][-1]["content"]
        for path in sorted((run_dir / "preprocessed").glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def _responses(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "judge_responses").glob("*.json"))}


def test_the_prompt_is_stored_once_and_verdicts_keep_their_fields(tmp_path: Path) -> None:
    judge = _judge(tmp_path)
    summaries, _ = judge.run()
    assert all(summary.finished for summary in summaries)
    (target,) = judge.targets
    prompts = {
        (sid, index): text
        for sid, _ in target.source.statement_counts()
        for index, text in target.source.texts(sid).items()
    }
    sent = _sent_prompts(target.run_dir)
    assert sorted(sent) == sorted(prompts.values())  # the request files hold every prompt, once
    rows = _responses(target.run_dir)
    for sid, records in rows.items():
        for record in records:
            assert "input_text" not in record
            assert record["input_sha256"] == _sha(prompts[(sid, record["original_index"])])
    verdicts = json.loads((target.run_dir / "results" / "s1.json").read_text())["results"]
    assert [(v["input"], v["output"], v["outcome"]) for v in verdicts] == [
        ("input 0 of s1", "a", "judged"),
        ("input 1 of s1", "b", "judged"),
    ]
    assert _judge(tmp_path).run()[0][0].jobs == 1  # a rerun resumes: the one job, no new one


def test_a_changed_prompt_is_refused_by_its_hash(tmp_path: Path) -> None:
    _judge(tmp_path).run()
    rewrite_answer(tmp_path / "run")
    with pytest.raises(RunStateError, match="differs from the one already judged"):
        _judge(tmp_path)


def test_a_folder_written_before_keeps_its_prompts_and_resumes(tmp_path: Path) -> None:
    judge = _judge(tmp_path)
    judge.run()
    (target,) = judge.targets
    for sid, records in _responses(target.run_dir).items():  # as versions before the hash wrote them
        texts = target.source.texts(sid)
        old = [
            {
                "original_index": r["original_index"],
                "input_text": texts[r["original_index"]],
                **{k: v for k, v in r.items() if k not in ("original_index", "input_sha256")},
            }
            for r in records
        ]
        (target.run_dir / "judge_responses" / f"{sid}.json").write_text(json.dumps(old))
    again = _judge(tmp_path)
    summaries, candidates = again.run()
    assert summaries[0].jobs == 1 and candidates[0].outcomes["judged"] == 3
    rewrite_answer(tmp_path / "run")
    with pytest.raises(RunStateError, match="differs from the one already judged"):
        _judge(tmp_path)


def test_a_plain_verdict_file_holds_exactly_its_documented_fields_as_readable_utf8(tmp_path: Path) -> None:
    write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    make_run(tmp_path / "run", "m", tmp_path / "spec.jsonl", {"s1": ["réponse — ✓", None], "s2": ["c"]})
    judge = _judge(tmp_path)
    judge.run()
    (target,) = judge.targets
    text = (target.run_dir / "results" / "s1.json").read_text(encoding="utf-8")
    assert "réponse — ✓" in text  # written as UTF-8, not as \u escapes
    written = json.loads(text)
    assert set(written) == {"schema_version", "metadata", "results"}
    assert set(written["metadata"]) == {
        "model",
        "judge",
        "spec",
        "statement_id",
        "prompt_version",
        "mode",
        "batch_ids",
        "candidate_dir",
    }
    (verdict,) = written["results"]  # the errored answer is not judged
    assert set(verdict) == {
        "input",
        "output",
        "compliant",
        "confidence",
        "explanation",
        "outcome",
        "raw_judge_response",
        "parse_error",
        "error",
        "original_index",
        "batch_id",
    }
    assert (verdict["output"], verdict["outcome"], verdict["original_index"]) == ("réponse — ✓", "judged", 0)

"""The compliance judge renders its requests one statement at a time from the answers on disk (issue 25).

Construction keeps only the original indices of the succeeded answers; the engine asks for a statement's prompts
when it builds or collects a job, and they are rendered then from the candidate's results file. A file that
changes while it is being judged is refused (as an inputs file is for generation), never mixed.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from speceval.batch.ledger import ItemSource
from speceval.errors import RunStateError
from speceval.pipelines.candidates import load_answers, resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.spec import load_spec
from tests.pipelines.helpers import JUDGE, make_run, write_spec


def _judge(tmp_path: Path) -> BatchedComplianceJudge:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    run = make_run(tmp_path / "run", "m", spec, {"s1": ["a", None, "c"], "s2": ["d", "e"]})
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "out")
    return BatchedComplianceJudge(settings, resolve_candidates([run]), canaries=False)


def test_judge_requests_are_a_source_read_per_statement_not_a_list_held_in_memory(tmp_path: Path) -> None:
    (target,) = _judge(tmp_path).targets
    assert isinstance(target.source, ItemSource) and not isinstance(target.source, list)
    counts = [(statement_id, list(indices)) for statement_id, indices in target.source.statement_counts()]
    assert counts == [("s1", [0, 2]), ("s2", [0, 1])]  # the errored answer is skipped, not judged
    prompts = target.source.texts("s1")
    assert sorted(prompts) == [0, 2] and "input 2 of s1" in prompts[2] and "c" in prompts[2]
    assert target.request_count == 4 == len(target.items)


def test_an_answers_file_that_changes_while_it_is_judged_is_refused(tmp_path: Path) -> None:
    (target,) = _judge(tmp_path).targets
    results = tmp_path / "run" / "results" / "s2.json"
    records = json.loads(results.read_text())
    records[1]["output_text"] = "rewritten"
    results.write_text(json.dumps(records))
    assert target.source.texts("s1")  # untouched statements still read
    with pytest.raises(RunStateError, match="changed while it was being judged"):
        target.source.texts("s2")


def test_ranking_requests_are_rendered_per_statement_from_both_candidates_answers_on_disk(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    runs = [
        make_run(tmp_path / name, name, spec, {"s1": [f"{name} a", None, f"{name} c"], "s2": [f"{name} d"]})
        for name in ("m1", "m2")
    ]
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "out")
    pipeline = BatchedRankingPipeline(settings, resolve_candidates(runs))
    first, _ = pipeline.targets
    assert isinstance(first.source, ItemSource) and not isinstance(first.source, list)
    assert [(sid, list(indices)) for sid, indices in first.source.statement_counts()] == [("s1", [0, 2]), ("s2", [0])]
    prompt = first.source.texts("s1")[2]
    assert "input 2 of s1" in prompt and prompt.index("m1 c") < prompt.index("m2 c")  # A shown first
    assert pipeline.request_count == 6
    results = tmp_path / "m2" / "results" / "s2.json"
    records = json.loads(results.read_text())
    records[0]["output_text"] = "rewritten"
    results.write_text(json.dumps(records))
    with pytest.raises(RunStateError, match="changed while it was being judged"):
        first.source.texts("s2")


def test_a_candidate_whose_answers_all_succeeded_holds_no_array_of_their_indices(tmp_path: Path) -> None:
    statements = [f"s{i}" for i in range(10)]
    spec = write_spec(tmp_path / "spec.jsonl", statements)
    run = make_run(tmp_path / "run", "m", spec, {sid: ["x"] * 5_000 for sid in statements})
    (candidate,), loaded = resolve_candidates([run]), load_spec(spec)
    tracemalloc.start()
    answers = load_answers(candidate, loaded)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert answers.answer_count == 50_000
    # An array of the indices alone is 8 bytes an answer; what is left is the statements' files and hashes.
    assert held / answers.answer_count < 4, f"{held / answers.answer_count:.1f} bytes per answer"

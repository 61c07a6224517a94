"""A judge run renders each prompt once (issue 25): the job keeps each prompt's sha256 beside its request file, so
collecting it renders nothing, and `run.json`'s `inputs_sha256` hashes what the prompts are rendered from. A prompt
that changed is still refused on resume, also for a job sent but not collected yet; a folder written before the
hashes were kept (no hashes beside its jobs, the old `inputs_sha256`) still resumes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from speceval.batch.manifest import RunManifest
from speceval.batch.model import BatchedModel
from speceval.errors import InputError, RunStateError
from speceval.judging.files import JudgeOutcome
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import INPUTS_HASH, JudgeSettings, plan_targets, write_manifest
from speceval.pipelines.judge_setup import save_judge_salt
from speceval.pipelines.ranking import BatchedRankingPipeline
from tests.pipelines.helpers import JUDGE, make_run, rewrite_answer, write_spec


def _settings(tmp_path: Path) -> JudgeSettings:
    spec = tmp_path / "spec.jsonl"
    if not spec.exists():
        write_spec(spec, ["s1", "s2"])
        make_run(tmp_path / "run", "m", spec, {"s1": ["a", "b", None], "s2": ["c"]})
        make_run(tmp_path / "rival", "r", spec, {"s1": ["x", "y", "z"], "s2": ["w"]})
    return JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "out", offline=True)


def _judge(tmp_path: Path, canaries: bool = False) -> BatchedComplianceJudge:
    return BatchedComplianceJudge(_settings(tmp_path), resolve_candidates([tmp_path / "run"]), canaries=canaries)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plan(judge: BatchedComplianceJudge) -> None:
    """A dry run: request files, prompt hashes and intents written, nothing submitted (a later run sends them)."""
    with judge.connect() as model:
        assert isinstance(model, BatchedModel)  # the offline judge is a batch API's
        manifests = [
            write_manifest(t, "compliance", judge.settings, judge.spec_name, judge.spec.sha256, judge.provider)
            for t in judge.targets
        ]
        plan_targets(model, judge.targets, manifests, judge.settings.engine)


def test_a_compliance_run_renders_each_prompt_once_and_keeps_its_hash_with_the_job(
    tmp_path: Path, renders: list[str]
) -> None:
    judge = _judge(tmp_path, canaries=True)
    summaries, _ = judge.run()
    assert all(summary.finished for summary in summaries)
    assert judge.request_count == 5  # three answers and the two statements' examples
    assert len(renders) == judge.request_count  # once each: not again for run.json, nor at collection
    target = judge.targets[0]
    hashes = list((target.run_dir / "preprocessed").glob("*.sha256"))
    assert len(hashes) == 1 and hashes[0].stat().st_size == 32 * 3
    recorded = {
        r["input_sha256"]
        for p in (target.run_dir / "judge_responses").glob("*.json")
        for r in json.loads(p.read_text())
    }
    prompts = {text for sid, _ in target.source.statement_counts() for text in target.source.texts(sid).values()}
    assert recorded == {_sha(text) for text in prompts}  # the answers' prompts, as sent
    manifest = RunManifest.load(target.run_dir)
    assert manifest.parameters["inputs_hash"] == INPUTS_HASH
    assert manifest.inputs_sha256 == target.inputs_sha256(judge.spec.sha256)


def test_a_ranking_run_renders_each_prompt_once(tmp_path: Path, renders: list[str]) -> None:
    pipeline = BatchedRankingPipeline(_settings(tmp_path), resolve_candidates([tmp_path / "run", tmp_path / "rival"]))
    pipeline.run()
    assert pipeline.request_count == 6  # the three shared inputs in both orders
    assert len(renders) == 6


def test_inputs_sha256_follows_the_prompts_sources_without_rendering_them(tmp_path: Path, renders: list[str]) -> None:
    first = _judge(tmp_path)
    save_judge_salt(first.output_dir, first.salt)  # as a first run.json does: later constructions draw this salt
    target = first.targets[0]
    before = target.inputs_sha256("spec")
    assert before == _judge(tmp_path).targets[0].inputs_sha256("spec")  # deterministic, across constructions
    assert before != target.inputs_sha256("another spec")
    assert before != replace(target, salt="another salt").inputs_sha256("spec")
    assert before != replace(target, identity={**target.identity, "prompt_version": "v0"}).inputs_sha256("spec")
    assert renders == []
    rewrite_answer(tmp_path / "run")
    assert _judge(tmp_path).targets[0].inputs_sha256("spec") != before  # a candidate's answers changed


def test_a_changed_answer_is_refused_while_its_job_is_not_collected_yet(tmp_path: Path) -> None:
    _plan(_judge(tmp_path))
    assert _judge(tmp_path).request_count == 3  # an unchanged folder resumes
    rewrite_answer(tmp_path / "run")
    with pytest.raises(RunStateError, match=r"answer 0 differs from the one in preprocessed/\S+ \(a job not "):
        _judge(tmp_path)


def test_a_folder_written_before_the_hashes_were_kept_resumes_and_hashes_what_it_sent(tmp_path: Path) -> None:
    judge = _judge(tmp_path)
    _plan(judge)  # planned as main wrote it: no prompt hashes beside the request file, the old inputs_sha256
    (target,) = judge.targets
    for path in (target.run_dir / "preprocessed").glob("*.sha256"):
        path.unlink()
    manifest = RunManifest.load(target.run_dir)
    manifest.inputs_sha256 = "a hash of every prompt rendered"
    del manifest.parameters["inputs_hash"]
    manifest.save(target.run_dir)
    prompts = {text for sid, _ in target.source.statement_counts() for text in target.source.texts(sid).values()}
    again = _judge(tmp_path)
    summaries, candidates = again.run()
    assert summaries[0].jobs == 1 and candidates[0].outcomes[JudgeOutcome.JUDGED] == 3  # the planned job, nothing new
    recorded = {
        r["input_sha256"]
        for p in (target.run_dir / "judge_responses").glob("*.json")
        for r in json.loads(p.read_text())
    }
    assert recorded == {_sha(text) for text in prompts}  # hashed from the prompts rendered at collection
    manifest = RunManifest.load(target.run_dir)
    assert (manifest.parameters["inputs_hash"], manifest.inputs_sha256) == (
        INPUTS_HASH,
        target.inputs_sha256(again.spec.sha256),
    )
    rewrite_answer(tmp_path / "run")
    with pytest.raises(RunStateError, match="differs from the one already judged"):
        _judge(tmp_path)


def test_a_job_whose_prompt_hashes_are_cut_short_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    _plan(_judge(tmp_path))
    (hashes,) = (tmp_path / "out").rglob("*.sha256")
    hashes.write_bytes(hashes.read_bytes()[:-1])
    with pytest.raises(
        InputError, match=r"holds 95 bytes, not the sha256 of the job's 3 prompt\(s\) \(96 bytes\)"
    ) as refused:
        _judge(tmp_path)
    assert str(hashes) in str(refused.value)

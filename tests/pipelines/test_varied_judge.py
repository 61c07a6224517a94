"""A judge whose answers vary in format, served by an emulator driving the real openai SDK: every parseable
verdict is read as the judge gave it; unparseable and failed ones are recorded as such and left out of rates."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.emulator import ERROR_MARKER, Emulator, FaultConfig
from speceval.judging.files import JudgeOutcome
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.pipelines.helpers import JUDGE, make_run, write_spec


class VaryingJudge:
    """Answers judge prompts in one of several formats (by prompt hash) and remembers what it meant."""

    def __init__(self) -> None:
        self.said: dict[str, object] = {}  # prompt -> the verdict it gave (dict) or None (no valid verdict)
        self.lock = threading.Lock()

    def __call__(self, model: str, prompt: str) -> str:
        h = hashlib.sha256(prompt.encode()).digest()
        if "ranking" in prompt.splitlines()[0]:
            verdict: dict[str, object] = {"winner": ("A", "B", "tie")[h[1] % 3], "explanation": "because"}
        else:
            verdict = {"compliant": h[1] % 2 == 0, "confidence": round(h[2] / 255, 3), "explanation": "because"}
        payload = json.dumps(verdict)
        style = h[0] % 7
        meant: object = verdict
        if style == 0:
            text = f"Reasoning first.\n```json\n{payload}\n```"
        elif style == 1:
            text = f"The user asks X; the response does Y. Verdict: {payload}"
        elif style == 2:
            text = f'Templates like {{name}} and sets {{1, 2}} are not answers; {{"note": 1}}. Final:\n{payload}'
        elif style == 3:
            text, meant = "I am unable to reach a verdict.", None
        elif style == 4:
            key = "winner" if "winner" in verdict else "confidence"
            text, meant = json.dumps({**verdict, key: "maybe" if key == "winner" else 7}), None  # out of range
        elif style == 5:
            text, meant = "Model: A", None  # the original's format is not ours: never a tie
        else:
            text = f"```\n{payload}\n```\nThat is all."
        with self.lock:
            self.said[prompt] = meant
        return text


def _setup(tmp_path: Path) -> tuple[Path, list[Path]]:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2", "s3"])
    dirs = []
    for model in ("cand-one", "cand-two"):
        outputs: dict[str, list[str | None]] = {
            sid: [f"{model} says {sid} {i}" for i in range(12)] for sid in ("s1", "s2", "s3")
        }
        outputs["s2"][3] = f"{model} output that makes the judge request fail {ERROR_MARKER}"
        outputs["s3"][5] = None  # a generation failure: skipped, counted, never judged
        dirs.append(make_run(tmp_path / model, model, spec, outputs))
    return spec, dirs


def _settings(tmp_path: Path, spec: Path, out: str) -> JudgeSettings:
    return JudgeSettings(
        spec_path=spec,
        judge_model=JUDGE,
        output_dir_base=tmp_path / out,
        engine=EngineOptions(batch_size=10, poll_interval=0.05, max_attempts=1),
    )


def test_compliance_verdicts_equal_what_the_judge_said(tmp_path: Path) -> None:
    spec, dirs = _setup(tmp_path)
    judge = VaryingJudge()
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1), responder=judge) as emulator:
        pipeline = BatchedComplianceJudge(_settings(tmp_path, spec, "out"), resolve_candidates(dirs), canaries=False)
        model = create_batched_model(
            JUDGE, "openai", GenerationParams(), base_url=emulator.openai_base_url, api_key=TEST_KEY
        )
        engine_summaries, summaries = pipeline.run(model)
    assert all(s.finished for s in engine_summaries)
    prompts = {(t.run_dir, i.statement_id, i.original_index): i.input_text for t in pipeline.targets for i in t.items}
    counted = {o: 0 for o in JudgeOutcome}
    for target, summary in zip(pipeline.targets, summaries, strict=True):
        compliant = judged = 0
        for path in sorted((target.run_dir / "results").glob("*.json")):
            content = json.loads(path.read_text())
            assert content["metadata"]["prompt_version"] == "compliance_binary_v2"
            assert content["metadata"]["model"] == summary.model and content["metadata"]["batch_ids"]
            for entry in content["results"]:
                assert "rating" not in entry
                prompt = prompts[(target.run_dir, path.stem, entry["original_index"])]
                counted[JudgeOutcome(entry["outcome"])] += 1
                if ERROR_MARKER in entry["output"]:
                    assert entry["outcome"] == "judge_errored" and entry["compliant"] is None
                    assert entry["error"]["message"]
                    continue
                meant = judge.said[prompt]
                assert entry["raw_judge_response"] is not None
                if meant is None:
                    assert entry["outcome"] == "unparsed" and entry["parse_error"]
                    assert entry["compliant"] is None and entry["confidence"] is None
                else:
                    assert entry["outcome"] == "judged"
                    assert (entry["compliant"], entry["confidence"], entry["explanation"]) == (
                        meant["compliant"],
                        meant["confidence"],
                        meant["explanation"],
                    )  # type: ignore[index]
                    judged += 1
                    compliant += entry["compliant"]
        assert summary.skipped_answers == {"errored": 1}
        assert summary.outcomes[JudgeOutcome.JUDGED] == judged == summary.compliant + summary.non_compliant
        assert summary.compliance_rate == compliant / judged  # unparsed and failed are not in the denominator
        assert summary.outcomes[JudgeOutcome.UNPARSED] > 0 and summary.outcomes[JudgeOutcome.JUDGE_ERRORED] == 1
        on_disk = json.loads((target.run_dir / "summary.json").read_text())
        assert on_disk["compliance_rate"] == summary.compliance_rate
    assert counted[JudgeOutcome.JUDGED] + counted[JudgeOutcome.UNPARSED] + counted[JudgeOutcome.JUDGE_ERRORED] == 70


def test_ranking_verdicts_equal_what_the_judge_said_and_failures_are_not_ties(tmp_path: Path) -> None:
    spec, dirs = _setup(tmp_path)
    judge = VaryingJudge()
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1), responder=judge) as emulator:
        pipeline = BatchedRankingPipeline(_settings(tmp_path, spec, "rank"), resolve_candidates(dirs))
        model = create_batched_model(
            JUDGE, "openai", GenerationParams(), base_url=emulator.openai_base_url, api_key=TEST_KEY
        )
        _, pair_summaries, report = pipeline.run(model)
    unparsed = 0
    for pair, summary in zip(pipeline.pairs, pair_summaries, strict=True):
        prompts = {(i.statement_id, i.original_index): i.input_text for i in pair.target.items}
        ties = 0
        for path in sorted((pair.target.run_dir / "results").glob("*.json")):
            for entry in json.loads(path.read_text())["rankings"]:
                if entry["outcome"] == "judge_errored":
                    assert entry["rank"] is None and ERROR_MARKER in entry["output_a"]
                    continue
                meant = judge.said[prompts[(path.stem, entry["index"])]]
                if meant is None:
                    assert entry["outcome"] == "unparsed" and entry["rank"] is None and entry["winner"] is None
                    unparsed += 1
                else:
                    assert entry["winner"] == meant["winner"]  # type: ignore[index]
                    assert entry["rank"] == {"A": 1, "B": -1, "tie": 0}[entry["winner"]]
                    ties += entry["rank"] == 0
        assert summary.ties == ties
        assert summary.a_wins + summary.b_wins + summary.ties == summary.outcomes[JudgeOutcome.JUDGED]
    assert unparsed > 0
    assert report.incomplete >= unparsed // 2 and report.consistent + report.inconsistent + report.incomplete == 35

"""One source of truth: a pipeline runs the model its config describes, and `run.json` records what was sent.

Requests are read where they arrive, on an OpenAI-wire server written from the public spec only
(`tests/independent/openai_server.py`), never from our own request files.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from speceval import (
    BatchedComplianceJudge,
    BatchedGenerationPipeline,
    BatchedRankingPipeline,
    EngineOptions,
    GenerationConfig,
    GenerationParams,
    JudgeSettings,
    ModelMismatchError,
    create_batched_model,
    resolve_candidates,
)
from tests.conftest import TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer
from tests.library.helpers import generation_config as config_for

CANDIDATE = "gpt-4.1-mini-2025-04-14"
JUDGE = "gpt-4.1-2025-04-14"
FAST = EngineOptions(batch_size=50, poll_interval=0.05, timeout_hours=0.05, max_attempts=1)
STATEMENTS = {"s1": ["first question", "second question"], "s2": ["third question"]}


def generation_config(tmp_path: Path, **overrides: Any) -> GenerationConfig:
    return config_for(
        tmp_path,
        STATEMENTS,
        **{
            "model_name": CANDIDATE,
            "output_base_dir": tmp_path / "generations",
            "params": GenerationParams(temperature=0.0, max_tokens=64),
            "engine": FAST,
            **overrides,
        },
    )


def openai_model(name: str, params: GenerationParams) -> Any:
    return create_batched_model(name, "openai", params, api_key=TEST_KEY, base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("model_name", "org", "params", "named"),
    [
        (CANDIDATE, "openai", GenerationParams(temperature=0.7, max_tokens=64), "params.temperature"),
        (CANDIDATE, "openai", GenerationParams(temperature=0.0, max_tokens=65), "params.max_tokens"),
        (
            CANDIDATE,
            "openai",
            GenerationParams(temperature=0.0, max_tokens=64, system_prompt="Be terse."),
            "params.system_prompt",
        ),
        ("gpt-4.1-2025-04-14", "openai", GenerationParams(temperature=0.0, max_tokens=64), "model name"),
    ],
)
def test_a_candidate_model_unlike_the_config_is_refused_before_anything_is_written(
    tmp_path: Path, model_name: str, org: str, params: GenerationParams, named: str
) -> None:
    pipeline = BatchedGenerationPipeline(generation_config(tmp_path))
    with pytest.raises(ModelMismatchError) as refused:
        pipeline.run(openai_model(model_name, params))
    assert named in str(refused.value)
    assert [what for what, _, _ in refused.value.differences] == [named]
    assert not pipeline.run_dir.exists()


def test_a_model_of_another_provider_is_refused_even_under_the_same_name(tmp_path: Path) -> None:
    # An OpenAI adapter calling itself "claude-…" would file OpenAI's answers under Anthropic in run.json.
    config = generation_config(tmp_path, model_name="claude-sonnet-4-6")
    pipeline = BatchedGenerationPipeline(config)
    with pytest.raises(ModelMismatchError) as refused:
        pipeline.run(openai_model("claude-sonnet-4-6", config.params))
    assert refused.value.differences == [("provider", "OpenAIBatchedModel (openai)", "anthropic")]
    assert not pipeline.run_dir.exists()


def test_a_judge_unlike_the_settings_is_refused_before_any_judge_run_is_written(tmp_path: Path) -> None:
    with IndependentOpenAIServer() as server:
        spec, runs = _generate_two(tmp_path, server)
    settings = JudgeSettings(spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "judged", engine=FAST)
    claude_like = create_batched_model("claude-sonnet-4-6", "anthropic", settings.params, api_key=TEST_KEY)
    for pipeline in (
        BatchedComplianceJudge(settings, resolve_candidates(runs)),
        BatchedRankingPipeline(settings, resolve_candidates(runs)),
    ):
        with pytest.raises(ModelMismatchError) as refused:
            pipeline.run(claude_like)
        assert {what for what, _, _ in refused.value.differences} == {"model name", "provider"}
    # Nothing of a judge run exists: no manifest recording the wrong judge, no request file, no job.
    written = {p.name for p in (tmp_path / "judged").rglob("*")} if (tmp_path / "judged").exists() else set()
    assert not written & {"run.json", "metadata", "preprocessed", "judge_responses", "results"}


class Recorder:
    """The answer function of the independent server: remembers every request body it answers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.bodies.append(body)
        return self.text


def _generate_two(tmp_path: Path, server: IndependentOpenAIServer) -> tuple[Path, list[Path]]:
    runs = []
    for name in (CANDIDATE, "gpt-4o-mini-2024-07-18"):
        pipeline = BatchedGenerationPipeline(generation_config(tmp_path, model_name=name))
        with pipeline.connect(api_key=TEST_KEY, base_url=server.base_url) as model:
            assert pipeline.run(model).finished
        runs.append(pipeline.run_dir)
    return tmp_path / "spec.jsonl", runs


def test_run_json_records_the_judge_and_sampling_the_server_received(tmp_path: Path, monkeypatch) -> None:
    verdict = json.dumps({"compliant": True, "confidence": 0.9, "explanation": "fine"})
    judge_params = GenerationParams(temperature=0.35, max_tokens=321)
    recorder = Recorder(verdict)
    with IndependentOpenAIServer(answer=recorder) as server:
        spec, runs = _generate_two(tmp_path, server)
        candidate_bodies, recorder.bodies = recorder.bodies, []
        # No model is given: the pipeline builds the judge from its settings; the SDK finds the server and key in
        # the environment, as it would for a real provider.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        settings = JudgeSettings(
            spec_path=spec, judge_model=JUDGE, output_dir_base=tmp_path / "judged", params=judge_params, engine=FAST
        )
        pipeline = BatchedComplianceJudge(settings, resolve_candidates(runs))
        engine_summaries, _ = pipeline.run()
    assert all(s.finished for s in engine_summaries)

    assert len(candidate_bodies) == 6 and len(recorder.bodies) == 6
    for run_dir in runs:
        manifest = json.loads((run_dir / "run.json").read_text())
        sent = [b for b in candidate_bodies if b["model"] == manifest["model_name"]]
        assert len(sent) == 3 and manifest["provider"] == "openai"
        assert {(b["temperature"], b["max_completion_tokens"]) for b in sent} == {
            (manifest["parameters"]["params"]["temperature"], manifest["parameters"]["params"]["max_tokens"])
        }
    for target in pipeline.targets:
        manifest = json.loads((target.run_dir / "run.json").read_text())
        assert (manifest["model_name"], manifest["provider"]) == (JUDGE, "openai")
        assert manifest["parameters"]["params"]["temperature"] == 0.35
        assert manifest["parameters"]["params"]["max_tokens"] == 321
    assert {(b["model"], b["temperature"], b["max_completion_tokens"]) for b in recorder.bodies} == {(JUDGE, 0.35, 321)}
    verdicts = [json.loads(p.read_text()) for t in pipeline.targets for p in (t.run_dir / "results").glob("*.json")]
    assert {v["metadata"]["judge"] for v in verdicts} == {JUDGE}
    assert all(r["outcome"] == "judged" and r["compliant"] is True for v in verdicts for r in v["results"])

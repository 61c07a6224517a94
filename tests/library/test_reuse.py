"""The library keeps the command line's promise: running the same script twice never pays twice."""

from __future__ import annotations

from speceval import BatchedGenerationPipeline, EngineOptions, GenerationConfig
from speceval.emulator import Emulator, FaultConfig
from speceval.providers.openai_batch import OpenAIBatchedModel
from tests.conftest import TEST_KEY, write_inputs, write_spec


def config(tmp_path, **extra):  # type: ignore[no-untyped-def]
    statements = {"s1": ["one", "two"], "s2": ["three"]}
    return GenerationConfig(
        spec_path=write_spec(tmp_path / "spec.jsonl", list(statements)),
        inputs_dir=write_inputs(tmp_path / "inputs", statements),
        model_name="gpt-4.1-mini-2025-04-14",
        output_base_dir=tmp_path / "out",
        engine=EngineOptions(poll_interval=0.05, timeout_hours=0.05),
        **extra,
    )


def test_the_same_pipeline_run_twice_from_python_creates_one_job_and_new_run_pays_again(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:

        def model() -> OpenAIBatchedModel:
            return OpenAIBatchedModel("gpt-4.1-mini-2025-04-14", api_key=TEST_KEY, base_url=emu.openai_base_url)

        first = BatchedGenerationPipeline(config(tmp_path))
        assert first.run(model()).finished
        again = BatchedGenerationPipeline(config(tmp_path))
        assert again.reused and again.run_dir == first.run_dir
        summary = again.run(model())
        assert summary.finished and summary.total_requests == 3
        created = emu.stats.batches_created["openai"]
        fresh = BatchedGenerationPipeline(config(tmp_path, new_run=True))
        assert not fresh.reused and fresh.run_dir != first.run_dir
        fresh.run(model())
        paid_again = emu.stats.batches_created["openai"]
    assert created == 1 and paid_again == 2
    assert len(list((tmp_path / "out").glob("*/*/*/run.json"))) == 2

"""Anthropic wire facts the adapter must follow (issue 13): retryable `timeout_error`, 29-day result retention."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest

from speceval.batch.records import BatchRecord, Outcome
from speceval.emulator import TIMEOUT_ONCE_MARKER, Emulator, FaultConfig
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.anthropic_batch import AnthropicBatchedModel
from tests.conftest import TEST_KEY
from tests.providers.test_anthropic_batch import MODEL, PARAMS, config_for, generate, load, resume


def test_a_timeout_error_is_resubmitted_once_and_ends_succeeded(tmp_path):
    statements = {"s": ["fine", f"slow one {TIMEOUT_ONCE_MARKER}", "also fine"]}
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        summary, run_dir = generate(tmp_path, emu, statements, max_attempts=3)
        created = emu.stats.batches_created["anthropic"]
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    slow = load(run_dir, "s")[1]
    assert slow["outcome"] == "succeeded" and slow["attempts"] == 2
    assert created == 2  # the first job, and one resubmission holding only the timed-out request


class StopBeforePolling(AnthropicBatchedModel):
    """A run interrupted right after its job was created (the job keeps running at the provider)."""

    def check_batch_progress(self, record):
        raise SystemExit("interrupted after submission")


def test_results_past_retention_warn_on_resume_and_say_what_is_resubmitted(tmp_path, caplog):
    statements = {"s": ["q0", "q1", "q2"]}
    pipeline = BatchedGenerationPipeline(config_for(tmp_path, MODEL, statements))
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        with pytest.raises(SystemExit):
            pipeline.run(StopBeforePolling(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url))
        first = json.loads(next((pipeline.run_dir / "metadata").glob("*.json")).read_text())
        # Resumed after Anthropic archived the job's results (`archived_at` set, results gone).
        emu.archive_job("anthropic", first["batch_id"])
        model = AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url)
        with caplog.at_level(logging.WARNING, logger="speceval"):
            summary = resume(pipeline.run_dir, model)
        created = emu.stats.batches_created["anthropic"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    about = [w for w in warnings if first["batch_id"] in w and "29 days" in w]
    assert about, warnings
    assert "3 request(s)" in about[0] and "resubmitted" in about[0]
    assert summary.finished and created == 1 + 2  # the resume sends its 3 requests in jobs of 2
    assert [r["outcome"] for r in load(pipeline.run_dir, "s")] == ["succeeded"] * 3


def test_a_job_older_than_the_retention_is_named_before_its_results_are_read(tmp_path, caplog):
    statements = {"s": ["q0", "q1"]}
    pipeline = BatchedGenerationPipeline(config_for(tmp_path, MODEL, statements))
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        with pytest.raises(SystemExit):
            pipeline.run(StopBeforePolling(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url))
        path = next((pipeline.run_dir / "metadata").glob("*.json"))
        record = BatchRecord.model_validate_json(path.read_text())
        # As if the run were resumed 30 days later (the emulator still has the results: "may be" archived).
        record.submitted_at -= timedelta(days=30)
        path.write_text(record.model_dump_json())
        model = AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=emu.anthropic_base_url)
        with caplog.at_level(logging.WARNING, logger="speceval"):
            summary = resume(pipeline.run_dir, model)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    about = [w for w in warnings if record.batch_id in w and "29 days" in w]
    assert about and "2 request(s) will be resubmitted" in about[0], warnings
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 2}

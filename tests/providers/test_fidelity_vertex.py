"""Vertex AI wire facts the adapter must follow (issue 13).

- A failed job's `error` is a `google.rpc.Status` whose `details` are objects; google-genai types them as strings
  and refuses to parse the job.
- Google does not document that an output row repeats the request's `labels` or the line's `key`, so answers are
  matched by the echoed id where there is one, else by the echoed request itself; a completed job none of whose
  rows can be matched stops the run instead of being paid for again and again.
- `completionStats.incompleteCount` is -1 when unknown.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import responses

from speceval.batch.progress import EngineSummary
from speceval.batch.records import BatchRecord, JobState, Outcome, SubmissionIntent
from speceval.emulator import Emulator, FaultConfig, respond
from speceval.errors import UnmatchedResultsError
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.vertex_batch import VertexBatchedModel
from tests.providers.test_anthropic_batch import config_for, load
from tests.providers.test_vertex_batch import MODEL, OUT_BUCKET, FakeGcs, adapter, metadata

STATEMENTS = {"s": ["q0", "q1", "q1", "q3"]}  # a repeated prompt: two identical requests in one job


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emulator:
        yield emulator


@pytest.fixture
def gcs(emu: Emulator) -> Iterator[FakeGcs]:
    fake = FakeGcs(emu.vertex_objects)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake.register(mock)
        yield fake


def vertex_pipeline(tmp_path: Path, **engine: float) -> BatchedGenerationPipeline:
    return BatchedGenerationPipeline(replace(config_for(tmp_path, MODEL, STATEMENTS, **engine), org="vertex"))


def generate_with(tmp_path: Path, model: VertexBatchedModel, **engine: float) -> tuple[EngineSummary, Path]:
    pipeline = vertex_pipeline(tmp_path, **engine)
    return pipeline.run(model), pipeline.run_dir


def test_a_failed_job_with_google_error_details_reports_its_reason(tmp_path, emu, gcs):
    emu.faults = FaultConfig(turnaround_seconds=0.05, fail_validation=True)
    summary, run_dir = generate_with(tmp_path, adapter(emu), max_attempts=1)
    assert summary.finished and summary.outcome_counts == {Outcome.ERRORED: 4}
    (job,) = metadata(run_dir)
    assert job["state"] == "failed" and "failed validation" in job["error"]
    assert load(run_dir, "s")[0]["error"]["message"] == job["error"]


def test_a_failed_job_in_the_listing_does_not_break_reconciliation(tmp_path, emu, gcs):
    emu.faults = FaultConfig(turnaround_seconds=0.05, fail_validation=True)
    generate_with(tmp_path / "failed", adapter(emu), max_attempts=1)
    emu.faults = FaultConfig(turnaround_seconds=0.05)
    model = adapter(emu)
    record = json.loads(next((tmp_path / "failed" / "out").rglob("metadata/*.json")).read_text())
    intent = SubmissionIntent(
        idempotency_key=record["idempotency_key"],
        provider="vertex",
        model=MODEL,
        request_file="r.jsonl",
        request_bytes=1,
        refs=record["refs"],
    )
    found = model.find_submitted(intent)
    assert found is not None and found.batch_id == record["batch_id"] and found.state is JobState.FAILED
    assert found.request_count is None  # incompleteCount -1: the total is unknown, not 4 - 1


@pytest.mark.parametrize("echo", ["request_and_key", "request"])
def test_answers_are_matched_by_id_or_else_by_the_echoed_request(tmp_path, emu, gcs, echo):
    emu.faults = FaultConfig(turnaround_seconds=0.05, vertex_echo=echo)
    summary, run_dir = generate_with(tmp_path, adapter(emu))
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    records = load(run_dir, "s")
    assert [r["input_text"] for r in records] == STATEMENTS["s"]
    for record in records:
        # The synthetic answer is a hash of its prompt: an answer filed under the wrong input would show it.
        assert record["output_text"] == respond(MODEL, record["input_text"])
    assert emu.stats.batches_created["vertex"] == 1


def test_a_completed_job_whose_rows_match_nothing_stops_the_run_naming_the_job(tmp_path, emu, gcs, caplog):
    emu.faults = FaultConfig(turnaround_seconds=0.05, vertex_echo="nothing")
    pipeline = vertex_pipeline(tmp_path, max_attempts=3)
    with caplog.at_level(logging.WARNING, logger="speceval"), pytest.raises(UnmatchedResultsError) as raised:
        pipeline.run(adapter(emu))
    (job,) = metadata(pipeline.run_dir)
    assert job["batch_id"] in str(raised.value) and "4 row(s)" in str(raised.value)
    assert emu.stats.batches_created["vertex"] == 1  # never paid again for output that cannot be matched
    assert not (pipeline.run_dir / "results" / "s.json").exists()


def test_rows_that_match_nothing_are_counted_and_shown(tmp_path, emu, gcs, caplog):
    emu.faults = FaultConfig(turnaround_seconds=0.05, vertex_echo="request")
    model = adapter(emu)
    key = "c0ffee" * 5 + "00"
    request_file = tmp_path / "r.jsonl"
    request_file.write_bytes(b"".join(model.format_request(f"{key[:12]}-{i}", f"q{i}") for i in range(3)))
    intent = SubmissionIntent(
        idempotency_key=key,
        provider="vertex",
        model=MODEL,
        request_file="r.jsonl",
        request_bytes=request_file.stat().st_size,
        requests={f"{key[:12]}-{i}": ("s", i) for i in range(3)},
    )
    intent.handle = model.prepare(intent, request_file)
    job = model.generate_batch(intent, request_file)
    deadline = time.monotonic() + 30
    while not job.state.is_terminal and time.monotonic() < deadline:
        job = model.check_batch_progress(_record(intent, job))
    assert job.state is JobState.COMPLETED
    # A row answering a request this job never sent (another job's, or one Vertex altered).
    folder = job.handle.output_dir.removeprefix(f"gs://{OUT_BUCKET}/")
    rows = emu.vertex_objects.get(OUT_BUCKET, f"{folder}/predictions.jsonl")
    stranger = {"status": "", "request": {"contents": [{"role": "user", "parts": [{"text": "never sent"}]}]}}
    emu.vertex_objects.put(OUT_BUCKET, f"{folder}/predictions.jsonl", rows + json.dumps(stranger).encode() + b"\n")
    with caplog.at_level(logging.WARNING, logger="speceval"):
        outcomes = list(model.get_batch_results(_record(intent, job)))
    assert sorted(o.custom_id for o in outcomes) == sorted(intent.requests)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(job.batch_id in w and "1 of 4 result row(s) match no request" in w for w in warnings), warnings


def _record(intent: SubmissionIntent, job) -> BatchRecord:
    return BatchRecord(
        batch_id=job.batch_id,
        provider="vertex",
        model=MODEL,
        idempotency_key=intent.idempotency_key,
        state=job.state,
        raw_state=job.raw_state,
        handle=job.handle,
        request_file=intent.request_file,
        request_count=intent.request_count,
        requests=intent.requests,
    )

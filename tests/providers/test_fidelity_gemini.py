"""Gemini wire facts the adapter must follow (issue 13): the upload MIME type, and a failed job's reason.

MIME type: the Gemini batch docs upload the request file with `mime_type="jsonl"`; users have seen the service
refuse with 400 "Unsupported MIME type" both that value and `application/jsonl` at times (python-genai #1547,
gemini cookbook #1008). A refused upload creates nothing, so trying the other value is free; a refused create is
not, so this only ever concerns the upload.
"""

from __future__ import annotations

import json

from speceval.batch.records import Outcome
from speceval.emulator import Emulator, FaultConfig
from tests.providers.test_gemini_batch import generate, metadata

STATEMENTS = {"s": ["q0", "q1"]}


def _upload_types(emu: Emulator) -> list[str]:
    return [f.mime_type for f in emu.uploaded_files("gemini")]


def test_uploads_use_the_mime_type_of_the_official_batch_docs(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, gemini_refused_mime_types=["application/jsonl"])) as emu:
        summary, _ = generate(tmp_path, emu, STATEMENTS)
        types = _upload_types(emu)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert types == ["jsonl"]


def test_an_upload_refused_for_its_mime_type_is_tried_once_with_the_other_spelling(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, gemini_refused_mime_types=["jsonl"])) as emu:
        summary, _ = generate(tmp_path, emu, STATEMENTS)
        types = _upload_types(emu)
        created = emu.stats.batches_created["gemini"]
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert types == ["application/jsonl"] and created == 1


def test_a_failed_jobs_reason_is_kept(tmp_path):
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, fail_validation=True)) as emu:
        summary, run_dir = generate(tmp_path, emu, STATEMENTS, max_attempts=1)
    assert summary.finished and summary.outcome_counts == {Outcome.ERRORED: 2}
    (job,) = metadata(run_dir)
    assert job["state"] == "failed" and job["error"] and "validation" in job["error"].lower()
    result = json.loads((run_dir / "results" / "s.json").read_text())[0]
    assert result["error"]["code"] == "batch_failed" and result["error"]["message"] == job["error"]

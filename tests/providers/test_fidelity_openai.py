"""OpenAI wire facts the adapter must follow (issue 13), checked against a server written from the OpenAPI spec.

The spec does not promise the order of `GET /v1/batches`, does not list the error codes of requests a cancelled
or expired batch never ran, and states the input file limit as "200 MB" without saying which megabyte.
"""

from __future__ import annotations

import json

import pytest

from speceval.batch.records import JobState, Outcome, SubmissionIntent
from speceval.providers.openai_batch import OpenAIBatchedModel, parse_result_line
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer

MODEL = "gpt-4.1-mini-2025-04-14"


def _intent(tmp_path, model: OpenAIBatchedModel, key: str) -> tuple[SubmissionIntent, object]:
    request_file = tmp_path / f"{key}.jsonl"
    request_file.write_bytes(model.format_request(f"{key[:12]}-0", "q"))
    intent = SubmissionIntent(
        idempotency_key=key,
        provider="openai",
        model=MODEL,
        request_file=request_file.name,
        request_bytes=request_file.stat().st_size,
        requests={f"{key[:12]}-0": ("s", 0)},
    )
    return intent, request_file


def test_find_submitted_does_not_assume_the_listing_is_newest_first(tmp_path):
    with IndependentOpenAIServer(list_order="asc") as srv:
        model = OpenAIBatchedModel(MODEL, GenerationParams(), api_key=TEST_KEY, base_url=srv.base_url)
        old, old_file = _intent(tmp_path, model, "0ld0" * 8)
        model.generate_batch(old, old_file)
        # A batch of another run, two days older than ours: listed first by an oldest-first server.
        first = next(iter(srv._batches.values()))
        first.obj["created_at"] -= 2 * 24 * 3600
        ours, our_file = _intent(tmp_path, model, "beef" * 8)
        created = model.generate_batch(ours, our_file)
        found = model.find_submitted(ours)
    assert found is not None and found.batch_id == created.batch_id


def _not_run_line(code: str) -> str:
    error = {"code": code, "message": "This request was not executed."}
    return json.dumps({"id": "batch_req_1", "custom_id": "k-0", "response": None, "error": error})


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (JobState.CANCELLED, Outcome.CANCELLED),
        (JobState.EXPIRED, Outcome.EXPIRED),
        (JobState.COMPLETED, Outcome.ERRORED),
    ],
)
def test_a_request_that_never_ran_follows_its_batchs_terminal_state_whatever_the_code(state, expected):
    outcome = parse_result_line(_not_run_line("request_not_executed"), "file-err", state)
    assert outcome.outcome is expected and outcome.error is not None
    assert outcome.error.code == "request_not_executed" and outcome.output_text is None
    # A request that never ran may be sent again (the engine keeps cancelled ones final: a user asked for that).
    assert outcome.error.retryable is (expected is not Outcome.ERRORED)


def test_the_documented_codes_still_mean_what_they_say():
    assert parse_result_line(_not_run_line("batch_expired"), "f", JobState.EXPIRED).outcome is Outcome.EXPIRED
    assert parse_result_line(_not_run_line("batch_cancelled"), "f", JobState.CANCELLED).outcome is Outcome.CANCELLED


def test_the_200_mb_file_limit_is_read_as_the_smaller_megabyte():
    # "The Batch API only supports `.jsonl` files up to 200 MB in size" (openapi.yaml, POST /files). 200 MB may
    # be 200,000,000 or 209,715,200 bytes; a chunk in between would be refused, rebuilt identically and refused
    # again, so the smaller reading is the one that works under both.
    assert OpenAIBatchedModel.limits.max_bytes <= 200_000_000
    assert OpenAIBatchedModel.limits.max_bytes >= 199_000_000  # and no needlessly small chunks

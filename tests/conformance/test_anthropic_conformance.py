"""Every JSON shape the emulator serves to the Anthropic adapter, and every request the adapter sends, checked against
the `anthropic` SDK's own types (models for responses, `*_create_params` TypedDicts for requests)."""

from __future__ import annotations

from pathlib import Path

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse, batch_create_params
from anthropic.types.shared import ErrorResponse

from speceval.providers.anthropic_batch import AnthropicBatchedModel
from tests.conformance.common import (
    PARAMS,
    cancelling,
    jsonl,
    look_up_a_lost_job,
    poll_unknown_job,
    proxied_emulator,
    refused,
    run_cancelled,
    run_scenarios,
)
from tests.conformance.recorder import RecordingProxy
from tests.conformance.shapes import model_problems, typeddict_problems
from tests.conftest import TEST_KEY

MODEL = "claude-sonnet-4-6"
API = "/anthropic/v1/messages/batches"
# Keys the adapter sends that the installed SDK's types no longer declare, each with why it is still sent. Listed
# here so that the deviation is visible and deliberate; any other unknown key fails the test.
# - temperature: dropped from MessageCreateParams in anthropic 1.0; the API still accepts it on models that
#   support sampling options (simonw/llm-anthropic #82) but refuses it on some newer models (400 "temperature is
#   deprecated for this model", obot-platform/nanobot #329). Sent whenever GenerationParams.temperature is set
#   (its default is 0.0): see the final report of issue 13.
KNOWN_EXTRA_PARAMS = {"temperature"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordingProxy:
    tmp_path: Path = tmp_path_factory.mktemp("anthropic")
    with proxied_emulator() as (emu, proxy):
        base_url = proxy.base_url + "/anthropic"
        model = AnthropicBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url)
        run_scenarios(tmp_path, emu, model)
        run_cancelled(
            tmp_path, emu, cancelling(AnthropicBatchedModel)(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url)
        )
        look_up_a_lost_job(model)
        poll_unknown_job(model, "msgbatch_does_not_exist")
    return proxy


def test_batch_objects(recorded):
    served = [
        e
        for e in [*recorded.matching("POST", API), *recorded.matching("GET", API)]
        if e.status == 200 and not e.route.endswith("/results") and e.route != API
    ]
    served += [e for e in recorded.matching("POST", API) if e.route == API and e.status == 200]
    assert {e.response_json()["processing_status"] for e in served} >= {"in_progress", "ended"}
    assert any(e.response_json()["cancel_initiated_at"] for e in served)
    problems = []
    for e in served:
        problems += model_problems(MessageBatch, e.response_json(), f"{e.method} {e.route}")
        MessageBatch.model_validate(e.response_json())
    assert not problems, "\n".join(problems)


def test_batch_listing(recorded):
    listings = [e for e in recorded.matching("GET", API) if e.route == API]
    assert listings
    problems = []
    for e in listings:
        page = e.response_json()
        if set(page) != {"data", "has_more", "first_id", "last_id"}:
            problems.append(f"GET {e.path}: keys {sorted(page)} (a page is data, has_more, first_id, last_id)")
        for index, batch in enumerate(page["data"]):
            problems += model_problems(MessageBatch, batch, f"GET {e.path} data[{index}]")
    assert not problems, "\n".join(problems)


def test_result_lines(recorded):
    lines = [
        line for e in recorded.matching("GET", API, "/results") if e.status == 200 for line in jsonl(e.response_body)
    ]
    kinds = {line["result"]["type"] for line in lines}
    assert kinds == {"succeeded", "errored", "expired", "canceled"}, kinds
    problems = []
    for index, line in enumerate(lines):
        problems += model_problems(MessageBatchIndividualResponse, line, f"result line {index}")
        MessageBatchIndividualResponse.model_validate(line)
    assert not problems, "\n".join(problems)


def test_error_bodies(recorded):
    problems = []
    for e in refused(recorded):
        problems += model_problems(ErrorResponse, e.response_json(), f"{e.status} {e.method} {e.route}")
    assert not problems, "\n".join(problems)


def test_requests_the_adapter_sends(recorded):
    creates = [e for e in recorded.matching("POST", API) if e.route == API]
    assert creates
    problems = []
    for e in creates:
        body = e.request_json()
        problems += typeddict_problems(batch_create_params.BatchCreateParams, body, "POST /v1/messages/batches body")
        for index, request in enumerate(body["requests"]):
            where = f"requests[{index}]"
            problems += typeddict_problems(batch_create_params.Request, request, where)
            params = {k: v for k, v in request["params"].items() if k not in KNOWN_EXTRA_PARAMS}
            problems += typeddict_problems(MessageCreateParamsNonStreaming, params, f"{where}.params")
    assert not problems, "\n".join(problems)

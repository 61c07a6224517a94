"""Every JSON shape the emulator serves to the OpenAI adapter, and every request the adapter sends, checked against
the `openai` SDK's own types and the batch and file schemas of the official OpenAPI spec (a fixture of facts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types import Batch, FileObject, batch_create_params, file_create_params
from openai.types.chat import ChatCompletion, completion_create_params

from speceval.providers.openai_batch import OpenAIBatchedModel
from tests.conformance.common import (
    FIXTURES,
    PARAMS,
    cancelling,
    jsonl,
    look_up_a_lost_job,
    multipart_fields,
    poll_unknown_job,
    proxied_emulator,
    refused,
    run_cancelled,
    run_scenarios,
)
from tests.conformance.recorder import RecordingProxy
from tests.conformance.shapes import model_problems, schema_problems, typeddict_problems
from tests.conftest import TEST_KEY

MODEL = "gpt-4.1-mini-2025-04-14"
API = "/openai/v1"
OPENAPI = json.loads((FIXTURES / "openai_openapi.json").read_text())
SCHEMAS = OPENAPI["schemas"]
# The spec's BatchRequestInput lists custom_id, method and url; its own example (and the Batch guide) add `body`,
# the request itself, which is checked against the SDK's chat-completions parameters instead.
INPUT_LINE = {
    **SCHEMAS["BatchRequestInput"],
    "properties": {**SCHEMAS["BatchRequestInput"]["properties"], "body": {"type": "object"}},
    "required": ["custom_id", "method", "url", "body"],
}


def spec_problems(name: str, value: Any, where: str) -> list[str]:
    return schema_problems(SCHEMAS[name], value, where, SCHEMAS)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordingProxy:
    tmp_path: Path = tmp_path_factory.mktemp("openai")
    with proxied_emulator() as (emu, proxy):
        base_url = proxy.base_url + API
        model = OpenAIBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url)
        run_scenarios(tmp_path, emu, model)
        run_cancelled(tmp_path, emu, cancelling(OpenAIBatchedModel)(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url))
        look_up_a_lost_job(model)
        poll_unknown_job(model, "batch_does_not_exist")
    return proxy


def test_batch_objects(recorded):
    exchanges = [
        *recorded.matching("POST", f"{API}/batches"),
        *recorded.matching("GET", f"{API}/batches/"),
    ]
    served = [e for e in exchanges if e.status == 200]
    statuses = {e.response_json()["status"] for e in served}
    assert {"completed", "expired", "failed", "cancelled"} <= statuses, statuses  # every end state was seen
    problems = []
    for e in served:
        body = e.response_json()
        problems += model_problems(Batch, body, f"{e.method} {e.route}")
        problems += spec_problems("Batch", body, f"{e.method} {e.route}")
        Batch.model_validate(body)
    assert not problems, "\n".join(problems)


def test_batch_listing(recorded):
    listings = [e for e in recorded.matching("GET", f"{API}/batches") if e.route == f"{API}/batches"]
    assert listings
    problems = []
    for e in listings:
        # The SDK's page model reads only `data` and `has_more`; the spec describes the whole listing.
        problems += spec_problems("ListBatchesResponse", e.response_json(), f"GET {e.path}")
        for index, batch in enumerate(e.response_json()["data"]):
            problems += model_problems(Batch, batch, f"GET {e.path} data[{index}]")
    assert not problems, "\n".join(problems)


def test_file_objects(recorded):
    uploads = recorded.matching("POST", f"{API}/files")
    assert uploads
    problems = []
    for e in uploads:
        problems += model_problems(FileObject, e.response_json(), "POST /files")
        problems += spec_problems("OpenAIFile", e.response_json(), "POST /files")
    assert not problems, "\n".join(problems)


def test_result_lines(recorded):
    downloads = recorded.matching("GET", f"{API}/files/", "/content")
    lines = [line for e in downloads if e.status == 200 for line in jsonl(e.response_body)]
    assert any(line["response"] and line["response"]["status_code"] == 200 for line in lines)
    assert any(line["response"] and line["response"]["status_code"] >= 400 for line in lines)
    assert any(line["response"] is None for line in lines)  # requests the batch never ran
    problems = []
    for index, line in enumerate(lines):
        where = f"result line {index}"
        problems += spec_problems("BatchRequestOutput", line, where)
        response = line["response"]
        if response is not None and response["status_code"] == 200:
            problems += model_problems(ChatCompletion, response["body"], f"{where}.response.body")
        elif response is not None:
            problems += spec_problems("ErrorResponse", response["body"], f"{where}.response.body")
    assert not problems, "\n".join(problems)


def test_error_bodies(recorded):
    problems = []
    for e in refused(recorded):
        problems += spec_problems("ErrorResponse", e.response_json(), f"{e.status} {e.method} {e.route}")
    assert not problems, "\n".join(problems)


def test_requests_the_adapter_sends(recorded):
    problems = []
    for e in recorded.matching("POST", f"{API}/batches"):
        if e.route == f"{API}/batches":
            body = e.request_json()
            problems += typeddict_problems(batch_create_params.BatchCreateParams, body, "POST /batches body")
            problems += spec_problems("CreateBatchRequest", body, "POST /batches body")
    for e in recorded.matching("POST", f"{API}/files"):
        fields = multipart_fields(e)
        problems += typeddict_problems(file_create_params.FileCreateParams, fields, "POST /files form")
        for index, line in enumerate(jsonl(fields["file"])):
            problems += schema_problems(INPUT_LINE, line, f"request line {index}", SCHEMAS)
            problems += typeddict_problems(
                completion_create_params.CompletionCreateParamsNonStreaming, line["body"], f"request line {index}.body"
            )
    assert not problems, "\n".join(problems)

"""Every JSON shape the emulator serves to the Gemini adapter, and every request line the adapter writes, checked
against google-genai's types where they model the wire (files, GenerateContentResponse: `extra="forbid"`, camelCase
aliases) and against the documented field names where the SDK converts instead (the batch Operation, errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from speceval.providers.gemini_batch import GeminiBatchedModel
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
from tests.conformance.google_facts import fact, request_line_problems
from tests.conformance.recorder import Exchange, RecordingProxy
from tests.conformance.shapes import model_problems
from tests.conftest import TEST_KEY

MODEL = "gemini-2.5-flash"
API = "/gemini/v1beta"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordingProxy:
    tmp_path: Path = tmp_path_factory.mktemp("gemini")
    with proxied_emulator() as (emu, proxy):
        base_url = proxy.base_url + "/gemini"
        model = GeminiBatchedModel(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url)
        run_scenarios(tmp_path, emu, model)
        run_cancelled(tmp_path, emu, cancelling(GeminiBatchedModel)(MODEL, PARAMS, api_key=TEST_KEY, base_url=base_url))
        look_up_a_lost_job(model)
        poll_unknown_job(model, "batches/doesnotexist")
    return proxy


def operation_problems(operation: dict[str, Any], where: str) -> list[str]:
    problems = fact("Operation", operation, where)
    metadata = operation.get("metadata") or {}
    problems += fact("GenerateContentBatch", metadata, f"{where}.metadata")
    problems += fact("BatchStats", metadata.get("batchStats") or {}, f"{where}.metadata.batchStats")
    for key, output in (("metadata.output", metadata.get("output")), ("response", operation.get("response"))):
        if output is not None:
            problems += fact("GenerateContentBatchOutput", output, f"{where}.{key}")
    if operation.get("error") is not None:
        problems += fact("Status", operation["error"], f"{where}.error")
    return problems


def batches(recorded: RecordingProxy) -> list[Exchange]:
    gets = [e for e in recorded.matching("GET", f"{API}/batches/") if e.status == 200]
    creates = [e for e in recorded.matching("POST", f"{API}/models/", ":batchGenerateContent") if e.status == 200]
    return creates + gets


def test_batch_operations(recorded):
    served = batches(recorded)
    states = {e.response_json()["metadata"]["state"] for e in served}
    assert {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_EXPIRED", "BATCH_STATE_CANCELLED"} <= states
    problems = [p for e in served for p in operation_problems(e.response_json(), f"{e.method} {e.route}")]
    assert not problems, "\n".join(problems)


def test_batch_listing(recorded):
    listings = [e for e in recorded.matching("GET", f"{API}/batches") if e.route == f"{API}/batches"]
    assert listings
    problems = []
    for e in listings:
        page = e.response_json()
        problems += fact("ListBatchesResponse", page, f"GET {e.path}")
        for index, operation in enumerate(page.get("operations") or []):
            problems += operation_problems(operation, f"GET {e.path} operations[{index}]")
    assert not problems, "\n".join(problems)


def test_file_objects(recorded):
    uploads = [e for e in recorded.matching("POST", "/gemini/upload/v1beta/files") if e.response_body]
    assert uploads
    problems = []
    for e in uploads:
        body = e.response_json()
        problems += [f"upload: {key!r} beside 'file'" for key in body if key != "file"]
        problems += model_problems(types.File, body["file"], "upload.file")
        types.File.model_validate(body["file"])
    assert not problems, "\n".join(problems)


def test_responses_file_lines(recorded):
    downloads = [e for e in recorded.matching("GET", f"{API}/files/", ":download") if e.status == 200]
    lines = [line for e in downloads for line in jsonl(e.response_body)]
    assert any("response" in line for line in lines) and any("error" in line for line in lines)
    problems = []
    for index, line in enumerate(lines):
        where = f"responses line {index}"
        problems += fact("ResponsesLine", line, where)
        if "response" in line:
            problems += model_problems(types.GenerateContentResponse, line["response"], f"{where}.response")
            types.GenerateContentResponse.model_validate(line["response"])
        if "error" in line:
            problems += fact("HttpError", line["error"], f"{where}.error")
    assert not problems, "\n".join(problems)


def test_error_bodies(recorded):
    problems = []
    for e in refused(recorded):
        body = e.response_json()
        problems += fact("ErrorBody", body, f"{e.status} {e.method} {e.route}")
        problems += fact("HttpError", body.get("error") or {}, f"{e.status} {e.method} {e.route}.error")
    assert not problems, "\n".join(problems)


def test_request_lines_the_adapter_writes(recorded):
    chunks = [e for e in recorded.matching("POST", "/gemini/upload/v1beta/files") if "upload_id" in e.path]
    lines = [line for e in chunks for line in jsonl(e.request_body)]
    assert lines
    problems = []
    for index, line in enumerate(lines):
        problems += request_line_problems(line, f"request line {index}")
    assert not problems, "\n".join(problems)

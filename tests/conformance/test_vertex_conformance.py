"""Every JSON shape the emulator serves to the Vertex adapter (batch prediction jobs, listings, errors, prediction
rows) and every request line the adapter writes, checked against the documented field names (google-genai converts
BatchPredictionJob into its own BatchJob rather than modelling the wire) and google-genai's content types."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from google.genai import types
from google.oauth2.credentials import Credentials

from speceval.providers.vertex_batch import VertexBatchedModel
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
from tests.providers.test_vertex_batch import IN_BUCKET, LOCATION, MODEL, OUT_BUCKET, PROJECT, FakeGcs

JOBS = f"/vertex/v1beta1/projects/{PROJECT}/locations/{LOCATION}/batchPredictionJobs"


class Recorded:
    def __init__(self, proxy: RecordingProxy, objects: dict[str, bytes]) -> None:
        self.proxy = proxy
        self.objects = objects


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    tmp_path: Path = tmp_path_factory.mktemp("vertex")
    with proxied_emulator() as (emu, proxy), responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        FakeGcs(emu.vertex_objects).register(mock)
        options: dict[str, Any] = {
            "base_url": proxy.base_url + "/vertex",
            "project": PROJECT,
            "location": LOCATION,
            "input_bucket": IN_BUCKET,
            "output_bucket": OUT_BUCKET,
            "credentials": Credentials(token="test-token-not-a-secret"),
        }
        model = VertexBatchedModel(MODEL, PARAMS, **options)
        run_scenarios(tmp_path, emu, model, org="vertex")
        run_cancelled(tmp_path, emu, cancelling(VertexBatchedModel)(MODEL, PARAMS, **options), org="vertex")
        look_up_a_lost_job(model)
        poll_unknown_job(model, f"projects/{PROJECT}/locations/{LOCATION}/batchPredictionJobs/404")
        objects = {
            f"gs://{bucket}/{name}": emu.vertex_objects.get(bucket, name) or b""
            for bucket in (IN_BUCKET, OUT_BUCKET)
            for name in emu.vertex_objects.list(bucket)
        }
    yield Recorded(proxy, objects)


def job_problems(job: dict[str, Any], where: str) -> list[str]:
    problems = fact("BatchPredictionJob", job, where)
    problems += fact("InputConfig", job.get("inputConfig") or {}, f"{where}.inputConfig")
    problems += fact("OutputConfig", job.get("outputConfig") or {}, f"{where}.outputConfig")
    if "outputInfo" in job:
        problems += fact("OutputInfo", job["outputInfo"], f"{where}.outputInfo")
    if "completionStats" in job:
        problems += fact("CompletionStats", job["completionStats"], f"{where}.completionStats")
    if "error" in job:
        problems += fact("Status", job["error"], f"{where}.error")
        for index, detail in enumerate(job["error"].get("details") or []):
            problems += fact("StatusDetail", detail, f"{where}.error.details[{index}]")
    return problems


def jobs(recorded: Recorded) -> list[Exchange]:
    served = [*recorded.proxy.matching("POST", JOBS), *recorded.proxy.matching("GET", JOBS + "/")]
    return [e for e in served if e.status == 200 and e.route != JOBS or e.method == "POST" and e.route == JOBS]


def test_batch_prediction_jobs(recorded):
    served = [e for e in jobs(recorded) if e.response_body.strip() not in (b"", b"{}")]
    states = {e.response_json()["state"] for e in served}
    assert {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_EXPIRED", "JOB_STATE_CANCELLED"} <= states, states
    problems = [p for e in served for p in job_problems(e.response_json(), f"{e.method} {e.route}")]
    assert not problems, "\n".join(problems)


def test_job_listing(recorded):
    listings = [e for e in recorded.proxy.matching("GET", JOBS) if e.route == JOBS]
    assert listings
    problems = []
    for e in listings:
        page = e.response_json()
        problems += fact("ListBatchPredictionJobsResponse", page, f"GET {e.path}")
        for index, job in enumerate(page.get("batchPredictionJobs") or []):
            problems += job_problems(job, f"GET {e.path} batchPredictionJobs[{index}]")
    assert not problems, "\n".join(problems)


def test_error_bodies(recorded):
    problems = []
    for e in refused(recorded.proxy):
        problems += fact("ErrorBody", e.response_json(), f"{e.status} {e.method} {e.route}")
        problems += fact("HttpError", e.response_json()["error"], f"{e.status} {e.method} {e.route}.error")
    assert not problems, "\n".join(problems)


def test_prediction_rows(recorded):
    rows = [
        row
        for uri, content in recorded.objects.items()
        if uri.startswith(f"gs://{OUT_BUCKET}/")
        for row in jsonl(content)
    ]
    assert any(row["status"] == "" for row in rows) and any(row["status"] for row in rows)
    problems = []
    for index, row in enumerate(rows):
        where = f"prediction row {index}"
        problems += fact("PredictionRow", row, where)
        if "response" in row:
            problems += model_problems(types.GenerateContentResponse, row["response"], f"{where}.response")
    assert not problems, "\n".join(problems)


def test_request_lines_the_adapter_writes(recorded):
    lines = [
        line
        for uri, content in recorded.objects.items()
        if uri.startswith(f"gs://{IN_BUCKET}/")
        for line in jsonl(content)
    ]
    assert lines
    problems = []
    for index, line in enumerate(lines):
        problems += request_line_problems(line, f"request line {index}")
    assert not problems, "\n".join(problems)

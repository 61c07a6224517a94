"""The Vertex AI adapter: google-genai (Vertex mode) against the emulator's `/vertex` batchPredictionJobs over
loopback, and google-cloud-storage against a Cloud Storage fake served with `responses`.

Both fakes share one bucket map (`Emulator.vertex_objects`): the storage client uploads request files into it,
the emulated jobs read them and write `predictions.jsonl` into it, and the adapter reads those back. Explicit
token credentials are passed, so nothing ever asks the metadata server or Google for a token, and `responses`
refuses any `requests` call it does not serve.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import responses
from google.oauth2.credentials import Credentials

from speceval.batch.records import BatchRecord, JobState, Outcome, RemoteJob, SubmissionIntent, VertexHandle
from speceval.cli import generation
from speceval.emulator import Emulator, FaultConfig
from speceval.emulator.vertex_batch import GcsObjects
from speceval.errors import ConfigError, TransientProviderError
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.vertex_batch import VertexBatchedModel, parse_prediction_line
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY, write_inputs, write_spec
from tests.providers.test_anthropic_batch import LONG_ID, PARAMS, config_for, generate_with, load, resume

MODEL = "gemini-2.5-flash"
PROJECT, LOCATION = "speceval-test-project", "us-central1"
IN_BUCKET, OUT_BUCKET = "speceval-in", "speceval-out"
GCS = "https://storage.googleapis.com"


class FakeGcs:
    """The JSON API calls google-cloud-storage makes (multipart upload, list, media download), over `objects`."""

    def __init__(self, objects: GcsObjects) -> None:
        self.objects = objects
        self.downloaded: list[str] = []
        self.listed: list[tuple[str, str]] = []

    def register(self, mock: responses.RequestsMock) -> None:
        mock.add_callback("POST", re.compile(rf"{GCS}/upload/storage/v1/b/([^/]+)/o\b.*"), self.upload)
        mock.add_callback("GET", re.compile(rf"{GCS}/storage/v1/b/([^/]+)/o(\?.*)?$"), self.list)
        mock.add_callback("GET", re.compile(rf"{GCS}/download/storage/v1/b/([^/]+)/o/([^?]+).*"), self.download)

    @staticmethod
    def _resource(bucket: str, name: str, size: int) -> dict[str, Any]:
        return {"kind": "storage#object", "bucket": bucket, "name": name, "size": str(size), "generation": "1"}

    def upload(self, request: Any) -> tuple[int, dict[str, str], str]:
        bucket = urlsplit(request.url).path.split("/")[5]
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        content_type = request.headers["content-type"]
        content_type = content_type.decode() if isinstance(content_type, bytes) else content_type
        boundary = b"--" + content_type.split("boundary=")[1].strip('"').encode()
        # multipart/related: [JSON metadata, media], each part "headers CRLF CRLF body CRLF"
        metadata, media = (part.split(b"\r\n\r\n", 1)[1][:-2] for part in body.split(boundary)[1:3])
        name = json.loads(metadata)["name"]
        self.objects.put(bucket, name, media)
        return 200, {}, json.dumps(self._resource(bucket, name, len(media)))

    def list(self, request: Any) -> tuple[int, dict[str, str], str]:
        split = urlsplit(request.url)
        bucket = split.path.split("/")[4]
        prefix = parse_qs(split.query).get("prefix", [""])[0]
        self.listed.append((bucket, prefix))
        names = self.objects.list(bucket, prefix)
        items = [self._resource(bucket, n, len(self.objects.get(bucket, n) or b"")) for n in names]
        return 200, {}, json.dumps({"kind": "storage#objects", "items": items})

    def download(self, request: Any) -> tuple[int, dict[str, str], bytes | str]:
        parts = urlsplit(request.url).path.split("/")
        bucket, name = parts[5], unquote("/".join(parts[7:]))
        content = self.objects.get(bucket, name)
        if content is None:
            return 404, {}, json.dumps({"error": {"code": 404, "message": f"No such object: {bucket}/{name}"}})
        self.downloaded.append(f"gs://{bucket}/{name}")
        return 200, {"content-type": "application/octet-stream"}, content


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.2)) as emulator:
        yield emulator


@pytest.fixture
def gcs(emu: Emulator) -> Iterator[FakeGcs]:
    fake = FakeGcs(emu.vertex_objects)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake.register(mock)
        yield fake


def adapter(emu: Emulator, cls: type[VertexBatchedModel] = VertexBatchedModel, **kwargs: Any) -> VertexBatchedModel:
    options: dict[str, Any] = {
        "base_url": emu.vertex_base_url,
        "project": PROJECT,
        "location": LOCATION,
        "input_bucket": IN_BUCKET,
        "output_bucket": OUT_BUCKET,
        "credentials": Credentials(token="test-token-not-a-secret"),
    }
    return cls(MODEL, PARAMS, **{**options, **kwargs})


def metadata(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in (run_dir / "metadata").glob("*.json")]


# -- end to end through the pipeline ------------------------------------------------------------------------


def test_results_land_on_their_inputs_reading_only_each_jobs_own_output_folder(tmp_path, emu, gcs):
    # Another job's predictions under the same bucket prefix: the original's "first predictions.jsonl" bug.
    decoy = {"key": "decoy-0", "status": "", "request": {}, "response": {"candidates": []}}
    emu.vertex_objects.put(OUT_BUCKET, "speceval/predictions.jsonl", json.dumps(decoy).encode() + b"\n")
    emu.vertex_objects.put(OUT_BUCKET, "speceval/0ther/prediction-model-1/predictions.jsonl", b"not json\n")
    statements = {"be_honest": [f"question {i}" for i in range(5)], LONG_ID: ["x", "y", "z"]}
    summary, run_dir = generate_with(tmp_path, adapter(emu), statements, batch_size=4)

    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 8}
    for statement_id, texts in statements.items():
        records = load(run_dir, statement_id)
        assert [r["input_text"] for r in records] == texts
        for record in records:
            assert record["outcome"] == "succeeded" and record["output_text"].startswith("[synthetic")
            assert record["usage"]["output_tokens"] > 0
    answers = [r["output_text"] for r in load(run_dir, "be_honest")]
    assert len(set(answers)) == len(answers)

    jobs = metadata(run_dir)
    assert len(jobs) == 2 == emu.stats.batches_created["vertex"]
    folders = {job["handle"]["output_dir"] for job in jobs}
    assert len(folders) == 2  # each job wrote into its own folder, under its own destination prefix
    for job in jobs:
        assert re.fullmatch(r"projects/[^/]+/locations/[^/]+/batchPredictionJobs/\d+", job["batch_id"])
        assert job["raw_state"] == "JOB_STATE_SUCCEEDED" and job["state"] == "completed"
        key = job["idempotency_key"]
        assert job["handle"]["input_uri"] == f"gs://{IN_BUCKET}/speceval/{key}.jsonl"
        assert job["handle"]["output_dir"].startswith(f"gs://{OUT_BUCKET}/speceval/{key}/prediction-model-")
    # Only the reported folders were listed and read; the decoys never were.
    assert {f"gs://{bucket}/{prefix}".rstrip("/") for bucket, prefix in gcs.listed} == folders
    assert all(any(uri.startswith(folder + "/") for folder in folders) for uri in gcs.downloaded)
    assert len(gcs.downloaded) == 2


def test_request_line_carries_the_custom_id_where_vertex_echoes_it():
    params = GenerationParams(temperature=0.3, max_tokens=77, system_prompt="Be brief.")
    model = VertexBatchedModel(
        MODEL,
        params,
        project="p",
        location="l",
        input_bucket="i",
        output_bucket="o",
        credentials=Credentials(token="t"),
    )
    line = json.loads(model.format_request("0123456789ab-7", "2+2?"))
    assert line == {
        "key": "0123456789ab-7",
        "request": {
            "contents": [{"role": "user", "parts": [{"text": "2+2?"}]}],
            "generation_config": {"max_output_tokens": 77, "temperature": 0.3},
            "system_instruction": {"parts": [{"text": "Be brief."}]},
            "labels": {"speceval_custom_id": "0123456789ab-7"},
        },
    }


def test_errored_requests_carry_the_provider_message(tmp_path, emu, gcs):
    statements = {"s": ["fine", "bad one [[emulator:error]]", "also fine"]}
    summary, run_dir = generate_with(tmp_path, adapter(emu), statements)
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.ERRORED: 1}
    bad = load(run_dir, "s")[1]
    assert bad["outcome"] == "errored" and bad["output_text"] is None
    assert bad["error"]["code"] == "INVALID_ARGUMENT" and bad["error"]["status_code"] == 400
    assert "[[emulator:error]]" in bad["error"]["message"] and bad["error"]["retryable"] is False
    assert emu.stats.batches_created["vertex"] == 1


def test_server_errors_are_retryable_and_resubmitted(tmp_path, gcs, emu):
    emu.faults = FaultConfig(turnaround_seconds=0.05, error_rate=1.0)
    summary, run_dir = generate_with(tmp_path, adapter(emu), {"s": ["q0", "q1"]}, max_attempts=2)
    assert summary.finished and summary.outcome_counts == {Outcome.ERRORED: 2}
    record = load(run_dir, "s")[0]
    assert record["error"]["status_code"] == 500 and record["error"]["retryable"] and record["attempts"] == 2
    assert emu.stats.batches_created["vertex"] == 2


# -- crash safety and reconciliation -------------------------------------------------------------------------


class CrashAfterCreate(VertexBatchedModel):
    """Dies (as a SIGKILL would) right after Vertex created the job, before we record it."""

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        super().generate_batch(intent, request_file)
        raise SystemExit("killed in the window")


def test_crash_after_create_adopts_the_job_by_display_name(tmp_path, emu, gcs):
    statements = {"s": [f"q{i}" for i in range(4)]}
    pipeline = BatchedGenerationPipeline(config_for(tmp_path, MODEL, statements, org="vertex", batch_size=2))
    with pytest.raises(SystemExit):
        pipeline.run(adapter(emu, CrashAfterCreate))
    assert emu.stats.batches_created["vertex"] == 1
    summary = resume(pipeline.run_dir, adapter(emu))
    listed = sum(n for route, n in emu.stats.requests.items() if route.startswith("GET") and route.endswith("Jobs"))
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    assert emu.stats.batches_created["vertex"] == 2 and listed >= 1  # looked up, adopted, not paid twice
    uploads = [k for k in emu.vertex_objects.list(IN_BUCKET)]
    assert len(uploads) == 2  # one request file per chunk
    assert not list((pipeline.run_dir / "intents").glob("*.json"))


def test_find_submitted_matches_only_its_own_display_name(tmp_path, emu, gcs):
    model = adapter(emu)
    key = "feedfacecafe" + "0" * 20
    request_file = tmp_path / "r.jsonl"
    request_file.write_bytes(b"".join(model.format_request(f"{key[:12]}-{i}", f"q{i}") for i in range(2)))
    intent = SubmissionIntent(
        idempotency_key=key,
        provider="vertex",
        model=MODEL,
        request_file="r.jsonl",
        request_bytes=request_file.stat().st_size,
        requests={f"{key[:12]}-{i}": {"statement_id": "s", "original_index": i} for i in range(2)},
    )
    assert model.find_submitted(intent) is None
    intent.handle = model.prepare(intent, request_file)
    job = model.generate_batch(intent, request_file)
    found = adapter(emu).find_submitted(intent)
    assert found is not None and found.batch_id == job.batch_id
    assert isinstance(found.handle, VertexHandle) and found.handle.input_uri == intent.handle.input_uri
    assert adapter(emu).find_submitted(intent.model_copy(update={"idempotency_key": "0" * 32})) is None


def test_a_sibling_folder_sharing_the_name_prefix_is_never_read(emu, gcs):
    folder = f"gs://{OUT_BUCKET}/speceval/k/prediction-model-1"
    answer = {"candidates": [{"content": {"parts": [{"text": "A"}]}}]}
    row = {"key": "k-0", "status": "", "request": {}, "response": answer}
    emu.vertex_objects.put(OUT_BUCKET, "speceval/k/prediction-model-1/predictions.jsonl", json.dumps(row).encode())
    emu.vertex_objects.put(OUT_BUCKET, "speceval/k/prediction-model-10/predictions.jsonl", b"{broken\n")
    emu.vertex_objects.put(OUT_BUCKET, "speceval/k/prediction-model-1/notes.txt", b"{broken\n")
    record = BatchRecord(
        batch_id="projects/p/locations/l/batchPredictionJobs/1",
        provider="vertex",
        model=MODEL,
        idempotency_key="k",
        state=JobState.COMPLETED,
        raw_state="JOB_STATE_SUCCEEDED",
        handle=VertexHandle(input_uri="gs://i/x.jsonl", output_dir=folder),
        request_file="r.jsonl",
        request_count=1,
        requests={"k-0": {"statement_id": "s", "original_index": 0}},
    )
    outcomes = list(adapter(emu).get_batch_results(record))
    assert [(o.custom_id, o.output_text) for o in outcomes] == [("k-0", "A")]
    assert gcs.downloaded == [f"{folder}/predictions.jsonl"]


# -- parsing ------------------------------------------------------------------------------------------------


def test_prediction_rows_are_matched_by_label_then_key_never_by_text():
    labelled = {
        "key": "other",
        "request": {"labels": {"speceval_custom_id": "abc-1"}},
        "status": "",
        "response": {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
    }
    outcome = parse_prediction_line(json.dumps(labelled), "gs://b/p")
    assert outcome is not None and outcome.custom_id == "abc-1" and outcome.output_text == "hi"
    keyed = {"key": "abc-2", "request": {"contents": []}, "status": "", "response": labelled["response"]}
    assert parse_prediction_line(json.dumps(keyed), "gs://b/p").custom_id == "abc-2"
    anonymous = {"request": {"contents": [{"parts": [{"text": "question 1"}]}]}, "status": "", "response": {}}
    assert parse_prediction_line(json.dumps(anonymous), "gs://b/p") is None
    with pytest.raises(TransientProviderError):
        parse_prediction_line('{"key": "abc-3", "sta', "gs://b/p")


def test_a_failed_row_reports_its_status():
    embedded = 'Bad Request: {"error": {"code": 400, "message": "Invalid argument.", "status": "INVALID_ARGUMENT"}}'
    outcome = parse_prediction_line(json.dumps({"key": "a-1", "status": embedded, "request": {}}), "gs://b/p")
    assert outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert (outcome.error.code, outcome.error.status_code, outcome.error.message) == (
        "INVALID_ARGUMENT",
        400,
        "Invalid argument.",
    )
    plain = parse_prediction_line(json.dumps({"key": "a-2", "status": "Quota exceeded", "request": {}}), "gs://b/p")
    assert plain.outcome is Outcome.ERRORED and plain.error.message == "Quota exceeded"


def test_a_row_with_neither_a_response_nor_a_status_is_a_malformed_answer_not_a_success():
    outcome = parse_prediction_line(json.dumps({"key": "a-3", "status": "", "request": {}}), "gs://b/p")
    assert outcome.custom_id == "a-3" and outcome.outcome is Outcome.ERRORED and outcome.output_text is None
    assert (outcome.error.code, outcome.error.retryable) == ("malformed_response", False)
    assert outcome.error.message == "the prediction row has neither a response nor a status"


# -- configuration ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("project", "--project (or $GOOGLE_CLOUD_PROJECT)"),
        ("location", "--location (or $GOOGLE_CLOUD_LOCATION)"),
        ("input_bucket", "--input-bucket"),
        ("output_bucket", "--output-bucket"),
    ],
)
def test_missing_configuration_is_a_config_error_naming_flag_and_variable(monkeypatch, missing, named):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    options = {"project": "p", "location": "l", "input_bucket": "i", "output_bucket": "o", missing: None}
    with pytest.raises(ConfigError, match=re.escape(named)):
        VertexBatchedModel(MODEL, PARAMS, credentials=Credentials(token="t"), **options)


def test_project_and_location_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    credentials = Credentials(token="t")
    model = VertexBatchedModel(MODEL, PARAMS, input_bucket="gs://i/", output_bucket="o", credentials=credentials)
    assert (model.project, model.location, model.input_bucket) == ("env-project", "europe-west4", "i")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--input-bucket", "i", "--output-bucket", "o"], "--project (or $GOOGLE_CLOUD_PROJECT)"),
        (["--project", "p", "--output-bucket", "o"], "--input-bucket"),
        (["--project", "p", "--input-bucket", "i"], "--output-bucket"),
    ],
)
def test_cli_without_project_or_buckets_exits_2_before_submitting(tmp_path, monkeypatch, capsys, flags, named):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    spec = write_spec(tmp_path / "spec.jsonl", ["s"])
    inputs = write_inputs(tmp_path / "inputs", {"s": ["q"]})
    code = generation.main(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            MODEL,
            "--org",
            "vertex",
            "--output-base-dir",
            str(tmp_path / "out"),
            *flags,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    # The exit must come from the missing setting itself (not, say, a missing API key of another provider).
    assert named in err.replace("\n", " ") and "API key" not in err


def test_vertex_flags_on_another_provider_are_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)  # so that the exit cannot come from a missing key
    spec = write_spec(tmp_path / "spec.jsonl", ["s"])
    inputs = write_inputs(tmp_path / "inputs", {"s": ["q"]})
    code = generation.main(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            "gpt-4.1-mini",
            "--output-base-dir",
            str(tmp_path / "out"),
            "--input-bucket",
            "b",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--input-bucket apply to --org vertex only" in err.replace("\n", " ")

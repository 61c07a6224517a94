"""The Gemini Files and Batch APIs of the emulator, driven through the real `google-genai` SDK."""

from __future__ import annotations

import io
import json

import pytest
from google import genai
from google.genai import errors, types

from speceval.emulator import Emulator, FaultConfig, HttpFault

from .helpers import KEY, MARKER, gemini_client, gemini_lines, parse_jsonl, raw, wait_until

UPLOAD = types.UploadFileConfig(mime_type="application/jsonl", display_name="input")


def run_file_batch(client: genai.Client, prompts: list[str], display_name: str = "job") -> types.BatchJob:
    uploaded = client.files.upload(file=io.BytesIO(gemini_lines(prompts)), config=UPLOAD)
    assert uploaded.name is not None
    job = client.batches.create(model="gemini-test", src=uploaded.name, config={"display_name": display_name})
    assert job.name is not None
    name = job.name
    return wait_until(lambda: client.batches.get(name=name), lambda j: bool(j.done))


def test_file_workflow_maps_keys_back_and_shuffles(emu: Emulator) -> None:
    prompts = [f"question {i}" for i in range(10)] + [f"bad {MARKER}"]
    with gemini_client(emu) as client:
        uploaded = client.files.upload(file=io.BytesIO(gemini_lines(prompts)), config=UPLOAD)
        assert uploaded.name and uploaded.name.startswith("files/") and uploaded.display_name == "input"
        assert uploaded.size_bytes == len(gemini_lines(prompts)) and uploaded.state == types.FileState.ACTIVE
        assert client.files.get(name=uploaded.name).size_bytes == uploaded.size_bytes
        job = client.batches.create(model="gemini-test", src=uploaded.name, config={"display_name": "key-1"})
        assert job.name and job.name.startswith("batches/") and job.state == types.JobState.JOB_STATE_PENDING
        assert job.display_name == "key-1" and job.model == "models/gemini-test"
        name = job.name
        final = wait_until(lambda: client.batches.get(name=name), lambda j: bool(j.done))
        assert final.state == types.JobState.JOB_STATE_SUCCEEDED and final.end_time is not None
        assert final.dest is not None and final.dest.file_name == f"files/batch-{name.removeprefix('batches/')}"
        lines = parse_jsonl(client.files.download(file=final.dest.file_name).decode())
    keys = [line["key"] for line in lines]
    assert sorted(keys) == sorted(f"r{i}" for i in range(11)) and keys != sorted(keys, key=lambda k: int(k[1:]))
    [bad] = [line for line in lines if "error" in line]
    assert bad["key"] == "r10" and bad["error"]["code"] == 400 and bad["error"]["status"] == "INVALID_ARGUMENT"
    assert MARKER in bad["error"]["message"]
    for line in lines:
        if "response" in line:
            response = types.GenerateContentResponse.model_validate(line["response"])
            assert response.text and response.text.startswith(
                "[synthetic answer from the speceval emulator; model=gemini-test]"
            )
            assert response.usage_metadata and response.usage_metadata.total_token_count


def test_raw_operation_shape_and_rest_download_path(emu: Emulator) -> None:
    with gemini_client(emu) as client:
        final = run_file_batch(client, ["a", "b"])
    assert final.name and final.dest and final.dest.file_name
    status, _, body = raw("GET", f"{emu.gemini_base_url}/v1beta/{final.name}", headers={"x-goog-api-key": KEY})
    operation = json.loads(body)
    assert status == 200 and operation["done"] is True
    metadata = operation["metadata"]
    assert metadata["@type"].endswith("v1beta.GenerateContentBatch") and metadata["state"] == "BATCH_STATE_SUCCEEDED"
    assert metadata["batchStats"] == {
        "requestCount": "2",
        "successfulRequestCount": "2",
        "failedRequestCount": "0",
        "pendingRequestCount": "0",
    }
    assert operation["response"]["responsesFile"] == final.dest.file_name
    file_id = final.dest.file_name.removeprefix("files/")
    status, _, content = raw(
        "GET", f"{emu.gemini_base_url}/download/v1beta/files/{file_id}:download?alt=media&key={KEY}"
    )
    assert status == 200 and len(parse_jsonl(content.decode())) == 2


def test_inline_batch_echoes_metadata_in_input_order_on_v1beta(emu: Emulator) -> None:
    src = [types.InlinedRequest(contents=f"prompt {i}", metadata={"key": f"k{i}"}) for i in range(5)]
    src.append(types.InlinedRequest(contents=f"broken {MARKER}", metadata={"key": "k5"}))
    with gemini_client(emu, version="v1beta") as client:
        job = client.batches.create(model="gemini-test", src=src, config={"display_name": "inline"})
        assert job.name
        name = job.name
        final = wait_until(lambda: client.batches.get(name=name), lambda j: bool(j.done))
    assert final.dest and final.dest.inlined_responses
    responses = final.dest.inlined_responses
    assert [r.metadata for r in responses] == [{"key": f"k{i}"} for i in range(6)]
    assert all(r.response and r.response.text and "[synthetic answer" in r.response.text for r in responses[:5])
    assert responses[5].response is None and responses[5].error is not None
    assert responses[5].error.code == 400  # type: ignore[attr-defined]


def test_two_chunk_upload_and_client_chosen_name(emu: Emulator) -> None:
    data = bytes(range(256)) * (9 * 4096)  # 9 MiB: the SDK sends an 8 MiB chunk, then the rest
    with gemini_client(emu) as client:
        uploaded = client.files.upload(
            file=io.BytesIO(data),
            config=types.UploadFileConfig(mime_type="application/octet-stream", name="files/my-input-1"),
        )
        assert uploaded.name == "files/my-input-1" and uploaded.size_bytes == len(data)
        assert client.files.download(file="files/my-input-1") == data
        with pytest.raises(errors.ClientError) as caught:
            client.files.upload(
                file=io.BytesIO(b"x"), config=types.UploadFileConfig(mime_type="text/plain", name="files/my-input-1")
            )
        assert caught.value.code == 409
        client.files.delete(name="files/my-input-1")
        with pytest.raises(errors.ClientError) as missing:
            client.files.get(name="files/my-input-1")
        assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"
    assert emu.stats.files_uploaded == 1


def test_cancel_list_and_delete() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=2.0)) as emu, gemini_client(emu) as client:
        uploaded = client.files.upload(file=io.BytesIO(gemini_lines(["a"])), config=UPLOAD)
        assert uploaded.name
        names = [client.batches.create(model="gemini-test", src=uploaded.name).name for _ in range(3)]
        listed = [j.name for j in client.batches.list(config={"page_size": 2})]
        assert listed == names[::-1]
        client.batches.cancel(name=names[0])
        cancelled = wait_until(lambda: client.batches.get(name=names[0]), lambda j: bool(j.done))  # type: ignore[arg-type]
        assert cancelled.state == types.JobState.JOB_STATE_CANCELLED and cancelled.dest is None
        client.batches.delete(name=names[1])  # type: ignore[arg-type]
        with pytest.raises(errors.ClientError) as caught:
            client.batches.get(name=names[1])  # type: ignore[arg-type]
        assert caught.value.code == 404
        assert [j.name for j in client.batches.list()] == [names[2], names[0]]


def test_expired_and_failed_states() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, expire_jobs=True)) as emu, gemini_client(emu) as client:
        expired = run_file_batch(client, ["a", "b"])
        emu.faults = FaultConfig(turnaround_seconds=0.05, fail_validation=True)
        failed = run_file_batch(client, ["a"])
        assert failed.name
        operation = json.loads(
            raw("GET", f"{emu.gemini_base_url}/v1beta/{failed.name}", headers={"x-goog-api-key": KEY})[2]
        )
    assert expired.state == types.JobState.JOB_STATE_EXPIRED and expired.dest is None
    assert failed.state == types.JobState.JOB_STATE_FAILED and failed.dest is None
    # An Operation's error is a google.rpc.Status: numeric RPC code (3 = INVALID_ARGUMENT) and message.
    assert operation["error"]["code"] == 3 and operation["error"]["message"]


def test_error_rate_create_limit_http_fault_and_auth() -> None:
    faults = FaultConfig(
        turnaround_seconds=0.05,
        error_rate=0.5,
        create_limit_error_count=1,
        http_faults=[HttpFault(provider="google", method="GET", path_regex=r"/batches/", status=503, count=1)],
    )
    with Emulator(faults=faults) as emu, gemini_client(emu) as client:
        uploaded = client.files.upload(file=io.BytesIO(gemini_lines([f"q{i}" for i in range(20)])), config=UPLOAD)
        assert uploaded.name
        with pytest.raises(errors.ClientError) as limited:
            client.batches.create(model="gemini-test", src=uploaded.name)
        assert limited.value.code == 429 and limited.value.status == "RESOURCE_EXHAUSTED"
        job = client.batches.create(model="gemini-test", src=uploaded.name)
        assert job.name
        name = job.name
        with pytest.raises(errors.ServerError) as unavailable:
            client.batches.get(name=name)
        assert unavailable.value.code == 503 and unavailable.value.status == "UNAVAILABLE"
        final = wait_until(lambda: client.batches.get(name=name), lambda j: bool(j.done))
        assert final.dest and final.dest.file_name
        lines = parse_jsonl(client.files.download(file=final.dest.file_name).decode())
        status, _, body = raw("GET", f"{emu.gemini_base_url}/v1beta/batches")
    server_errors = [line for line in lines if "error" in line]
    assert 0 < len(server_errors) < 20
    assert all(line["error"]["code"] == 500 and line["error"]["status"] == "INTERNAL" for line in server_errors)
    assert status == 403 and json.loads(body)["error"]["status"] == "PERMISSION_DENIED"


def test_archived_results_answer_404() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, gemini_client(emu) as client:
        final = run_file_batch(client, ["a"])
        emu.faults = FaultConfig(archive_results=True)
        assert final.dest and final.dest.file_name
        with pytest.raises(errors.ClientError) as caught:
            client.files.download(file=final.dest.file_name)
    assert caught.value.code == 404


def test_cancel_after_the_end_is_a_failed_precondition() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, gemini_client(emu) as client:
        done = run_file_batch(client, ["a"])
        assert done.name
        with pytest.raises(errors.ClientError) as caught:
            client.batches.cancel(name=done.name)
        after = client.batches.get(name=done.name)
    assert caught.value.code == 400 and caught.value.status == "FAILED_PRECONDITION"
    assert "already in a terminal state (BATCH_STATE_SUCCEEDED)" in str(caught.value.message)
    assert after.state == types.JobState.JOB_STATE_SUCCEEDED

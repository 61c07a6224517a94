"""The OpenAI Batch and Files APIs of the emulator, driven through the real `openai` SDK."""

from __future__ import annotations

import json

import openai
import pytest

from speceval.emulator import Emulator, FaultConfig, HttpFault, respond

from .helpers import KEY, MARKER, openai_client, openai_lines, parse_jsonl, raw, wait_until

TERMINAL = {"completed", "failed", "expired", "cancelled"}


def run_batch(client: openai.OpenAI, prompts: list[str], **create: object) -> openai.types.Batch:
    """Upload, create and poll one batch until it is terminal."""
    uploaded = client.files.create(file=("in.jsonl", openai_lines(prompts)), purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        **create,  # type: ignore[arg-type]
    )
    return wait_until(lambda: client.batches.retrieve(batch.id), lambda b: b.status in TERMINAL)


def test_full_workflow_maps_ids_back_and_shuffles(emu: Emulator) -> None:
    prompts = [f"question {i}" for i in range(12)] + [f"bad {MARKER}"]
    with openai_client(emu) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines(prompts)), purpose="batch")
        assert uploaded.id.startswith("file-") and uploaded.purpose == "batch" and uploaded.filename == "in.jsonl"
        assert uploaded.bytes == len(openai_lines(prompts))
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"job": "k1"}
        )
        assert batch.status == "validating" and batch.metadata == {"job": "k1"}
        assert batch.request_counts is not None and batch.request_counts.total == 13
        seen = {batch.status}
        final = wait_until(
            lambda: client.batches.retrieve(batch.id), lambda b: seen.add(b.status) or b.status in TERMINAL
        )
        assert "in_progress" in seen
        assert final.status == "completed" and final.model == "gpt-test"
        assert final.request_counts is not None
        assert (final.request_counts.completed, final.request_counts.failed) == (12, 1)
        assert final.in_progress_at and final.finalizing_at and final.completed_at
        assert final.usage is not None and final.usage.output_tokens > 0
        assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens
        output = parse_jsonl(client.files.content(final.output_file_id).text)
        errors = parse_jsonl(client.files.content(final.error_file_id).text)
    ids = [line["custom_id"] for line in output]
    assert sorted(ids) == sorted(f"r{i}" for i in range(12))
    assert ids != [f"r{i}" for i in range(12)], "results should come back shuffled"
    for line in output:
        index = int(line["custom_id"][1:])
        body = line["response"]["body"]
        assert line["error"] is None and line["response"]["status_code"] == 200
        assert line["id"].startswith("batch_req_") and line["response"]["request_id"]
        assert body["object"] == "chat.completion" and body["model"] == "gpt-test"
        text = body["choices"][0]["message"]["content"]
        assert text.startswith("[synthetic answer from the speceval emulator; model=gpt-test]")
        assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
        assert text == respond("gpt-test", prompts[index])  # the answer to the input its custom id names
    assert len({line["response"]["body"]["choices"][0]["message"]["content"] for line in output}) == 12
    [error] = errors
    assert error["custom_id"] == "r12" and error["response"]["status_code"] == 400
    assert "[[emulator:error]]" in error["response"]["body"]["error"]["message"]
    assert error["response"]["body"]["error"]["type"] == "invalid_request_error"


def test_answers_are_deterministic_across_batches(emu: Emulator) -> None:
    with openai_client(emu) as client:
        first, second = run_batch(client, ["same prompt"]), run_batch(client, ["same prompt"])
        texts = [
            parse_jsonl(client.files.content(b.output_file_id).text)[0]["response"]["body"]["choices"][0]["message"][
                "content"
            ]
            for b in (first, second)
        ]
    assert texts[0] == texts[1]


def test_files_list_retrieve_delete_and_batches_list_paging(emu: Emulator) -> None:
    with openai_client(emu) as client:
        ids = [run_batch(client, [f"p{i}"]).id for i in range(3)]
        page = client.batches.list(limit=2)
        assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more is True
        assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # auto-paging follows `after`
        files = client.files.list(purpose="batch")
        assert len(files.data) == 3 and all(f.purpose == "batch" for f in files.data)
        assert len(client.files.list(purpose="batch_output").data) == 3
        target = files.data[0].id
        assert client.files.retrieve(target).id == target
        deleted = client.files.delete(target)
        assert deleted.deleted is True and deleted.id == target
        with pytest.raises(openai.NotFoundError) as caught:
            client.files.retrieve(target)
    assert caught.value.body["message"] == f"No such File object: {target}"  # type: ignore[index]


def test_bad_input_file_fails_validation_with_line_numbers(emu: Emulator) -> None:
    good = json.loads(openai_lines(["x"]).decode())
    lines = [
        json.dumps(good),
        json.dumps(good),  # duplicate custom_id
        "{not json",
        json.dumps({**good, "custom_id": "r9", "url": "/v1/embeddings"}),
        json.dumps({"custom_id": "r8", "method": "POST", "url": "/v1/chat/completions", "body": {}}),
    ]
    with openai_client(emu) as client:
        uploaded = client.files.create(file=("bad.jsonl", "\n".join(lines).encode()), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        final = wait_until(lambda: client.batches.retrieve(batch.id), lambda b: b.status in TERMINAL)
    assert final.status == "failed" and final.failed_at and final.output_file_id is None
    assert final.errors is not None
    codes = {(e.code, e.line) for e in final.errors.data}
    assert codes == {
        ("duplicate_custom_id", 2),
        ("invalid_json_line", 3),
        ("mismatched_endpoint", 4),
        ("missing_required_parameter", 5),
    }


def test_create_parameter_errors_and_auth(emu: Emulator) -> None:
    with openai_client(emu, max_retries=0) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines(["x"])), purpose="batch")
        with pytest.raises(openai.BadRequestError) as caught:
            client.batches.create(
                input_file_id=uploaded.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata={f"k{i}": "v" for i in range(17)},
            )
        assert caught.value.body["param"] == "metadata"  # type: ignore[index]
        with pytest.raises(openai.BadRequestError):
            client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="48h")  # type: ignore[arg-type]
        with pytest.raises(openai.NotFoundError):
            client.batches.create(
                input_file_id="file-missing", endpoint="/v1/chat/completions", completion_window="24h"
            )
        with pytest.raises(openai.NotFoundError) as missing:
            client.batches.retrieve("batch_nope")
        assert missing.value.body["message"] == "No batch found with id 'batch_nope'."  # type: ignore[index]
    status, headers, body = raw("GET", f"{emu.openai_base_url}/batches")
    assert status == 401 and json.loads(body)["error"]["type"] == "invalid_request_error"
    status, _, body = raw("GET", f"{emu.openai_base_url}/nothing/here", headers={"Authorization": f"Bearer {KEY}"})
    assert status == 404
    assert json.loads(body) == {
        "error": {
            "message": "Invalid URL (GET /v1/nothing/here)",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_cancel_goes_through_cancelling_to_cancelled_with_cancelled_lines() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=2.0)) as emu, openai_client(emu) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines([f"q{i}" for i in range(6)])), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        cancelling = client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        final = wait_until(lambda: client.batches.retrieve(batch.id), lambda b: b.status in TERMINAL)
        assert final.status == "cancelled" and final.cancelled_at is not None and final.output_file_id is None
        lines = parse_jsonl(client.files.content(final.error_file_id).text)
        with pytest.raises(openai.ConflictError):
            client.with_options(max_retries=0).batches.cancel(batch.id)
    assert sorted(line["custom_id"] for line in lines) == [f"r{i}" for i in range(6)]
    assert all(line["response"] is None and line["error"]["code"] == "batch_cancelled" for line in lines)


def test_expiry_keeps_partial_output_and_reports_the_rest() -> None:
    faults = FaultConfig(turnaround_seconds=0.1, expire_jobs=True, complete_fraction_on_expiry=0.5)
    with Emulator(faults=faults) as emu, openai_client(emu) as client:
        final = run_batch(client, [f"q{i}" for i in range(8)])
        output = parse_jsonl(client.files.content(final.output_file_id).text)
        errors = parse_jsonl(client.files.content(final.error_file_id).text)
    assert final.status == "expired" and final.expired_at is not None and final.completed_at is None
    assert len(output) == 4 and len(errors) == 4
    assert {line["custom_id"] for line in output} | {line["custom_id"] for line in errors} == {
        f"r{i}" for i in range(8)
    }
    assert all(line["response"] is None and line["error"]["code"] == "batch_expired" for line in errors)
    assert "completion window expired" in errors[0]["error"]["message"]


def test_fail_validation_fault() -> None:
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, fail_validation=True)) as emu,
        openai_client(emu) as client,
    ):
        final = run_batch(client, ["fine"])
    assert final.status == "failed" and final.errors is not None and final.errors.data[0].message
    assert final.output_file_id is None and final.error_file_id is None


def test_error_rate_drop_and_duplicate_faults() -> None:
    prompts = [f"q{i}" for i in range(40)]
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, error_rate=0.25)) as emu, openai_client(emu) as client:
        final = run_batch(client, prompts)
        errors = parse_jsonl(client.files.content(final.error_file_id).text)
    assert 0 < len(errors) < 40 and final.request_counts is not None
    assert final.request_counts.failed == len(errors)
    assert all(
        e["response"]["status_code"] == 500 and e["response"]["body"]["error"]["type"] == "server_error" for e in errors
    )

    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, drop_rate=0.25, duplicate_rate=0.25)) as emu,
        openai_client(emu) as client,
    ):
        final = run_batch(client, prompts)
        output = parse_jsonl(client.files.content(final.output_file_id).text)
    ids = [line["custom_id"] for line in output]
    assert final.request_counts is not None and final.request_counts.completed == 40  # the drop is silent
    assert len(set(ids)) < 40, "some results should be missing"
    duplicated = {i for i in ids if ids.count(i) == 2}
    assert duplicated, "some results should be emitted twice"
    for custom_id in duplicated:
        copies = [line for line in output if line["custom_id"] == custom_id]
        assert copies[0] == copies[1]


def test_http_faults_are_counted_down_and_carry_retry_headers(emu: Emulator) -> None:
    emu.faults = FaultConfig(
        turnaround_seconds=0.05,
        http_faults=[
            HttpFault(
                provider="openai",
                method="GET",
                path_regex=r"/batches/[^/]+$",
                status=429,
                count=2,
                retry_after_ms=5,
                retry_after=0.005,
            ),
        ],
    )
    with openai_client(emu, max_retries=0) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines(["x"])), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        with pytest.raises(openai.RateLimitError) as caught:
            client.batches.retrieve(batch.id)
        assert caught.value.response.headers["retry-after-ms"] == "5"
        assert caught.value.response.headers["retry-after"] == "0.005"
        assert caught.value.body["code"] == "rate_limit_exceeded"  # type: ignore[index]
        # The SDK's own retry (honouring retry-after-ms) gets through once the count is used up.
        assert client.with_options(max_retries=2).batches.retrieve(batch.id).id == batch.id
    assert emu.stats.requests["GET /openai/v1/batches/{batch_id}"] == 3


def test_create_delay_stores_the_job_before_answering() -> None:
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, create_delay_seconds=0.5)) as emu,
        openai_client(emu, max_retries=0, timeout=0.2) as client,
    ):
        uploaded = client.files.create(file=("in.jsonl", openai_lines(["x"])), purpose="batch")
        with pytest.raises(openai.APITimeoutError):
            client.batches.create(
                input_file_id=uploaded.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata={"speceval_key": "k"},
            )
        jobs = emu.list_jobs("openai")
        assert emu.stats.batches_created["openai"] == 1
    assert len(jobs) == 1 and jobs[0].metadata == {"speceval_key": "k"} and jobs[0].request_count == 1


def test_truncated_first_download_and_archived_results() -> None:
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, truncate_downloads=True)) as emu,
        openai_client(emu) as client,
    ):
        final = run_batch(client, [f"q{i}" for i in range(4)])
        first = client.files.content(final.output_file_id).content
        second = client.files.content(final.output_file_id).content
        emu.faults = FaultConfig(archive_results=True)
        with pytest.raises(openai.NotFoundError):
            client.files.content(final.output_file_id)
    assert len(first) == len(second) // 2 and second.startswith(first)
    assert len(parse_jsonl(second.decode())) == 4


def test_request_limit_and_enqueued_token_limit() -> None:
    faults = FaultConfig(turnaround_seconds=0.05, max_requests_per_batch=3, create_limit_error_count=1)
    with Emulator(faults=faults) as emu, openai_client(emu) as client:
        limited = run_batch(client, ["a", "b"])
        too_big = run_batch(client, ["a", "b", "c", "d"])
        fine = run_batch(client, ["a", "b", "c"])
    assert limited.status == "failed" and limited.errors is not None
    assert limited.errors.data[0].code == "token_limit_exceeded"
    assert "Enqueued token limit reached" in (limited.errors.data[0].message or "")
    assert too_big.status == "failed" and too_big.errors is not None
    assert too_big.errors.data[0].code == "too_many_requests"
    assert fine.status == "completed"


def test_unshuffled_results_keep_input_order() -> None:
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, shuffle_results=False)) as emu,
        openai_client(emu) as client,
    ):
        final = run_batch(client, [f"q{i}" for i in range(6)])
        output = parse_jsonl(client.files.content(final.output_file_id).text)
    assert [line["custom_id"] for line in output] == [f"r{i}" for i in range(6)]


def test_responses_endpoint_and_expires_after(emu: Emulator) -> None:
    with openai_client(emu) as client:
        uploaded = client.files.create(
            file=("in.jsonl", openai_lines(["hi"], endpoint="/v1/responses")),
            purpose="batch",
            expires_after={"anchor": "created_at", "seconds": 3600},
        )
        assert uploaded.expires_at == uploaded.created_at + 3600
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/responses", completion_window="24h")
        final = wait_until(lambda: client.batches.retrieve(batch.id), lambda b: b.status in TERMINAL)
        [line] = parse_jsonl(client.files.content(final.output_file_id).text)
    body = line["response"]["body"]
    assert body["object"] == "response" and body["output"][0]["content"][0]["type"] == "output_text"
    assert body["output"][0]["content"][0]["text"].startswith("[synthetic answer")


def test_progress_is_visible_while_running() -> None:
    # A turnaround far longer than the wait: the first partial count must show up long before the batch ends.
    with Emulator(faults=FaultConfig(turnaround_seconds=20.0)) as emu, openai_client(emu) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines([f"q{i}" for i in range(50)])), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        middle = wait_until(
            lambda: client.batches.retrieve(batch.id),
            lambda b: b.request_counts is not None and b.request_counts.completed > 0,
            timeout=20.0,
        )
    assert middle.status == "in_progress" and middle.request_counts is not None
    assert 0 < middle.request_counts.completed < 50 and middle.output_file_id is None

"""The Anthropic Message Batches API of the emulator, driven through the real `anthropic` SDK."""

from __future__ import annotations

import json

import anthropic
import pytest

from speceval.emulator import Emulator, FaultConfig, HttpFault

from .helpers import KEY, MARKER, anthropic_client, anthropic_requests, parse_jsonl, raw, wait_until


def run_batch(client: anthropic.Anthropic, prompts: list[str]) -> anthropic.types.messages.MessageBatch:
    batch = client.messages.batches.create(requests=anthropic_requests(prompts))  # type: ignore[arg-type]
    return wait_until(lambda: client.messages.batches.retrieve(batch.id), lambda b: b.processing_status == "ended")


def test_full_workflow_maps_ids_back_and_shuffles() -> None:
    prompts = [f"question {i}" for i in range(10)] + [f"bad {MARKER}"]
    # The batch must still be in progress when its results are asked for: at the fixture's 0.1 s turnaround a loaded
    # machine (load 12 on 2 cores) ended it first and the results came back. One second.
    with Emulator(faults=FaultConfig(turnaround_seconds=1.0)) as emu, anthropic_client(emu) as client:
        created = client.messages.batches.create(requests=anthropic_requests(prompts))  # type: ignore[arg-type]
        assert created.id.startswith("msgbatch_") and created.processing_status == "in_progress"
        assert created.results_url is None and created.ended_at is None
        assert created.request_counts.processing == 11 and created.request_counts.succeeded == 0
        with pytest.raises(anthropic.AnthropicError):
            list(client.messages.batches.results(created.id))  # no results_url before the end
        final = wait_until(
            lambda: client.messages.batches.retrieve(created.id), lambda b: b.processing_status == "ended"
        )
        counts = final.request_counts
        assert (counts.processing, counts.succeeded, counts.errored, counts.canceled, counts.expired) == (
            0,
            10,
            1,
            0,
            0,
        )
        assert final.ended_at is not None and final.created_at < final.ended_at
        assert final.results_url == f"{emu.anthropic_base_url}/v1/messages/batches/{final.id}/results"
        results = list(client.messages.batches.results(final.id))
    ids = [r.custom_id for r in results]
    assert sorted(ids) == sorted(f"r{i}" for i in range(11)) and ids != sorted(ids, key=lambda s: int(s[1:]))
    by_id = {r.custom_id: r.result for r in results}
    bad = by_id.pop("r10")
    assert bad.type == "errored" and bad.error.error.type == "invalid_request_error"  # type: ignore[union-attr]
    assert MARKER in bad.error.error.message  # type: ignore[union-attr]
    for result in by_id.values():
        assert result.type == "succeeded"
        message = result.message  # type: ignore[union-attr]
        assert message.role == "assistant" and message.model == "claude-test"
        assert message.content[0].type == "text"
        assert message.content[0].text.startswith("[synthetic answer from the speceval emulator; model=claude-test]")
        assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_create_validation_errors(emu: Emulator) -> None:
    cases = [
        ([], "at least 1 item"),
        ([{"custom_id": "has space", "params": {"model": "m", "max_tokens": 5, "messages": []}}], "custom_id"),
        ([{"custom_id": "x" * 65, "params": {"model": "m", "max_tokens": 5, "messages": []}}], "custom_id"),
        (anthropic_requests(["a"]) * 2, "Duplicate custom_id"),
        ([{"custom_id": "a", "params": {"model": "m", "messages": []}}], "max_tokens"),
    ]
    with anthropic_client(emu, max_retries=0) as client:
        for requests, fragment in cases:
            with pytest.raises(anthropic.BadRequestError) as caught:
                client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
            body = caught.value.body
            assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
            assert fragment in body["error"]["message"]  # type: ignore[index]
            assert body["request_id"].startswith("req_")  # type: ignore[index]
    assert emu.stats.batches_created["anthropic"] == 0


def test_auth_accepts_x_api_key_and_bearer_and_rejects_none(emu: Emulator) -> None:
    url = f"{emu.anthropic_base_url}/v1/messages/batches"
    assert raw("GET", url, headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"})[0] == 200
    assert raw("GET", url, headers={"Authorization": f"Bearer {KEY}", "anthropic-version": "2026-10-21"})[0] == 200
    status, headers, body = raw("GET", url)
    assert status == 401 and json.loads(body)["error"]["type"] == "authentication_error"
    assert headers["request-id"].startswith("req_")
    status, _, body = raw("GET", f"{emu.anthropic_base_url}/v1/nope", headers={"x-api-key": KEY})
    assert status == 404 and json.loads(body)["error"]["type"] == "not_found_error"


def test_cancel_then_delete_and_delete_refused_while_running() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=2.0)) as emu, anthropic_client(emu, max_retries=0) as client:
        batch = client.messages.batches.create(requests=anthropic_requests(["a", "b", "c"]))  # type: ignore[arg-type]
        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.delete(batch.id)
        canceling = client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
        final = wait_until(lambda: client.messages.batches.retrieve(batch.id), lambda b: b.processing_status == "ended")
        assert final.request_counts.canceled == 3
        results = list(client.messages.batches.results(batch.id))
        assert sorted((r.custom_id, r.result.type) for r in results) == [
            ("r0", "canceled"),
            ("r1", "canceled"),
            ("r2", "canceled"),
        ]
        deleted = client.messages.batches.delete(batch.id)
        assert deleted.id == batch.id and deleted.type == "message_batch_deleted"
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve(batch.id)
        assert [j.deleted for j in emu.list_jobs("anthropic")] == [True]


def test_expiry_gives_expired_results() -> None:
    faults = FaultConfig(turnaround_seconds=0.05, expire_jobs=True, complete_fraction_on_expiry=0.25)
    with Emulator(faults=faults) as emu, anthropic_client(emu) as client:
        final = run_batch(client, [f"q{i}" for i in range(8)])
        types = sorted(r.result.type for r in client.messages.batches.results(final.id))
    assert final.request_counts.expired == 6 and final.request_counts.succeeded == 2
    assert types == ["expired"] * 6 + ["succeeded"] * 2


def test_list_pages_newest_first_with_after_and_before(emu: Emulator) -> None:
    with anthropic_client(emu) as client:
        ids = [
            client.messages.batches.create(requests=anthropic_requests([f"p{i}"])).id  # type: ignore[arg-type]
            for i in range(5)
        ]
        newest_first = ids[::-1]
        page = client.messages.batches.list(limit=2)
        assert [b.id for b in page.data] == newest_first[:2] and page.has_more
        assert [b.id for b in client.messages.batches.list(limit=2)] == newest_first  # auto-paging
        older = client.messages.batches.list(limit=2, after_id=newest_first[1])
        assert [b.id for b in older.data] == newest_first[2:4]
        newer = client.messages.batches.list(limit=2, before_id=newest_first[3])
        assert [b.id for b in newer.data] == newest_first[1:3] and newer.has_more


def test_faults_error_rate_rate_limit_http_fault_and_archive() -> None:
    faults = FaultConfig(
        turnaround_seconds=0.05,
        error_rate=0.5,
        create_limit_error_count=1,
        http_faults=[HttpFault(provider="anthropic", method="GET", path_regex=r"/results$", status=529, count=1)],
    )
    with Emulator(faults=faults) as emu, anthropic_client(emu, max_retries=0) as client:
        with pytest.raises(anthropic.RateLimitError) as limited:
            client.messages.batches.create(requests=anthropic_requests(["a"]))  # type: ignore[arg-type]
        assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        final = run_batch(client, [f"q{i}" for i in range(20)])
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            list(client.messages.batches.results(final.id))
        assert overloaded.value.status_code == 529
        assert overloaded.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
        results = list(client.messages.batches.results(final.id))
        errored = [r for r in results if r.result.type == "errored"]
        assert 0 < len(errored) < 20 and final.request_counts.errored == len(errored)
        assert all(r.result.error.error.type == "api_error" for r in errored)  # type: ignore[union-attr]
        emu.faults = FaultConfig(archive_results=True)
        assert client.messages.batches.retrieve(final.id).archived_at is not None
        with pytest.raises(anthropic.NotFoundError):
            list(client.messages.batches.results(final.id))


def test_results_stream_has_no_blank_lines_and_truncation_fault() -> None:
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.05, truncate_downloads=True)) as emu,
        anthropic_client(emu) as client,
    ):
        final = run_batch(client, [f"q{i}" for i in range(6)])
        assert final.results_url is not None
        headers = {"x-api-key": KEY}
        first = raw("GET", final.results_url, headers=headers)[2]
        second = raw("GET", final.results_url, headers=headers)[2]
    assert len(first) == len(second) // 2
    assert len(parse_jsonl(second.decode())) == 6


def test_cancel_after_the_end_is_refused_and_changes_nothing() -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, anthropic_client(emu, max_retries=0) as client:
        final = run_batch(client, ["a"])
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.batches.cancel(final.id)
        assert "has already ended and cannot be canceled" in str(caught.value)
        after = client.messages.batches.retrieve(final.id)
    assert after.cancel_initiated_at is None and after.request_counts.succeeded == 1

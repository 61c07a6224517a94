"""The anthropic SDK and speceval's Anthropic paths against a Message Batches server written from the public docs.

`anthropic_server.py` shares no code with `speceval.emulator`: what passes here follows the documented wire format.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_inputs, write_spec
from tests.independent.anthropic_server import IndependentAnthropicServer, last_user_text

MODEL = "claude-haiku-4-5-20251001"
SLOW_MODEL = "claude-sonnet-4-6"


def _params(text: str, model: str = MODEL, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}


def _client(server: IndependentAnthropicServer) -> Any:
    """An SDK client (typed loosely: the tests read result unions the type checker cannot narrow on `.type`)."""
    return anthropic.Anthropic(api_key="sk-test", base_url=server.base_url, max_retries=0)


def _until_ended(client: Any, batch_id: str, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        batch = client.messages.batches.retrieve(batch_id)
        if batch.processing_status == "ended":
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} did not end: {batch}"
        time.sleep(0.05)


def _answer(params: dict[str, Any]) -> str:
    return "answer to " + last_user_text(params)


def _poison(custom_id: str | None, params: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    if last_user_text(params) == "POISON":
        return 400, {"type": "invalid_request_error", "message": "Invalid prompt: POISON"}
    return None


# ---- the SDK on its own ------------------------------------------------------------------------------------------


def test_create_then_retrieve_until_ended_then_results_gives_every_custom_id_once() -> None:
    with IndependentAnthropicServer(answer=_answer, turnaround=0.3) as server:
        client = _client(server)
        ids = [f"req-{i}" for i in range(8)]
        created = client.messages.batches.create(requests=[{"custom_id": c, "params": _params(c)} for c in ids])
        assert created.id.startswith("msgbatch_") and created.type == "message_batch"
        assert created.processing_status == "in_progress" and created.results_url is None
        assert created.request_counts.processing == 8 and created.request_counts.succeeded == 0
        assert (created.expires_at - created.created_at).total_seconds() == 24 * 3600
        with pytest.raises(anthropic.AnthropicError, match="results_url"):
            client.messages.batches.results(created.id)  # no results before the batch ends

        ended = _until_ended(client, created.id)
        assert ended.ended_at is not None and ended.cancel_initiated_at is None and ended.archived_at is None
        assert ended.request_counts.succeeded == 8 and ended.request_counts.processing == 0
        assert ended.results_url == f"{server.base_url}/v1/messages/batches/{created.id}/results"
        results = list(client.messages.batches.results(created.id))
        assert sorted(r.custom_id for r in results) == sorted(ids)
        assert [r.custom_id for r in results] != ids  # shuffled, as the docs allow
        for r in results:
            assert r.result.type == "succeeded"
            message = r.result.message
            assert message.content[0].text == "answer to " + r.custom_id
            assert message.role == "assistant" and message.model == MODEL and message.stop_reason == "end_turn"
            assert message.usage.service_tier == "batch"
        assert [(b, c) for b, c, _ in server.requests] == [(created.id, c) for c in ids]
        assert set(server.api_versions) == {"2026-10-21"}


def test_list_pages_newest_first_two_at_a_time() -> None:
    with IndependentAnthropicServer() as server:
        client = _client(server)
        made = [
            client.messages.batches.create(requests=[{"custom_id": "only", "params": _params(str(i))}]).id
            for i in range(5)
        ]
        first = client.messages.batches.list(limit=2)
        assert [b.id for b in first.data] == made[::-1][:2] and first.has_more
        assert first.first_id == made[4] and first.last_id == made[3]
        pages = [[b.id for b in page.data] for page in first.iter_pages()]
        assert pages == [made[4:2:-1], made[2:0:-1], made[:1]]
        assert [b.id for b in client.messages.batches.list(limit=2)] == made[::-1]  # auto-paging
        before = client.messages.batches.list(limit=2, before_id=made[1])
        assert [b.id for b in before.data] == [made[3], made[2]] and before.has_more


def test_cancel_ends_the_batch_with_unfinished_requests_canceled() -> None:
    turnaround = {MODEL: 0.0, SLOW_MODEL: 60.0}
    with IndependentAnthropicServer(answer=_answer, turnaround=turnaround) as server:
        client = _client(server)
        requests = [
            {"custom_id": "fast", "params": _params("fast")},
            {"custom_id": "slow-1", "params": _params("slow-1", SLOW_MODEL)},
            {"custom_id": "slow-2", "params": _params("slow-2", SLOW_MODEL)},
        ]
        batch = client.messages.batches.create(requests=requests)
        assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
        canceling = client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
        ended = _until_ended(client, batch.id)
        assert ended.request_counts.canceled == 2 and ended.request_counts.succeeded == 1
        assert ended.cancel_initiated_at == canceling.cancel_initiated_at
        kinds = {r.custom_id: r.result.type for r in client.messages.batches.results(batch.id)}
        assert kinds == {"fast": "succeeded", "slow-1": "canceled", "slow-2": "canceled"}


def test_delete_refuses_a_batch_in_progress_and_works_once_it_has_ended() -> None:
    with IndependentAnthropicServer(turnaround=60.0) as server:
        client = _client(server)
        batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": _params("a")}])
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.batches.delete(batch.id)
        body: Any = refused.value.body
        assert body["error"]["type"] == "invalid_request_error"
        assert refused.value.response.headers.get("request-id")
        client.messages.batches.cancel(batch.id)
        _until_ended(client, batch.id)
        deleted = client.messages.batches.delete(batch.id)
        assert deleted.id == batch.id and deleted.type == "message_batch_deleted"
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve(batch.id)
        assert list(client.messages.batches.list()) == []


def test_a_sampling_parameter_is_refused_per_line_in_a_batch_and_with_400_live() -> None:
    with IndependentAnthropicServer() as server:
        client = _client(server)
        requests = [
            {"custom_id": "plain", "params": _params("x")},
            {"custom_id": "hot", "params": _params("x", temperature=0.7)},
            {"custom_id": "nucleus", "params": _params("x", top_p=0.9)},
        ]
        batch = client.messages.batches.create(requests=requests)  # params are validated asynchronously
        _until_ended(client, batch.id)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert results["plain"].type == "succeeded"
        for custom_id in ("hot", "nucleus"):
            assert results[custom_id].type == "errored"
            assert results[custom_id].error.error.type == "invalid_request_error"
            assert "Extra inputs are not permitted" in results[custom_id].error.error.message
        with pytest.raises(anthropic.BadRequestError, match="Extra inputs are not permitted"):
            client.messages.create(
                model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}], extra_body={"temperature": 0.0}
            )


@pytest.mark.parametrize(
    "requests, fragment",
    [
        ([], "at least 1"),
        ([{"custom_id": "has space", "params": _params("x")}], "custom_id"),
        ([{"custom_id": "x" * 65, "params": _params("x")}], "custom_id"),
        ([{"custom_id": "same", "params": _params("x")}, {"custom_id": "same", "params": _params("y")}], "duplicate"),
    ],
)
def test_create_refuses_what_the_docs_forbid(requests: list[dict[str, Any]], fragment: str) -> None:
    with IndependentAnthropicServer() as server:
        with pytest.raises(anthropic.BadRequestError, match=fragment) as refused:
            _client(server).messages.batches.create(requests=requests)
        body: Any = refused.value.body
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert server.batches == [] and server.requests == []


def test_no_key_is_401_and_either_auth_header_is_accepted() -> None:
    with IndependentAnthropicServer() as server:
        url = f"{server.base_url}/v1/messages/batches"
        with pytest.raises(urllib.error.HTTPError) as unauthorised:
            urllib.request.urlopen(urllib.request.Request(url), timeout=5)
        assert unauthorised.value.code == 401 and unauthorised.value.headers["request-id"]
        assert json.loads(unauthorised.value.read())["error"]["type"] == "authentication_error"
        for header in ({"x-api-key": "sk-test"}, {"Authorization": "Bearer sk-test"}):
            with urllib.request.urlopen(urllib.request.Request(url, headers=header), timeout=5) as ok:
                assert json.loads(ok.read()) == {"data": [], "has_more": False, "first_id": None, "last_id": None}


def test_models_list_and_a_live_message() -> None:
    with IndependentAnthropicServer(answer=_answer, models=["claude-haiku-4-5-20251001", "claude-opus-4-6"]) as server:
        client = _client(server)
        assert [m.id for m in client.models.list()] == ["claude-haiku-4-5-20251001", "claude-opus-4-6"]
        raw = client.messages.with_raw_response.create(
            model=MODEL, max_tokens=8, system="Be brief.", messages=[{"role": "user", "content": "hello"}]
        )
        message = raw.parse()
        assert message.content[0].text == "answer to hello" and message.usage.service_tier == "standard"
        assert raw.headers["request-id"] and raw.headers["anthropic-ratelimit-requests-limit"]
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(
                model="claude-nonexistent", max_tokens=8, messages=[{"role": "user", "content": "hello"}]
            )
        assert server.live_requests[0]["system"] == "Be brief."


# ---- speceval's own request lines and commands -------------------------------------------------------------------


def test_speceval_request_lines_are_valid_batch_requests() -> None:
    """Structured output, a conversation, a cache-shaped judge prompt and a system prompt, as speceval writes them."""
    from speceval.judging.prompts import MARKER_PREFIX, SHARED_PREFIX_END, TemplateId, shared_prefix_length
    from speceval.providers.anthropic_batch import AnthropicBatchedModel
    from speceval.wire.params import GenerationParams
    from speceval.wire.prompt import Message, Prompt

    cache_shaped = next(t for t in TemplateId if t.cache_shaped)
    judge_prompt = f"{MARKER_PREFIX}{cache_shaped.value}\nshared rubric\n{SHARED_PREFIX_END}abc>>>\nthe input"
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer"}},
        "required": ["score"],
        "additionalProperties": False,
    }
    prompts: dict[str, Any] = {
        "plain": "a plain prompt",
        "schema": Prompt.user("rate this", response_schema=schema),
        "conversation": Prompt((Message("user", "first"), Message("assistant", "reply"), Message("user", "second"))),
        # The judge pipeline hands a cache-shaped prompt over with its shared prefix's length.
        "judge": Prompt.user(judge_prompt, response_schema=schema, cache_prefix=shared_prefix_length(judge_prompt)),
    }

    def answer(params: dict[str, Any]) -> str:
        return json.dumps({"score": 3}) if "output_config" in params else _answer(params)

    with IndependentAnthropicServer(answer=answer) as server:
        model = AnthropicBatchedModel(
            MODEL,
            GenerationParams(temperature=0.5, system_prompt="Be brief."),
            api_key=TEST_KEY,
            base_url=server.base_url,
        )
        lines = [json.loads(model.format_request(cid, prompt)) for cid, prompt in prompts.items()]
        client = _client(server)
        batch = client.messages.batches.create(requests=lines)
        _until_ended(client, batch.id)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    failures = {cid: r.error.error.message for cid, r in results.items() if r.type != "succeeded"}
    assert failures == {}
    assert json.loads(results["schema"].message.content[0].text) == {"score": 3}
    assert results["conversation"].message.content[0].text == "answer to second"
    sent = {cid: params for _, cid, params in server.requests}
    assert all("temperature" not in params for params in sent.values())
    assert sent["schema"]["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert sent["judge"]["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert all(params["system"] == "Be brief." for params in sent.values())


def _run(
    tmp_path: Path, server: IndependentAnthropicServer, inputs: dict[str, list[str]], model: str, *extra: str
) -> Any:
    spec = write_spec(tmp_path / "spec.jsonl", list(inputs))
    inputs_dir = write_inputs(tmp_path / "inputs", inputs)
    env = cli_env(ANTHROPIC_API_KEY=TEST_KEY, ANTHROPIC_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
    return run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs_dir),
            "--model-name",
            model,
            "--output-base-dir",
            str(tmp_path / "out"),
            *extra,
        ],
        env,
        timeout=60,
    )


def _generation(
    tmp_path: Path, server: IndependentAnthropicServer, inputs: dict[str, list[str]], *extra: str
) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    done = _run(tmp_path, server, inputs, MODEL, *extra)
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path / "out")
    return done, {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}


def _assert_answers_on_their_inputs(records: dict[str, list[dict[str, Any]]]) -> None:
    for records_of_statement in records.values():
        for record in records_of_statement:
            if record["input_text"] == "POISON":
                assert record["outcome"] == "errored" and record["output_text"] is None
                assert record["error"]["code"] == "invalid_request_error"
                assert "Invalid prompt: POISON" in record["error"]["message"]
            else:
                assert record["outcome"] == "succeeded", record
                assert record["output_text"] == "answer to " + record["input_text"]


def test_generation_every_answer_lands_on_its_own_input_and_a_failed_line_is_typed(tmp_path: Path) -> None:
    inputs = {"alpha": [f"a{i}" for i in range(7)], "beta": ["b0", "POISON", "b2"]}
    with IndependentAnthropicServer(answer=_answer, fail=_poison, turnaround=0.3) as server:
        _, records = _generation(tmp_path, server, inputs, "--batch-size", "4")
        batches, sent = server.batches, server.requests
    assert len(batches) == 3 and all(b["processing_status"] == "ended" for b in batches)
    assert sum(b["request_counts"]["errored"] for b in batches) == 1
    assert sum(b["request_counts"]["succeeded"] for b in batches) == 9
    assert len(sent) == 10 and all("temperature" not in params for _, _, params in sent)
    assert ("GET", "/v1/models?limit=1000") in server.calls  # the model name was checked against the list
    assert {last_user_text(params) for _, _, params in sent} == {*inputs["alpha"], *inputs["beta"]}
    _assert_answers_on_their_inputs(records)
    assert [r["input_text"] for r in records["alpha"]] == inputs["alpha"]
    assert [r["input_text"] for r in records["beta"]] == inputs["beta"]


def test_generation_resubmits_the_requests_of_an_expired_batch(tmp_path: Path) -> None:
    inputs = {"alpha": ["a0", "a1", "a2"]}
    with IndependentAnthropicServer(answer=_answer, turnaround=1.0) as server:
        stop = threading.Event()

        def expire_the_first_batch() -> None:
            while not stop.is_set():
                if server.batches:
                    server.expire(server.batches[0]["id"])
                    return
                time.sleep(0.02)

        watcher = threading.Thread(target=expire_the_first_batch, daemon=True)
        watcher.start()
        try:
            _, records = _generation(tmp_path, server, inputs)
        finally:
            stop.set()
            watcher.join(timeout=5)
        batches = server.batches
    assert len(batches) == 2
    assert batches[0]["request_counts"]["expired"] == 3 and batches[1]["request_counts"]["succeeded"] == 3
    _assert_answers_on_their_inputs(records)
    assert all(r["attempts"] == 2 for r in records["alpha"])


def test_realtime_generation_every_answer_lands_on_its_own_input(tmp_path: Path) -> None:
    inputs = {"alpha": ["a0", "a1", "a2"], "beta": ["b0", "POISON"]}
    with IndependentAnthropicServer(answer=_answer, fail=_poison) as server:
        _, records = _generation(tmp_path, server, inputs, "--realtime")
        live = server.live_requests
    assert sorted(last_user_text(body) for body in live) == sorted(["a0", "a1", "a2", "b0", "POISON"])
    assert all("temperature" not in body for body in live)
    _assert_answers_on_their_inputs(records)


def test_generation_refuses_a_misspelt_model_the_list_does_not_serve(tmp_path: Path) -> None:
    with IndependentAnthropicServer() as server:
        done = _run(tmp_path, server, {"alpha": ["a0"]}, "claude-haiku-4-5-20241021")
        calls = server.calls
    assert done.returncode != 0 and "claude-haiku-4-5-20251001" in done.stderr
    assert calls == [("GET", "/v1/models?limit=1000")]  # nothing was submitted

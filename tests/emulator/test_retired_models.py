"""A retired model is answered as its provider answers it (Anthropic: "Requests to retired models will fail"):
the Messages API with a 404 `not_found_error` naming the model, a Message Batch with that error on each of its
requests (an outcome the engine records and does not retry), and the model list without it."""

from __future__ import annotations

from datetime import date

import anthropic
import pytest

from speceval.emulator import Emulator, FaultConfig
from speceval.emulator.models import retired, served
from speceval.providers.anthropic_batch import AnthropicBatchedModel
from speceval.realtime.clients import AnthropicMessagesModel
from speceval.realtime.model import CallFailed
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.providers.test_prompt_wire import run_one_job

RETIRED = "claude-sonnet-4-20250514"  # retired 2026-06-15
CURRENT = "claude-sonnet-4-6"


def test_retirement_follows_the_calendar() -> None:
    assert not retired("anthropic", "claude-sonnet-4-5", date(2026, 11, 29))
    assert retired("anthropic", "claude-sonnet-4-5", date(2026, 11, 30))  # the SDK's end of life
    assert "claude-sonnet-4-5" in served("anthropic", date(2026, 11, 29))
    assert "claude-sonnet-4-5" not in served("anthropic", date(2026, 12, 1))
    assert not retired("anthropic", CURRENT, date(2030, 1, 1))


def test_the_messages_api_answers_a_retired_model_with_not_found() -> None:
    with Emulator() as emu:
        client = anthropic.Anthropic(api_key=TEST_KEY, base_url=emu.anthropic_base_url, max_retries=0)
        with pytest.raises(anthropic.NotFoundError) as refused:
            client.messages.create(model=RETIRED, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
        listed = [m.id for m in client.models.list()]
        model = AnthropicMessagesModel(
            RETIRED,
            GenerationParams(temperature=None, max_tokens=16),
            api_key=TEST_KEY,
            base_url=emu.anthropic_base_url,
        )
        with pytest.raises(CallFailed) as failed:
            model.complete("hi")
        current = AnthropicMessagesModel(
            CURRENT,
            GenerationParams(temperature=None, max_tokens=16),
            api_key=TEST_KEY,
            base_url=emu.anthropic_base_url,
        ).complete("hi")
    assert refused.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": f"model: {RETIRED}"},
        "request_id": refused.value.body["request_id"],
    }
    assert failed.value.error.code == "not_found_error" and not failed.value.error.retryable
    assert RETIRED not in listed and CURRENT in listed
    assert current.text is not None


def test_a_batch_request_for_a_retired_model_errors_with_not_found(tmp_path) -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        params = GenerationParams(temperature=None, max_tokens=16)
        old = AnthropicBatchedModel(RETIRED, params, api_key=TEST_KEY, base_url=emu.anthropic_base_url)
        new = AnthropicBatchedModel(CURRENT, params, api_key=TEST_KEY, base_url=emu.anthropic_base_url)
        lines = old.format_request("c0ffee000000-0", "hi") + new.format_request("c0ffee000000-1", "hi")
        outcomes = run_one_job(old, tmp_path, lines, 2)
    refused, answered = outcomes["c0ffee000000-0"], outcomes["c0ffee000000-1"]
    assert refused.outcome == "errored" and refused.error is not None
    assert (refused.error.code, refused.error.message, refused.error.retryable) == (
        "not_found_error",
        f"model: {RETIRED}",
        False,
    )
    assert answered.outcome == "succeeded"

"""One wire format per provider: the same prompts and settings reach the provider as the same bodies, whichever
engine carries them.

Each test runs the same requests through the batch engine (a provider batch job) and the realtime engine (one call
each) against the emulator, through a recording proxy, and compares what arrived at the HTTP boundary: the request
lines inside the uploaded file (OpenAI, Gemini) or the batch create call (Anthropic), and the bodies of the
realtime calls. The OpenAI-compatible dialect is compared between a realtime call and an exchange file written
for `vllm run-batch`. Nothing here calls the wire builders itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.store import RunStore
from speceval.emulator import Emulator, FaultConfig
from speceval.judging.prompts import MARKER_PREFIX, SHARED_PREFIX_END, TemplateId, shared_prefix_length
from speceval.pipelines.exchange import export_requests
from speceval.providers.anthropic_batch import AnthropicBatchedModel
from speceval.providers.gemini_batch import GeminiBatchedModel
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.realtime import RealtimeEngine, RealtimeOptions
from speceval.realtime.clients import AnthropicMessagesModel, GeminiGenerateModel, OpenAIChatModel
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import Message, Prompt, PromptItem
from tests.conformance.common import jsonl, multipart_fields
from tests.conformance.recorder import RecordingProxy
from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_inputs, write_spec

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["score"],
    "additionalProperties": False,
}
PARAMS = GenerationParams(temperature=0.3, max_tokens=77, system_prompt="Answer briefly.")
_TEMPLATE = next(t for t in TemplateId if t.cache_shaped)
JUDGE_PROMPT = f"{MARKER_PREFIX}{_TEMPLATE.value}\nthe rubric every request shares\n{SHARED_PREFIX_END}n0>>>\nq"


def requests() -> list[PromptItem]:
    """A plain prompt, a conversation asking for a schema, and a judge prompt with its shared prefix marked."""
    conversation = Prompt(
        (Message("user", "first"), Message("assistant", "an answer"), Message("user", "second")), SCHEMA, "verdict"
    )
    judged = Prompt.user(JUDGE_PROMPT, cache_prefix=shared_prefix_length(JUDGE_PROMPT))
    assert judged.cache_prefix > 0
    return [
        PromptItem(statement_id="s", original_index=0, input_text="What is 2+2?"),
        PromptItem(statement_id="s", original_index=1, input_text="second", prompt=conversation),
        PromptItem(statement_id="s", original_index=2, input_text=JUDGE_PROMPT, prompt=judged),
    ]


def run_both(tmp_path: Path, batch_model: Any, realtime_model: Any) -> None:
    """The same requests through the batch engine and the realtime engine, every one answered."""
    options = EngineOptions(poll_interval=0.05, max_attempts=1)
    batch = BatchEngine(batch_model, RunStore(tmp_path / "batch"), options).run(requests())
    realtime = RealtimeEngine(realtime_model, RunStore(tmp_path / "realtime"), options).run(requests())
    assert batch.finished and realtime.finished
    assert batch.outcome_counts == realtime.outcome_counts == {"succeeded": 3}


def canonical(bodies: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for body in bodies)


def realtime_options() -> RealtimeOptions:
    return RealtimeOptions(retry_initial_delay=0.05, request_timeout=10.0)


def test_openai_batch_lines_and_realtime_calls_carry_the_same_bodies(tmp_path: Path) -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, RecordingProxy(emu.base_url) as proxy:
        url = f"{proxy.base_url}/openai/v1"
        run_both(
            tmp_path,
            OpenAIBatchedModel("gpt-4.1-mini", PARAMS, api_key=TEST_KEY, base_url=url),
            OpenAIChatModel("gpt-4.1-mini", PARAMS, realtime_options(), api_key=TEST_KEY, base_url=url),
        )
    (upload,) = proxy.matching("POST", "/openai/v1/files")
    batch = [line["body"] for line in jsonl(multipart_fields(upload)["file"])]
    realtime = [e.request_json() for e in proxy.matching("POST", "/openai/v1/chat/completions")]
    assert len(batch) == len(realtime) == 3
    assert canonical(batch) == canonical(realtime)
    # The fields that used to differ between the paths are on both.
    assert sum("prompt_cache_key" in body for body in realtime) == 1
    assert sum("response_format" in body for body in realtime) == 1
    assert all(body["max_completion_tokens"] == 77 and body["temperature"] == 0.3 for body in realtime)


def test_anthropic_batch_requests_and_realtime_calls_carry_the_same_bodies(tmp_path: Path) -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, RecordingProxy(emu.base_url) as proxy:
        url = f"{proxy.base_url}/anthropic"
        name = "claude-opus-4-6"
        run_both(
            tmp_path,
            AnthropicBatchedModel(name, PARAMS, api_key=TEST_KEY, base_url=url),
            AnthropicMessagesModel(name, PARAMS, realtime_options(), api_key=TEST_KEY, base_url=url),
        )
    (create,) = proxy.matching("POST", "/anthropic/v1/messages/batches")
    batch = [request["params"] for request in create.request_json()["requests"]]
    calls = [e for e in proxy.matching("POST", "/anthropic/v1/messages") if e.route.endswith("/messages")]
    realtime = [e.request_json() for e in calls]
    assert len(batch) == len(realtime) == 3
    assert canonical(batch) == canonical(realtime)
    marked = [body for body in realtime if isinstance(body["messages"][0]["content"], list)]
    assert len(marked) == 1 and marked[0]["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert all("output_config" in body for body in realtime if len(body["messages"]) == 3)


def snake(value: Any) -> Any:
    """Keys in snake_case: the JSON API reads both spellings, and google-genai sends camelCase."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): snake(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snake(item) for item in value]
    return value


def test_gemini_batch_lines_and_realtime_calls_carry_the_same_requests(tmp_path: Path) -> None:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu, RecordingProxy(emu.base_url) as proxy:
        url = f"{proxy.base_url}/gemini"
        name = "gemini-2.5-flash"
        run_both(
            tmp_path,
            GeminiBatchedModel(name, PARAMS, api_key=TEST_KEY, base_url=url),
            GeminiGenerateModel(name, PARAMS, realtime_options(), api_key=TEST_KEY, base_url=url),
        )
    chunks = [e for e in proxy.matching("POST", "/gemini/upload/v1beta/files") if "upload_id" in e.path]
    batch = [snake(line["request"]) for e in chunks for line in jsonl(e.request_body)]
    realtime = [snake(e.request_json()) for e in proxy.matching("POST", "/gemini/", ":generateContent")]
    assert len(batch) == len(realtime) == 3
    assert canonical(batch) == canonical(realtime)
    assert all(body["generation_config"]["max_output_tokens"] == 77 for body in realtime)


@pytest.mark.parametrize("prompt", ["What is 2+2?", JUDGE_PROMPT])
def test_an_exchange_file_and_a_compatible_server_call_carry_the_same_body(tmp_path: Path, prompt: str) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s"])
    inputs = write_inputs(tmp_path / "inputs", {"s": [prompt]})
    planned = run_generation(
        [
            "--org",
            "openai-compatible",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--dry-run",
            "--model-name",
            "org/open-model",
            "--temperature",
            "0.3",
            "--max-tokens",
            "77",
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--output-base-dir",
            str(tmp_path / "out"),
        ],
        cli_env(),
    )
    assert planned.returncode == 0, planned.stderr
    export_requests(only_run_dir(tmp_path / "out"), tmp_path / "requests.jsonl")
    (exported,) = jsonl((tmp_path / "requests.jsonl").read_bytes())
    with Emulator() as emu, RecordingProxy(emu.base_url) as proxy:
        model = OpenAIChatModel(
            "org/open-model",
            GenerationParams(temperature=0.3, max_tokens=77),
            realtime_options(),
            api_key=TEST_KEY,
            base_url=f"{proxy.base_url}/openai/v1",
            org="openai-compatible",
        )
        assert model.complete(prompt).text is not None
    (call,) = proxy.matching("POST", "/openai/v1/chat/completions")
    assert exported["body"] == call.request_json()
    assert "max_tokens" in exported["body"] and "prompt_cache_key" not in exported["body"]

"""The Ray processor configurations `--org ray` builds (no cluster, no GPU needed), and its flag checks."""

from __future__ import annotations

import pytest

from speceval.errors import ConfigError
from speceval.raydata.model import outcome_of
from speceval.raydata.settings import RaySettings, processor_config
from tests.raydata import NEEDS_RAY

pytestmark = NEEDS_RAY


def test_vllm_engines_configuration() -> None:
    settings = RaySettings(
        vllm=True, tensor_parallel_size=4, replicas=2, engine_args={"max_model_len": 8192}, batch_size=32
    )
    config = processor_config(settings, "meta-llama/Llama-3.1-70B-Instruct", headers={})
    assert type(config).__name__ == "vLLMEngineProcessorConfig"
    assert config.model_source == "meta-llama/Llama-3.1-70B-Instruct"
    assert config.engine_kwargs["tensor_parallel_size"] == 4 and config.engine_kwargs["max_model_len"] == 8192
    assert config.concurrency == 2 and config.batch_size == 32
    assert config.should_continue_on_error is True  # a row the engine cannot answer is an outcome, not a crash


def test_http_configuration_and_pacing() -> None:
    settings = RaySettings(base_url="http://gpu-node:8000/v1/", max_concurrency=8, rpm=600)
    config = processor_config(settings, "m", headers={"Authorization": "Bearer k"})
    assert type(config).__name__ == "HttpRequestProcessorConfig"
    assert config.url == "http://gpu-node:8000/v1/chat/completions"
    # 600 per minute = 10 per second over 8 workers: Ray paces whole requests per second per worker.
    assert (config.concurrency, config.qps) == (8, 1)
    assert RaySettings(base_url="u", max_concurrency=4, rpm=6000).pacing() == (4, 25)
    assert RaySettings(base_url="u", max_concurrency=4).pacing() == (4, None)


def test_endpoint_or_engines_exactly_one() -> None:
    with pytest.raises(ConfigError, match="--base-url"):
        RaySettings().check()
    with pytest.raises(ConfigError, match="either --base-url"):
        RaySettings(base_url="http://x/v1", vllm=True).check()


def test_answers_read_by_the_openai_rules() -> None:
    ok = outcome_of(
        "c-1", '{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3}, "error": null}'
    )
    assert ok.outcome.value == "succeeded" and ok.output_text == "hi" and ok.usage and ok.usage.input_tokens == 3
    refused = outcome_of(
        "c-2", '{"error": {"message": "bad", "type": "invalid_request_error", "code": "x"}, "choices": null}'
    )
    assert refused.outcome.value == "errored" and refused.error and refused.error.retryable is False
    vllm_error = outcome_of(
        "c-3", '{"object": "error", "message": "overloaded", "type": "ServiceUnavailable", "code": 503}'
    )
    assert vllm_error.error and vllm_error.error.status_code == 503 and vllm_error.error.retryable is True

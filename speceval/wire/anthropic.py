"""The Anthropic Messages wire format: the parameters of one prompt, and the answer in a `message` object.

One builder for both transports: Message Batches request lines (`speceval.providers.anthropic_batch`, where these
parameters are a request's `params`) and realtime `POST /v1/messages` calls (`speceval.realtime.clients`).

Sampling: API version `2026-10-21` (what the anthropic SDK 2.x sends; the SDK removed the `temperature`, `top_p`
and `top_k` arguments with it) refuses those fields with a 400 ("Extra inputs are not permitted") at any value,
1.0 included, and models after Claude Opus 4.6 refuse them under the older `2023-06-01` too. In a Message Batch
that refusal comes back per request when the batch ends: every line `errored` a day later. So the temperature is
sent only when the installed SDK speaks the older version; otherwise it is left out, once with a warning that
says so, and the model samples at its own default.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from speceval.wire.params import GenerationParams, with_run_schema
from speceval.wire.prompt import PromptLike
from speceval.wire.reply import Reply, no_text
from speceval.wire.usage import Tokens, count

logger = logging.getLogger(__name__)

SAMPLING_REFUSED_FROM = "2026-10-21"
"""The first `anthropic-version` whose Messages API refuses sampling parameters."""


def sdk_api_version() -> str:
    """The `anthropic-version` header the installed SDK sends."""
    from anthropic import _constants  # lazy: `import speceval` must work without every vendor SDK

    return str(getattr(_constants, "ANTHROPIC_API_VERSION", "2023-06-01"))


def sampling_fields(params: GenerationParams, model_name: str, api_version: str | None = None) -> dict[str, Any]:
    """The sampling fields of a request for `model_name` (`{"temperature": t}` or nothing), warning when a
    temperature that was asked for cannot be sent."""
    if params.temperature is None:
        return {}
    version = api_version or sdk_api_version()
    if version < SAMPLING_REFUSED_FROM:  # ISO dates compare as strings
        return {"temperature": params.temperature}
    logger.warning(
        "%s: temperature %g is not sent: the Anthropic API version %s (anthropic SDK 2.x) refuses sampling "
        "parameters, so the model samples at its default temperature. Runs of this model that differ only in "
        "temperature send the same requests.",
        model_name,
        params.temperature,
        version,
    )
    return {}


def user_content(text: str, cache_prefix: int = 0) -> str | list[dict[str, Any]]:
    """A user message's content: the text, or, when its first `cache_prefix` characters are shared with other
    requests, two text blocks with a cache breakpoint after the shared one.

    Later requests of a judge statement then read the shared part at a tenth of the input price, in Message
    Batches too. Below the model's minimum cacheable length (1,024-4,096 tokens) the provider ignores the mark; it
    is never an error.
    """
    if cache_prefix == 0:
        return text
    return [
        {"type": "text", "text": text[:cache_prefix], "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": text[cache_prefix:]},
    ]


def messages(prompt: PromptLike) -> list[dict[str, Any]]:
    """`messages`; the first user message carries the prompt's cache breakpoint, if it has one."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    marked = False
    shaped: list[dict[str, Any]] = []
    for message in prompt.messages:
        content: str | list[dict[str, Any]] = message.content
        if message.role == "user" and not marked:
            content, marked = user_content(message.content, prompt.cache_prefix), True
        shaped.append({"role": message.role, "content": content})
    return shaped


def output_config(prompt: PromptLike) -> dict[str, Any] | None:
    """`output_config` for a schema request (`format: json_schema`), else None."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return None
    return {"format": {"type": "json_schema", "schema": prompt.response_schema}}


def message_params(
    model_name: str, params: GenerationParams, prompt: PromptLike, sampling: Mapping[str, Any]
) -> dict[str, Any]:
    """The Messages API parameters of one prompt; `sampling` is `sampling_fields(params, model_name)`, worked
    out once per model (it may warn)."""
    prompt = with_run_schema(prompt, params)
    body: dict[str, Any] = {"model": model_name, "max_tokens": params.max_tokens, "messages": messages(prompt)}
    schema_config = output_config(prompt)
    if schema_config is not None:
        body["output_config"] = schema_config
    body.update(sampling)
    if params.system_prompt:
        body["system"] = params.system_prompt
    return body


def message_tokens(usage_data: Any) -> Tokens:
    """A message's `usage` object (dict) as `Tokens`.

    Anthropic's `input_tokens` are only those after the last cache breakpoint; cache reads and writes are
    reported apart. `Tokens.input_tokens` counts all of them, as the other providers' counts do.
    """
    usage_data = usage_data if isinstance(usage_data, Mapping) else {}
    cache_read = count(usage_data, "cache_read_input_tokens")
    cache_write = count(usage_data, "cache_creation_input_tokens")
    return Tokens(
        count(usage_data, "input_tokens") + cache_read + cache_write,
        count(usage_data, "output_tokens"),
        cache_read,
        cache_write,
    )


def parse_message(message: Mapping[str, Any]) -> Reply:
    """The answer of a `message` object: its text blocks joined, and the usage."""
    usage = message_tokens(message.get("usage"))
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"]
    if not blocks:
        stop = message.get("stop_reason")
        return no_text(usage, "empty_response", f"the model returned no text content (stop_reason {stop})")
    return Reply("".join(str(b.get("text") or "") for b in blocks), usage)

"""The OpenAI chat-completions wire format: the request body of one prompt, and the answer in a response body.

One builder for every transport: Batch API request lines (`speceval.providers.openai_batch`), realtime calls to
OpenAI or any OpenAI-compatible server (`speceval.realtime.clients`), Ray Data LLM payloads and exchange files
for `vllm run-batch` (`speceval.raydata.settings`, `speceval.pipelines.exchange`). Two dialects differ in two fields:
OpenAI's own API takes `max_completion_tokens` (it renamed `max_tokens` for its models) and a `prompt_cache_key`;
compatible servers (vLLM, SGLang, Together, Ollama) read `max_tokens` and have no use for a cache key (vLLM caches
prefixes by itself).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from speceval.wire.params import GenerationParams, with_run_schema
from speceval.wire.prompt import PromptLike, shared_prefix
from speceval.wire.reply import Reply, no_text
from speceval.wire.usage import Tokens

ENDPOINT: Final = "/v1/chat/completions"
"""The Batch API's `url` of a chat-completions request line."""


def chat_messages(system_prompt: str | None, prompt: PromptLike) -> list[dict[str, Any]]:
    """Chat-completions `messages` (also what OpenAI-compatible servers read)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    if isinstance(prompt, str):
        messages.append({"role": "user", "content": prompt})
    else:
        messages.extend({"role": m.role, "content": m.content} for m in prompt.messages)
    return messages


def response_format(prompt: PromptLike) -> dict[str, Any] | None:
    """`response_format` for a schema request (strict JSON schema), else None."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": prompt.schema_name, "strict": True, "schema": prompt.response_schema},
    }


def prompt_cache_key(prefix: str) -> str:
    """A short stable name for a shared prefix (OpenAI's `prompt_cache_key`: at most 64 characters)."""
    return "speceval-" + hashlib.sha256(prefix.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chat_body(
    model_name: str, params: GenerationParams, prompt: PromptLike, *, compatible: bool = False
) -> dict[str, Any]:
    """The chat-completions body of one prompt: OpenAI's own dialect, or a compatible server's (`compatible`)."""
    if params.response_schema is not None:
        prompt = with_run_schema(prompt, params)
    body: dict[str, Any] = {
        "model": model_name,
        "messages": chat_messages(params.system_prompt, prompt),
        "max_tokens" if compatible else "max_completion_tokens": params.max_tokens,
    }
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if isinstance(prompt, str):
        return body  # a plain user message (most requests of a run) asks for no schema and shares no prefix
    schema_format = response_format(prompt)
    if schema_format is not None:
        body["response_format"] = schema_format
    shared = None if compatible else shared_prefix(prompt)
    if shared is not None:
        # Prefixes of 1,024+ tokens are cached automatically; a key per shared prefix (one per statement and judge
        # run) routes a statement's requests to the same cache.
        body["prompt_cache_key"] = prompt_cache_key(shared)
    return body


def chat_tokens(usage_data: Any) -> Tokens:
    """A chat completion's `usage` object (dict) as `Tokens`; `prompt_tokens` include the cached ones."""
    usage_data = _mapping(usage_data)
    # Plain gets, not `count`: this runs once per result line.
    return Tokens(
        int(usage_data.get("prompt_tokens") or 0),
        int(usage_data.get("completion_tokens") or 0),
        int(_mapping(usage_data.get("prompt_tokens_details")).get("cached_tokens") or 0),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one. A `dict` (what json.loads gives) is recognised in C first: the
    `Mapping` ABC's check runs Python code, and this runs twice per result line."""
    if isinstance(value, dict):
        return value
    return value if isinstance(value, Mapping) else {}


def parse_completion(body: Mapping[str, Any]) -> Reply:
    """The answer of a chat completion body: the first choice's content (or its refusal), and the usage."""
    usage = chat_tokens(body.get("usage"))
    try:
        message = body["choices"][0]["message"]
        text = message.get("content")
        if text is None:
            text = message.get("refusal")
    except (KeyError, IndexError, TypeError, AttributeError):
        return no_text(usage, "malformed_response", "HTTP 200 response has no choices[0].message")
    if text is None:
        return no_text(usage, "empty_response", "the model returned no text content")
    if not isinstance(text, str):
        return no_text(usage, "malformed_response", "message content is not a string")
    return Reply(text, usage)

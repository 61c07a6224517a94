"""The Gemini generateContent wire format: the request of one prompt, and the answer in a response body.

One builder for every transport: Gemini Batch API request lines (`speceval.providers.gemini_batch`), Vertex AI
batch rows (`speceval.providers.vertex_batch`, the same request plus labels) and realtime `generateContent` calls
(`speceval.realtime.clients`, which hand these fields to google-genai). Field names are the API's snake_case
spelling; the JSON API reads snake_case and lowerCamelCase alike (proto3 JSON), and google-genai sends camelCase.
Responses are read in either spelling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from speceval.wire.params import GenerationParams, with_run_schema
from speceval.wire.prompt import PromptLike, as_prompt
from speceval.wire.reply import Reply, no_text
from speceval.wire.usage import Tokens, count

API_VERSION = "v1beta"
"""The Gemini Developer API version speceval calls, whatever the SDK's default. Batch mode and the Files API are
documented under v1beta only (https://ai.google.dev/api/batch-mode, https://ai.google.dev/api/files), and v1's
published GenerateContentRequest (googleapis google/ai/generativelanguage/v1) has no `system_instruction` and no
response MIME type or schema, both of which speceval sends. google-genai 1.x defaulted to v1beta; 3.x defaults to v1."""


def contents(prompt: PromptLike) -> list[dict[str, Any]]:
    """`contents`: roles `user` and `model` (Gemini's name for the assistant)."""
    if isinstance(prompt, str):
        return [{"role": "user", "parts": [{"text": prompt}]}]
    return [
        {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
        for m in as_prompt(prompt).messages
    ]


def schema_config(prompt: PromptLike) -> dict[str, Any]:
    """The `generation_config` fields of a schema request (JSON MIME type + `response_json_schema`), else {}."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return {}
    return {"response_mime_type": "application/json", "response_json_schema": prompt.response_schema}


def generate_content_request(params: GenerationParams, prompt: PromptLike) -> dict[str, Any]:
    """The GenerateContentRequest of one prompt (without `model`, which the URL or the batch job names).

    A prompt's cacheable prefix needs no mark: Gemini caches common prefixes implicitly.
    """
    prompt = with_run_schema(prompt, params)
    generation_config: dict[str, Any] = {"max_output_tokens": params.max_tokens}
    if params.temperature is not None:
        generation_config["temperature"] = params.temperature
    generation_config.update(schema_config(prompt))
    request: dict[str, Any] = {"contents": contents(prompt), "generation_config": generation_config}
    if params.system_prompt:
        request["system_instruction"] = {"parts": [{"text": params.system_prompt}]}
    return request


def content_tokens(usage_data: Any) -> Tokens:
    """A GenerateContentResponse's `usageMetadata` (camelCase or snake_case keys) as `Tokens`."""
    data = usage_data if isinstance(usage_data, Mapping) else {}
    return Tokens(
        count(data, "promptTokenCount", "prompt_token_count"),  # cached included
        # Thinking tokens are billed as output, as OpenAI's completion_tokens include reasoning tokens.
        count(data, "candidatesTokenCount", "candidates_token_count")
        + count(data, "thoughtsTokenCount", "thoughts_token_count"),
        count(data, "cachedContentTokenCount", "cached_content_token_count"),
    )


def parse_response(response: Mapping[str, Any]) -> Reply:
    """The answer of a GenerateContentResponse: its text, or why there is none (blocked prompt, no text)."""
    usage = content_tokens(field(response, "usageMetadata", "usage_metadata"))
    candidates = response.get("candidates") or []
    if not candidates:
        feedback = field(response, "promptFeedback", "prompt_feedback") or {}
        reason = field(feedback, "blockReason", "block_reason")
        detail = field(feedback, "blockReasonMessage", "block_reason_message")
        message = f"the prompt was blocked ({reason})" if reason else "the response has no candidates"
        code = "prompt_blocked" if reason else "empty_response"
        return no_text(usage, code, f"{message}: {detail}" if detail else message)
    candidate = candidates[0] if isinstance(candidates[0], dict) else {}
    parts = (candidate.get("content") or {}).get("parts") or []
    # Thought summaries (parts flagged `thought`) are not the answer.
    texts = [
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]
    if not texts:
        finish = field(candidate, "finishReason", "finish_reason")
        return no_text(usage, "empty_response", f"the model returned no text (finish reason {finish})")
    return Reply("".join(texts), usage)


def field(data: Any, camel: str, snake: str) -> Any:
    """A response field in either spelling (None when `data` is not an object or has neither)."""
    if not isinstance(data, Mapping):
        return None
    value = data.get(camel)
    return value if value is not None else data.get(snake)

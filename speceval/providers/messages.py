"""A request's messages and answer schema in each provider's wire format, for batch, realtime and Ray alike.

A plain `str` prompt is one user message (the common, fast case); a `Prompt` carries a conversation so far and
optionally a JSON schema the answer must conform to (see `speceval.batch.prompt`). Each function here is the one
place its provider's shape is written, so the batch adapters, the realtime clients and the Ray payloads cannot
drift apart.
"""

from __future__ import annotations

from typing import Any

from speceval.batch.model import GenerationParams
from speceval.batch.prompt import Prompt, PromptLike, as_prompt


def with_run_schema(prompt: PromptLike, params: GenerationParams) -> PromptLike:
    """`prompt` asking for the run's answer schema (`params.response_schema`) when it does not ask for its own."""
    if params.response_schema is None or (isinstance(prompt, Prompt) and prompt.response_schema is not None):
        return prompt
    base = as_prompt(prompt)
    return Prompt(base.messages, params.response_schema, params.schema_name)


def first_user_text(prompt: PromptLike) -> str:
    """The first user message's text (where a judge prompt's shared, cacheable prefix lives)."""
    if isinstance(prompt, str):
        return prompt
    return next((m.content for m in prompt.messages if m.role == "user"), prompt.last_user_text)


def chat_messages(system_prompt: str | None, prompt: PromptLike) -> list[dict[str, Any]]:
    """OpenAI chat-completions `messages` (also what OpenAI-compatible servers read)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    if isinstance(prompt, str):
        messages.append({"role": "user", "content": prompt})
    else:
        messages.extend({"role": m.role, "content": m.content} for m in prompt.messages)
    return messages


def chat_response_format(prompt: PromptLike) -> dict[str, Any] | None:
    """OpenAI `response_format` for a schema request (strict JSON schema), else None."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": prompt.schema_name, "strict": True, "schema": prompt.response_schema},
    }


def anthropic_messages(prompt: PromptLike, content_of: Any) -> list[dict[str, Any]]:
    """Anthropic `messages`; `content_of(text)` shapes a user message's content (cache breakpoints)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": content_of(prompt)}]
    return [
        {"role": m.role, "content": content_of(m.content) if m.role == "user" else m.content}
        for m in prompt.messages
    ]


def anthropic_output_config(prompt: PromptLike) -> dict[str, Any] | None:
    """Anthropic `output_config` for a schema request (`format: json_schema`), else None."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return None
    return {"format": {"type": "json_schema", "schema": prompt.response_schema}}


def gemini_contents(prompt: PromptLike) -> list[dict[str, Any]]:
    """Gemini `contents`: roles `user` and `model` (Gemini's name for the assistant)."""
    messages = as_prompt(prompt).messages
    return [{"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]} for m in messages]


def gemini_schema_config(prompt: PromptLike) -> dict[str, Any]:
    """The `generation_config` fields of a schema request (JSON MIME type + `response_json_schema`), else {}."""
    if isinstance(prompt, str) or prompt.response_schema is None:
        return {}
    return {"response_mime_type": "application/json", "response_json_schema": prompt.response_schema}


def is_structured(prompt: PromptLike) -> bool:
    """Whether the request asks for an answer conforming to a JSON schema."""
    return isinstance(prompt, Prompt) and prompt.response_schema is not None

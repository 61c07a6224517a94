"""Realtime adapters, one per API shape: OpenAI chat completions, Anthropic messages, Gemini generateContent.

The OpenAI shape also serves Together, vLLM, SGLang and Ollama (`--base-url`). Every SDK client is built with
`max_retries=0` (Gemini's never retries by default): retries belong to the engine, whose limiter must see every
429 to slow all workers down. Wire reference: each provider's chat API documentation.
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

from speceval.batch.model import GenerationParams
from speceval.batch.prompt import PromptLike
from speceval.batch.records import RequestError
from speceval.providers.anthropic_batch import message_usage, user_content
from speceval.providers.anthropic_sampling import sampling_fields
from speceval.providers.credentials import resolve_api_key
from speceval.providers.gemini_batch import content_usage
from speceval.providers.http_errors import transport_errors
from speceval.providers.messages import (
    anthropic_messages,
    anthropic_output_config,
    chat_messages,
    chat_response_format,
    gemini_contents,
    gemini_schema_config,
    with_run_schema,
)
from speceval.providers.openai_batch import chat_usage
from speceval.realtime.headers import parse_limit_headers
from speceval.realtime.model import (
    CallFailed,
    Completion,
    RealtimeModel,
    RealtimeOptions,
    http_failure,
)
from speceval.redaction import redact

_NO_TEXT = RequestError(code="empty_response", message="the model returned no text content")


class OpenAIChatModel(RealtimeModel):
    """`POST {base_url}/chat/completions` through the openai SDK: OpenAI itself or any compatible server."""

    provider: ClassVar[str] = "openai"

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        options: RealtimeOptions | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        org: str = "openai",
        key_env: tuple[str, ...] = ("OPENAI_API_KEY",),
        key_required: bool = True,
    ):
        """Build the client; `base_url` None lets the SDK honour `OPENAI_BASE_URL` as it documents."""
        super().__init__(model_name, params, options)
        import openai  # lazy: `import speceval` must work without every vendor SDK

        self.org = org
        self._openai = openai
        key = resolve_api_key(org, api_key, key_env, required=key_required)
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=self.options.request_timeout, max_retries=0
        )
        # OpenAI renamed max_tokens for its own models; compatible servers (vLLM, Together, Ollama) know max_tokens.
        self._max_tokens_field = "max_completion_tokens" if org == "openai" else "max_tokens"

    def complete(self, prompt: PromptLike) -> Completion:
        """One chat completion."""
        prompt = with_run_schema(prompt, self.params)
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": chat_messages(self.params.system_prompt, prompt),
            self._max_tokens_field: self.params.max_tokens,
        }
        if self.params.temperature is not None:
            body["temperature"] = self.params.temperature
        response_format = chat_response_format(prompt)
        if response_format is not None:
            body["response_format"] = response_format
        try:
            raw = self._client.chat.completions.with_raw_response.create(**body)
            completion = raw.parse()
        except self._openai.APIStatusError as exc:
            code = _openai_code(exc.body)
            raise http_failure(exc.status_code, exc.message, code, exc.response.headers) from None
        except self._openai.APIConnectionError as exc:  # includes timeouts
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        headers = parse_limit_headers(raw.headers)
        usage = chat_usage(completion.usage.model_dump()) if completion.usage is not None else None
        if not completion.choices:
            error = RequestError(code="malformed_response", message="HTTP 200 response has no choices")
            return Completion(None, usage, headers, error)
        message = completion.choices[0].message
        text = message.content if message.content is not None else message.refusal
        return Completion(text, usage, headers, None if text is not None else _NO_TEXT)


def _openai_code(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            value = error.get("code") or error.get("type")
            return str(value) if value else None
    return None


class AnthropicMessagesModel(RealtimeModel):
    """`POST /v1/messages` through the anthropic SDK."""

    provider: ClassVar[str] = "anthropic"

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        options: RealtimeOptions | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
    ):
        """Build the client (key from `ANTHROPIC_API_KEY` unless given)."""
        super().__init__(model_name, params, options)
        import anthropic

        self._anthropic = anthropic
        key = resolve_api_key("Anthropic", api_key, ("ANTHROPIC_API_KEY",))
        self._client = anthropic.Anthropic(
            api_key=key, base_url=base_url, timeout=self.options.request_timeout, max_retries=0
        )
        self._sampling = sampling_fields(self.params, self.model_name)

    def complete(self, prompt: PromptLike) -> Completion:
        """One message."""
        prompt = with_run_schema(prompt, self.params)
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": self.params.max_tokens,
            "messages": anthropic_messages(prompt, user_content),
        }
        output_config = anthropic_output_config(prompt)
        if output_config is not None:
            body["output_config"] = output_config
        if self.params.system_prompt:
            body["system"] = self.params.system_prompt
        if self._sampling:  # only with an SDK older than 2.x, whose API version takes it
            body["extra_body"] = dict(self._sampling)
        try:
            raw = self._client.messages.with_raw_response.create(**body)
            message = raw.parse()
        except self._anthropic.APIStatusError as exc:
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            code = str(error.get("type")) if isinstance(error, dict) and error.get("type") else None
            raise http_failure(exc.status_code, exc.message, code, exc.response.headers) from None
        except self._anthropic.APIConnectionError as exc:
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        usage = message_usage(message.usage.model_dump())
        texts = [block.text for block in message.content if getattr(block, "type", None) == "text"]
        text = "".join(texts) if texts else None
        return Completion(text, usage, parse_limit_headers(raw.headers), None if text is not None else _NO_TEXT)


class GeminiGenerateModel(RealtimeModel):
    """`POST /{ver}/models/{model}:generateContent` through google-genai (Gemini Developer API)."""

    provider: ClassVar[str] = "google"

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        options: RealtimeOptions | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
    ):
        """Build the client (key from `GOOGLE_API_KEY` or `GEMINI_API_KEY` unless given)."""
        super().__init__(model_name, params, options)
        from google import genai
        from google.genai import errors, types

        self._errors = errors
        self._types = types
        key = resolve_api_key("Gemini", api_key, ("GOOGLE_API_KEY", "GEMINI_API_KEY"))
        # The SDK has no default timeout: a hung server would hang a worker forever.
        http_options = types.HttpOptions(base_url=base_url, timeout=int(self.options.request_timeout * 1000))
        self._client = genai.Client(api_key=key, http_options=http_options)
        self._transport_errors = transport_errors()

    def complete(self, prompt: PromptLike) -> Completion:
        """One generateContent call."""
        prompt = with_run_schema(prompt, self.params)
        config = self._types.GenerateContentConfig(
            max_output_tokens=self.params.max_tokens,
            temperature=self.params.temperature,
            system_instruction=self.params.system_prompt,
            **gemini_schema_config(prompt),
        )
        contents: Any = prompt if isinstance(prompt, str) else gemini_contents(prompt)
        try:
            response = self._client.models.generate_content(model=self.model_name, contents=contents, config=config)
        except self._errors.APIError as exc:
            raise _gemini_failure(exc) from None
        except self._transport_errors as exc:
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        meta = response.usage_metadata
        usage = content_usage(meta.model_dump()) if meta is not None else None
        candidates = response.candidates or []
        if not candidates:
            feedback = response.prompt_feedback
            reason = str(feedback.block_reason) if feedback and feedback.block_reason else "no candidates"
            return Completion(
                None, usage, error=RequestError(code="blocked", message=f"the prompt was blocked: {reason}")
            )
        parts = (candidates[0].content.parts if candidates[0].content else None) or []
        texts = [part.text for part in parts if part.text is not None and not part.thought]
        text = "".join(texts) if texts else None
        return Completion(text, usage, error=None if text is not None else _NO_TEXT)


def _gemini_failure(exc: Any) -> CallFailed:
    """A google-genai APIError, with `RetryInfo.retryDelay` (Gemini's only retry hint) read from the body."""
    status = int(exc.code) if exc.code else None
    failure = http_failure(status, redact(str(exc.message or exc)), exc.status)
    details = exc.details.get("error", {}).get("details", []) if isinstance(exc.details, dict) else []
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = str(detail.get("retryDelay", "")).removesuffix("s")
            with contextlib.suppress(ValueError):
                failure.retry_after = max(0.0, float(delay))
    return failure

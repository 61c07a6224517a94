"""Realtime adapters, one per API shape: OpenAI chat completions, Anthropic messages, Gemini generateContent.

The OpenAI shape also serves Together, vLLM, SGLang and Ollama (`--base-url`). Every SDK client is built with
`max_retries=0` (Gemini's never retries by default): retries belong to the engine, whose limiter must see every
429 to slow all workers down. Request bodies and answers are read by `speceval.wire` (the same modules the batch
adapters use), so a realtime call sends what a batch line would.
"""

from __future__ import annotations

import contextlib
import json
from abc import abstractmethod
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, TypeVar

from speceval.batch.records import RequestError
from speceval.providers.credentials import KeyedAdapter
from speceval.providers.http_errors import transport_errors
from speceval.realtime.headers import parse_limit_headers
from speceval.realtime.model import (
    CallFailed,
    Completion,
    RealtimeModel,
    RealtimeOptions,
    http_failure,
)
from speceval.redaction import redact
from speceval.wire.anthropic import message_params, parse_message, sampling_fields
from speceval.wire.gemini import API_VERSION as GEMINI_API_VERSION
from speceval.wire.gemini import field, generate_content_request, parse_response
from speceval.wire.openai import chat_body, parse_completion
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import PromptLike
from speceval.wire.tls import genai_tls_options, sdk_client

C = TypeVar("C")


def _sdk(client: Callable[..., C], http_client: Any, key: str | None, base_url: str | None, timeout: float) -> C:
    """The SDK's client sending each call once (`max_retries=0`: the realtime engine decides what is retried)."""
    return sdk_client(client, http_client, api_key=key, base_url=base_url, timeout=timeout, max_retries=0)


# The keyword arguments of `messages.create` a body's fields are passed as (the rest go in `extra_body`).
_ANTHROPIC_ARGUMENTS = frozenset({"model", "max_tokens", "messages", "output_config", "system"})


class _KeyedRealtimeModel(KeyedAdapter, RealtimeModel):
    """A realtime adapter whose SDK takes an API key (`KeyedAdapter`): the key is resolved once, then `_connect`
    builds the subclass's client."""

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        options: RealtimeOptions | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        org: str | None = None,
        key_env: tuple[str, ...] | None = None,
        key_required: bool = True,
    ):
        """Resolve the key and build the client.

        Args:
            org / key_env: another host of the same API shape (e.g. `together`) and the variables of its key;
                None: the provider's own (`provider`, `key_env`).
            key_required: False for a server that serves without a key (vLLM, Ollama).
        """
        super().__init__(model_name, params, options)
        self.org = org or self.org
        self._base_url = base_url
        # Another host's missing key is named after that host (`together`), not after the API's owner.
        self._connect(self.resolved_key(api_key, label=org, key_env=key_env, required=key_required), base_url)

    def limiter_key(self) -> Hashable:
        """The endpoint this client calls: its class, host, model, base URL, tier and limits (never its key). An
        experiment builds one client per run (each variation's sampling settings), all calling one endpoint whose
        `rpm` is one limit: keyed by the object, each run had a limiter of its own, and four variations at rpm 60
        could send 240 a minute where the tier plan counted 60."""
        return (
            type(self).__name__,
            self.org,
            self.model_name,
            self._base_url,
            self.options.limits,
            self.options.service_tier,
        )

    @abstractmethod
    def _connect(self, key: str | None, base_url: str | None) -> None:
        """Build the SDK client (its retries off: the engine owns them)."""


class OpenAIChatModel(_KeyedRealtimeModel):
    """`POST {base_url}/chat/completions` through the openai SDK: OpenAI itself or any compatible server (`org`,
    `key_env`; `base_url` None lets the SDK honour `OPENAI_BASE_URL` as it documents)."""

    provider: ClassVar[str] = "openai"
    key_label: ClassVar[str] = "openai"
    key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    def _connect(self, key: str | None, base_url: str | None) -> None:
        import openai  # lazy: `import speceval` must work without every vendor SDK

        self._openai = openai
        self._client = _sdk(openai.OpenAI, openai.DefaultHttpxClient, key, base_url, self.options.request_timeout)
        # OpenAI's own dialect (max_completion_tokens, prompt_cache_key) for OpenAI; the compatible one for the rest.
        self._compatible = self.org != "openai"

    def complete(self, prompt: PromptLike, *, service_tier: str | None = None) -> Completion:
        """One chat completion."""
        body = chat_body(self.model_name, self.params, prompt, compatible=self._compatible)
        if service_tier is not None:
            body["service_tier"] = service_tier
        try:
            raw = self._client.chat.completions.with_raw_response.create(**body)
            answer = raw.http_response.json()
        except self._openai.APIStatusError as exc:
            code = _openai_code(exc.body)
            raise http_failure(exc.status_code, exc.message, code, exc.response.headers) from None
        except self._openai.APIConnectionError as exc:  # includes timeouts
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        answer = answer if isinstance(answer, dict) else {}
        return Completion.of(parse_completion(answer), parse_limit_headers(raw.headers), answer.get("service_tier"))


def _openai_code(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            value = error.get("code") or error.get("type")
            return str(value) if value else None
    return None


class AnthropicMessagesModel(_KeyedRealtimeModel):
    """`POST /v1/messages` through the anthropic SDK (key from `ANTHROPIC_API_KEY` unless given)."""

    provider: ClassVar[str] = "anthropic"
    key_label: ClassVar[str] = "Anthropic"
    key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)

    def _connect(self, key: str | None, base_url: str | None) -> None:
        import anthropic

        self._anthropic = anthropic
        self._client = _sdk(
            anthropic.Anthropic, anthropic.DefaultHttpxClient, key, base_url, self.options.request_timeout
        )
        self._sampling = sampling_fields(self.params, self.model_name)

    def complete(self, prompt: PromptLike, *, service_tier: str | None = None) -> Completion:
        """One message (Anthropic has no flex tier: a tier is refused before a run starts, so none arrives here)."""
        body = message_params(self.model_name, self.params, prompt, self._sampling)
        # Fields the installed SDK has no argument for (the temperature, for SDK 2.x) go as they are in the body.
        extra = {key: body.pop(key) for key in list(body) if key not in _ANTHROPIC_ARGUMENTS}
        try:
            raw = self._client.messages.with_raw_response.create(**body, extra_body=extra or None)
            answer = raw.http_response.json()
        except self._anthropic.APIStatusError as exc:
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            code = str(error.get("type")) if isinstance(error, dict) and error.get("type") else None
            raise http_failure(exc.status_code, exc.message, code, exc.response.headers) from None
        except self._anthropic.APIConnectionError as exc:
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        return Completion.of(
            parse_message(answer if isinstance(answer, dict) else {}), parse_limit_headers(raw.headers)
        )


class GeminiGenerateModel(_KeyedRealtimeModel):
    """`POST /{ver}/models/{model}:generateContent` through google-genai (Gemini Developer API; key from
    `GOOGLE_API_KEY` or `GEMINI_API_KEY` unless given)."""

    provider: ClassVar[str] = "google"
    key_label: ClassVar[str] = "Gemini"
    key_env: ClassVar[tuple[str, ...]] = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

    def _connect(self, key: str | None, base_url: str | None) -> None:
        from google import genai
        from google.genai import errors, types

        self._errors = errors
        self._types = types
        # The SDK has no default timeout: a hung server would hang a worker forever.
        http_options = types.HttpOptions(
            base_url=base_url,
            timeout=int(self.options.request_timeout * 1000),
            api_version=GEMINI_API_VERSION,  # system instruction and response schema are v1beta fields
            **genai_tls_options(),
        )
        self._client = genai.Client(api_key=key, http_options=http_options)
        self._transport_errors = transport_errors()
        self._config_fields = frozenset(types.GenerateContentConfig.model_fields)
        self._raw_body = "should_return_http_response" in self._config_fields

    def complete(self, prompt: PromptLike, *, service_tier: str | None = None) -> Completion:
        """One generateContent call: the wire module's request, handed to google-genai field by field."""
        request = generate_content_request(self.params, prompt)
        config: Any = dict(request["generation_config"])
        if "system_instruction" in request:
            config["system_instruction"] = request["system_instruction"]
        if service_tier is not None:
            if "service_tier" not in self._config_fields:
                raise CallFailed(
                    RequestError(
                        code="client_error",
                        message="the installed google-genai cannot ask for a service tier: upgrade it (pip install -U "
                        "google-genai) to send Gemini requests at flex",
                    )
                )
            config["service_tier"] = service_tier  # sent as the request's `serviceTier`
        if self._raw_body:
            # The body as Gemini sent it: google-genai's response type drops `usageMetadata.serviceTier`, the tier
            # that served the call, and the wire module reads REST JSON as it reads a batch job's result lines.
            config["should_return_http_response"] = True
        try:
            response = self._client.models.generate_content(
                model=self.model_name, contents=request["contents"], config=config
            )
        except self._errors.APIError as exc:
            raise _gemini_failure(exc) from None
        except self._transport_errors as exc:
            raise http_failure(None, f"{type(exc).__name__}: {exc}", "connection_error") from None
        raw = response.sdk_http_response.body if self._raw_body and response.sdk_http_response else None
        body = json.loads(raw) if raw else response.model_dump(mode="json", exclude_none=True)
        usage = field(body, "usageMetadata", "usage_metadata") or {}
        return Completion.of(parse_response(body), service_tier=field(usage, "serviceTier", "service_tier"))


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

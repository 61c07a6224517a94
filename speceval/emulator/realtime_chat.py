"""Realtime chat endpoints of the emulator, with rate limits (the providers' chat APIs and rate-limit headers:
docs/scale-out.md).

    POST /openai/v1/chat/completions               OpenAI chat completions (also what Together, vLLM, Ollama serve)
    POST /anthropic/v1/messages                    Anthropic messages
    POST /gemini/{v1|v1beta}/models/{m}:generateContent   Gemini generateContent

Answers come from the emulator's responder, exactly as batch results do; a prompt with the error marker gets the
provider's 400. `FaultConfig.realtime_rpm` / `realtime_tpm` limit each provider over a sliding window of
`realtime_window_seconds`; beyond it the answer is the provider's own 429 (OpenAI `rate_limit_exceeded` with
`retry-after`/`retry-after-ms`, Anthropic `rate_limit_error` with `retry-after`, Gemini `RESOURCE_EXHAUSTED` with
`RetryInfo.retryDelay` in the body). OpenAI and Anthropic send their rate-limit headers on every answer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from speceval.emulator.common import refused_sampling_field, text_of
from speceval.emulator.context import EmulatorContext
from speceval.emulator.faults import ERROR_MARKER
from speceval.emulator.flex import FlexGate, asked_tier
from speceval.emulator.gemini_files import VERSIONS
from speceval.emulator.jobs import billed_output_tokens, gemini_output_limit, output_limit, random_id
from speceval.emulator.models import NOT_FOUND, retired
from speceval.emulator.realtime_limits import Admission, RealtimeLog
from speceval.emulator.responder import estimate_tokens
from speceval.emulator.routing import ApiError, ProviderApp, Request, Response, Route, json_response
from speceval.emulator.structured import answer_text, schema_of_anthropic, schema_of_gemini, schema_of_openai

INVALID_MESSAGE = "Invalid request: the prompt contains the speceval emulator error marker [[emulator:error]]."


def go_duration(seconds: float) -> str:
    """OpenAI's reset format: a Go duration such as `12ms`, `1.5s` or `6m0s`."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s"


def _retry_headers(admission: Admission) -> dict[str, str]:
    wait = admission.retry_after
    return {"retry-after": f"{wait:.3f}".rstrip("0").rstrip("."), "retry-after-ms": str(math.ceil(wait * 1000))}


def _openai_headers(admission: Admission) -> dict[str, str]:
    return _limit_headers(admission, "x-ratelimit-{field}-{kind}", go_duration, ("tokens",))


def _anthropic_headers(admission: Admission) -> dict[str, str]:
    def at(seconds: float) -> str:
        return (
            (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        )

    # Anthropic's token limit stands for its input and output token limits too (one shared bucket here).
    return _limit_headers(
        admission, "anthropic-ratelimit-{kind}-{field}", at, ("tokens", "input-tokens", "output-tokens")
    )


def _limit_headers(
    admission: Admission, name: str, reset: Callable[[float], str], token_kinds: tuple[str, ...]
) -> dict[str, str]:
    """A provider's rate-limit headers: `name` formatted with `kind` (requests, or each of `token_kinds`) and
    `field` (limit, remaining, reset); `reset` writes a reset's seconds as the provider does."""
    limits = [("requests", admission.limit_requests, admission.remaining_requests, admission.reset_requests)]
    limits += [
        (kind, admission.limit_tokens, admission.remaining_tokens, admission.reset_tokens) for kind in token_kinds
    ]
    headers: dict[str, str] = {}
    for kind, limit, remaining, seconds in limits:
        if limit is not None:
            headers[name.format(kind=kind, field="limit")] = str(limit)
            headers[name.format(kind=kind, field="remaining")] = str(remaining)
            headers[name.format(kind=kind, field="reset")] = reset(seconds)
    return headers


class RealtimeEndpoints:
    """The realtime routes of the three providers, sharing one `RealtimeLog`."""

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind to the emulator's context (faults, responder)."""
        self.ctx = ctx
        self.log = RealtimeLog()
        self.flex = FlexGate(ctx)

    def register(self, apps: list[ProviderApp]) -> None:
        """Add the realtime routes to the provider apps (by their names)."""
        routes = {
            "openai": [Route("POST", "/v1/chat/completions", self.openai_chat)],
            "anthropic": [Route("POST", "/v1/messages", self.anthropic_messages)],
            "gemini": [Route("POST", "/{ver:" + VERSIONS + "}/models/{model}:generateContent", self.gemini_generate)],
        }
        for app in apps:
            app.add_routes(routes.get(app.name, []))

    # -- shared -------------------------------------------------------------------------------------------

    def _serve(
        self,
        provider: str,
        model: str,
        prompt: str,
        schema: dict[str, Any] | None = None,
        limit: int | None = None,
        *,
        flex: bool = False,
    ) -> tuple[Admission, str | None, int, int]:
        """Admit (or not) one request; returns the decision, the answer (None for the error marker) and tokens
        (output billed at most the request's max_tokens, `limit`, as a provider bills)."""
        faults = self.ctx.faults
        answer = None if ERROR_MARKER in prompt else answer_text(self.ctx.responder, model, prompt, schema)
        input_tokens = estimate_tokens(prompt)
        output_tokens = billed_output_tokens(answer, limit) if answer is not None else 0
        admission = self.log.window(provider).admit(
            time.monotonic(),
            input_tokens + output_tokens,
            faults.realtime_rpm,
            faults.realtime_tpm,
            faults.realtime_window_seconds,
        )
        self.log.record(prompt, admission.admitted, time.time())
        if admission.admitted:
            self.ctx.sleep(faults.realtime_latency_seconds + (self.flex.delay(provider) if flex else 0.0))
        return admission, answer, input_tokens, output_tokens

    @staticmethod
    def _body(request: Request) -> dict[str, Any]:
        body = request.json()
        if not isinstance(body, dict):
            raise ApiError(400, "The request body must be a JSON object.")
        return body

    # -- OpenAI -------------------------------------------------------------------------------------------

    def openai_chat(self, request: Request) -> Response:
        """`POST /v1/chat/completions` → a `chat.completion` object."""
        body = self._body(request)
        model, messages = body.get("model"), body.get("messages")
        if not isinstance(model, str):
            raise ApiError(
                400, "Missing required parameter: 'model'.", param="model", code="missing_required_parameter"
            )
        if not isinstance(messages, list) or not messages:
            raise ApiError(
                400, "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
            )
        tier = asked_tier(body)
        if tier == "flex":
            self.flex.admit("openai", model)  # a model not served at flex, or no capacity now: the provider's error
        admission, answer, input_tokens, output_tokens = self._serve(
            "openai",
            model,
            text_of(messages),
            schema_of_openai(body),
            output_limit(body.get("max_completion_tokens", body.get("max_tokens"))),
            flex=tier == "flex",
        )
        headers = _openai_headers(admission) if self.ctx.faults.realtime_rate_headers else {}
        if not admission.admitted:
            message = (
                f"Rate limit reached for {model} on requests per window: Limit {admission.limit_requests}. "
                f"Please try again in {admission.retry_after:.3f}s."
            )
            raise ApiError(
                429,
                message,
                kind="requests",
                code="rate_limit_exceeded",
                headers={**headers, **_retry_headers(admission)},
            )
        if answer is None:
            raise ApiError(400, INVALID_MESSAGE, headers=headers)
        usage = {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        completion = {
            "id": random_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
            "service_tier": "flex" if tier == "flex" else "default",  # the tier that served it, as OpenAI echoes
            "system_fingerprint": None,
        }
        return json_response(completion, 200, {"x-request-id": random_id("req_", 32), **headers})

    # -- Anthropic ----------------------------------------------------------------------------------------

    def anthropic_messages(self, request: Request) -> Response:
        """`POST /v1/messages` → a `message` object."""
        body = self._body(request)
        model, messages, max_tokens = body.get("model"), body.get("messages"), body.get("max_tokens")
        if not isinstance(model, str):
            raise ApiError(400, "model: Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ApiError(400, "max_tokens: Field required (an integer >= 1)")
        if not isinstance(messages, list) or not messages:
            raise ApiError(400, "messages: Field required")
        if "service_tier" in body and body["service_tier"] not in ("auto", "standard_only"):
            raise ApiError(400, "service_tier: Input should be 'auto' or 'standard_only'")  # no flex tier
        refused = refused_sampling_field(body, request.header("anthropic-version"))
        if refused:
            raise ApiError(400, f"{refused}: Extra inputs are not permitted")
        if retired("anthropic", model):
            raise ApiError(404, f"model: {model}", kind=NOT_FOUND)
        prompt = "\n".join(t for t in (text_of(body.get("system")), text_of(messages)) if t)
        admission, answer, input_tokens, output_tokens = self._serve(
            "anthropic", model, prompt, schema_of_anthropic(body), max_tokens
        )
        headers = _anthropic_headers(admission) if self.ctx.faults.realtime_rate_headers else {}
        if not admission.admitted:
            message = "This request would exceed your organization's rate limit. Please try again later."
            raise ApiError(429, message, headers={**headers, "retry-after": _retry_headers(admission)["retry-after"]})
        if answer is None:
            raise ApiError(400, INVALID_MESSAGE, headers=headers)
        message_body = {
            "id": random_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "service_tier": "standard",
            },
        }
        return json_response(message_body, 200, {"request-id": random_id("req_"), **headers})

    # -- Gemini -------------------------------------------------------------------------------------------

    def gemini_generate(self, request: Request) -> Response:
        """`POST /{ver}/models/{model}:generateContent` → a `GenerateContentResponse`."""
        body = self._body(request)
        model = request.params["model"].removeprefix("models/")
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise ApiError(400, "* GenerateContentRequest.contents: contents is not specified")
        system = body.get("systemInstruction", body.get("system_instruction"))
        prompt = "\n".join(t for t in (text_of(system), text_of(contents)) if t)
        tier = asked_tier(body)
        if tier == "flex":
            self.flex.admit("gemini", model)
        admission, answer, input_tokens, output_tokens = self._serve(
            "gemini", model, prompt, schema_of_gemini(body), gemini_output_limit(body), flex=tier == "flex"
        )
        if not admission.admitted:
            return _gemini_rate_limited(model, admission)
        if answer is None:
            raise ApiError(400, INVALID_MESSAGE)
        response = {
            "candidates": [
                {"content": {"parts": [{"text": answer}], "role": "model"}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": input_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": input_tokens + output_tokens,
                **({"serviceTier": "FLEX"} if tier == "flex" else {}),
            },
            "modelVersion": model,
            "responseId": random_id("", 22),
        }
        return json_response(response)


def _gemini_rate_limited(model: str, admission: Admission) -> Response:
    metric = "generate_content_free_tier_requests" if admission.retry_after else "input_token_count"
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": f"generativelanguage.googleapis.com/{metric}",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                            "quotaDimensions": {"location": "global", "model": model},
                            "quotaValue": str(admission.limit_requests or admission.limit_tokens or 0),
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{admission.retry_after:.3f}s"},
            ],
        }
    }
    return json_response(body, 429)


def add_realtime_endpoints(ctx: EmulatorContext, apps: list[ProviderApp]) -> RealtimeEndpoints:
    """Register the realtime routes on `apps`; returns the endpoints (whose `log` counts what arrived)."""
    endpoints = RealtimeEndpoints(ctx)
    endpoints.register(apps)
    return endpoints

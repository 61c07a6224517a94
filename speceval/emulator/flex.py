"""The flex tier of the emulator's realtime endpoints: which requests ask for it, which models it serves, when it
sheds a request, and how long a flex answer takes (docs/service-tiers.md).

A request asks for flex with `service_tier: "flex"` (OpenAI chat completions) or `serviceTier` / `service_tier`
`"flex"` in any case (Gemini generateContent, as google-genai sends it). Each provider answers in its own shape:

- a model it does not serve at flex: OpenAI 400 `invalid_request_error` (param `service_tier`), Gemini 400
  `INVALID_ARGUMENT`; Anthropic has no flex tier and refuses the value (400, its allowed values named);
- no capacity now (`FaultConfig.flex_shed_rate`, `flex_shed_every`): OpenAI 429 (not billed), Gemini 503
  `UNAVAILABLE`;
- served: after a log-normal delay around `flex_latency_seconds`, with the tier echoed (OpenAI `service_tier:
  "flex"`, Gemini `usageMetadata.serviceTier: "FLEX"`).
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from typing import Any

from speceval.data import flex_models
from speceval.emulator.context import EmulatorContext
from speceval.emulator.routing import ApiError

# The price table names Gemini's provider `google`; the emulator's app is `gemini`.
_TABLE_PROVIDER = {"openai": "openai", "gemini": "google"}

OPENAI_SHED_MESSAGE = (
    "Resource unavailable: flex processing has no capacity for this request right now. Retry later, or send it at "
    "the default service tier. You were not charged for this request."
)
GEMINI_SHED_MESSAGE = "The service is currently unavailable for Flex requests. Please retry later."


def asked_tier(body: dict[str, Any]) -> str | None:
    """The service tier a request body asks for, lowercased (None: not given)."""
    value = body.get("service_tier", body.get("serviceTier"))
    return value.lower() if isinstance(value, str) and value else None


class FlexGate:
    """Decides, per flex request, refused model / shed / served, and the served answer's delay."""

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind to the emulator's faults (read per request: tests change them while it runs)."""
        self.ctx = ctx
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}  # flex requests per provider app
        self.shed = 0
        self.served = 0

    def serves(self, provider: str, model: str) -> bool:
        """Whether `provider` serves `model` at flex."""
        table = self.ctx.faults.flex_models
        prefixes = table.get(provider, []) if table is not None else flex_models().get(_TABLE_PROVIDER[provider], ())
        return any(model.startswith(prefix) for prefix in prefixes)

    def admit(self, provider: str, model: str) -> None:
        """Raise the provider's error for a flex request refused (model not served, or shed); return if served."""
        if not self.serves(provider, model):
            if provider == "openai":
                raise ApiError(
                    400,
                    f"Flex processing is not available for model '{model}'. Use a supported model or the default "
                    "service tier.",
                    kind="invalid_request_error",
                    param="service_tier",
                )
            raise ApiError(
                400, f"Service tier FLEX is not supported for model models/{model}.", kind="INVALID_ARGUMENT"
            )
        faults = self.ctx.faults
        with self._lock:
            n = self._seen[provider] = self._seen.get(provider, 0) + 1
        every = faults.flex_shed_every is not None and n % faults.flex_shed_every == 0
        if every or (faults.flex_shed_rate > 0 and _draw(faults.seed, provider, n) < faults.flex_shed_rate):
            with self._lock:
                self.shed += 1
            if provider == "openai":
                raise ApiError(429, OPENAI_SHED_MESSAGE, kind="resource_unavailable", code="resource_unavailable")
            raise ApiError(503, GEMINI_SHED_MESSAGE, kind="UNAVAILABLE")
        with self._lock:
            self.served += 1

    def delay(self, provider: str) -> float:
        """Seconds a served flex answer takes: log-normal around the median (the latency a flex call sees)."""
        faults = self.ctx.faults
        if faults.flex_latency_seconds <= 0:
            return 0.0
        spread = faults.flex_latency_spread
        return (
            faults.flex_latency_seconds * math.exp(random.gauss(0.0, spread)) if spread else faults.flex_latency_seconds
        )


def _draw(seed: int, provider: str, n: int) -> float:
    """A seeded uniform draw in [0, 1) for the n-th flex request of a provider (the same run sheds the same ones)."""
    digest = hashlib.sha256(f"{seed}:flex:{provider}:{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64

"""`RealtimeModel`: one chat call to a provider's realtime endpoint, and nothing else.

The realtime engine (`speceval.realtime.engine`) owns concurrency, rate limiting, retries, checkpoints and
results; an adapter only turns a prompt into one HTTP call through the vendor SDK (with SDK retries off, so the
limiter sees every 429) and the answer — or the failure — into our types.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from speceval.batch.model import BatchedModel
from speceval.batch.records import RequestError
from speceval.providers.http_errors import is_transient_status, retry_after_seconds
from speceval.realtime.headers import LimitHeaders, parse_limit_headers
from speceval.realtime.limiter import RateLimits
from speceval.redaction import redact
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import PromptLike
from speceval.wire.reply import Reply
from speceval.wire.usage import Usage


@dataclass(frozen=True)
class RealtimeOptions:
    """How a realtime run paces and retries its calls.

    Attributes:
        limits: requests and tokens per period, concurrency.
        retry_initial_delay: seconds before the first retry of a failed call (5xx, timeout, lost connection).
        retry_backoff_factor: each further retry waits this many times longer (with ±50% jitter).
        retry_max_delay: longest wait between two tries.
        request_timeout: seconds before one call is abandoned (then retried).
        max_rate_limit_retries: 429s one request may receive before it is recorded as errored (429s do not
            count against `--max-attempts`: they say "later", not "broken").
        service_tier: the tier asked of the provider (`flex`), None for its standard tier.
        flex_patience: seconds one request keeps retrying flex refusals before `on_flex_unavailable` decides.
        on_flex_unavailable: `wait` (keep asking at flex), `standard` (send it at the standard tier) or `batch`
            (leave it unsent, for a batch job of the same run).
    """

    limits: RateLimits = field(default_factory=RateLimits)
    retry_initial_delay: float = 1.0
    retry_backoff_factor: float = 2.0
    retry_max_delay: float = 60.0
    request_timeout: float = 600.0
    max_rate_limit_retries: int = 100
    service_tier: str | None = None
    flex_patience: float = 600.0
    on_flex_unavailable: str = "wait"


@dataclass
class Completion:
    """A call that got an HTTP 200: the text (None when the answer holds none), usage, rate-limit headers, and
    the service tier the provider says served it (`service_tier` of the body, lowercased; None if it said none)."""

    text: str | None
    usage: Usage | None = None
    headers: LimitHeaders = field(default_factory=LimitHeaders)
    error: RequestError | None = None
    service_tier: str | None = None

    @classmethod
    def of(cls, reply: Reply, headers: LimitHeaders | None = None, service_tier: object = None) -> Completion:
        """The completion of a parsed response body (`speceval.wire.*`): its text, or why there is none."""
        error = None if reply.text is not None else RequestError(code=reply.code, message=reply.message or "")
        served = str(service_tier).lower() if isinstance(service_tier, str) and service_tier else None
        return cls(reply.text, reply.usage.typed(), headers or LimitHeaders(), error, served)


class CallFailed(Exception):
    """A call that did not get an answer: HTTP error status, timeout or lost connection.

    Attributes:
        error: what to record if this is the last try.
        rate_limited: a 429 that says "slow down" (not an exhausted quota).
        retry_after: seconds the provider asked us to wait, if it said.
        headers: rate-limit headers of the failed response.
    """

    def __init__(
        self,
        error: RequestError,
        *,
        rate_limited: bool = False,
        retry_after: float | None = None,
        headers: LimitHeaders | None = None,
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.rate_limited = rate_limited
        self.retry_after = retry_after
        self.headers = headers or LimitHeaders()


def http_failure(
    status: int | None, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> CallFailed:
    """Classify a failed call the same way for every SDK (status None: timeout or connection lost)."""
    # An exhausted quota (billing) answers 429 too, but waiting will not fix it.
    quota = code == "insufficient_quota"
    retryable = (status is None or is_transient_status(status)) and not quota
    error = RequestError(code=code, message=redact(message), status_code=status, retryable=retryable)
    return CallFailed(
        error,
        rate_limited=status == 429 and not quota,
        retry_after=retry_after_seconds(headers),
        headers=parse_limit_headers(headers),
    )


FLEX_REFUSAL_STATUSES = frozenset({429, 503})
"""How a provider says flex has no capacity now: OpenAI answers 429 ("resource unavailable", not billed), Gemini
sheds the request (429 RESOURCE_EXHAUSTED or 503 UNAVAILABLE). The code is not relied on: any faithful server's
capacity answer to a flex request counts, except an exhausted quota (billing), which waiting cannot fix."""


def is_flex_refusal(failure: CallFailed) -> bool:
    """Whether a failed flex call was refused for want of capacity (retry later, or elsewhere)."""
    error = failure.error
    return error.status_code in FLEX_REFUSAL_STATUSES and error.code != "insufficient_quota"


class RealtimeModel(ABC):
    """A chat model reached through a realtime (one request per call) endpoint.

    Subclasses set `provider` (overridable per instance: Together and vLLM are OpenAI-shaped) and implement
    `complete`. Model names and sampling parameters are those of `BatchedModel`, so pipelines use either.
    """

    provider: ClassVar[str]

    def __init__(self, model_name: str, params: GenerationParams | None = None, options: RealtimeOptions | None = None):
        """Remember the model, its sampling parameters and how to pace and retry calls."""
        self.model_name = model_name
        self.params = params or GenerationParams()
        self.options = options or RealtimeOptions()
        self.org = self.provider
        # The same model through its Batch API, for requests flex kept refusing (`on_flex_unavailable: batch`);
        # set by `speceval.engines.factory.build_model`.
        self.batch_fallback: BatchedModel | None = None

    @abstractmethod
    def complete(self, prompt: PromptLike, *, service_tier: str | None = None) -> Completion:
        """Send one prompt (at `service_tier`, e.g. `flex`; None: the provider's standard tier); return the answer
        or raise `CallFailed`. Never retry inside (SDK retries off)."""

    def describe(self) -> dict[str, str]:
        """Provider and model name, for manifests and summaries."""
        return {"provider": self.org, "model_name": self.model_name, "mode": "realtime"}

    def limiter_key(self) -> Hashable:
        """What shares one rate limiter (`speceval.realtime.engine.limiter_of`): this object, unless a subclass
        knows its endpoint (`_KeyedRealtimeModel`: the same model at the same endpoint, tier and limits)."""
        return self

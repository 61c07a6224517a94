"""`Answer`: one request's outcome as a plain named tuple, the shape every built-in adapter parses results into.

A job of 50,000 results used to become 50,000 `RequestOutcome` models (each with a `Usage` model) before the
engine looked at them; parsing and collecting spent most of their time building and validating those objects.
Every batch adapter now builds `Answer`s through the helpers here, the engine reads them as they are, and the
typed `RequestOutcome` is built only for callers of `get_batch_results` (`Answer.typed`). Values come from our
own parsers (already checked), so nothing is validated twice.
"""

from __future__ import annotations

from typing import NamedTuple

from speceval.batch.records import Outcome, RequestError, RequestOutcome
from speceval.redaction import redact
from speceval.wire.usage import Tokens


class Answer(NamedTuple):
    """The outcome of one request inside a provider job (the fields of `RequestOutcome`, usage as `Tokens`)."""

    custom_id: str
    outcome: Outcome
    output_text: str | None = None
    error: RequestError | None = None
    usage: Tokens | None = None

    def typed(self) -> RequestOutcome:
        """The same outcome as a `RequestOutcome`."""
        usage = self.usage.typed() if self.usage is not None else None
        return RequestOutcome(
            custom_id=self.custom_id, outcome=self.outcome, output_text=self.output_text, error=self.error, usage=usage
        )

    @classmethod
    def of(cls, outcome: RequestOutcome) -> Answer:
        """The answer of a typed outcome (what a registered provider's `get_batch_results` yields)."""
        return cls(outcome.custom_id, outcome.outcome, outcome.output_text, outcome.error, Tokens.of(outcome.usage))


def succeeded(custom_id: str, text: str, usage: Tokens | None) -> Answer:
    """A request that produced `text`."""
    return Answer(custom_id, Outcome.SUCCEEDED, text, None, usage)


def failed(
    custom_id: str,
    outcome: Outcome,
    code: str | None,
    message: str,
    *,
    status_code: int | None = None,
    retryable: bool = False,
    usage: Tokens | None = None,
) -> Answer:
    """A request that did not succeed; `message` is the provider's and is redacted here."""
    error = RequestError(code=code, message=redact(message), status_code=status_code, retryable=retryable)
    return Answer(custom_id, outcome, None, error, usage)

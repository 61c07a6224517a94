"""What a realtime run may spend: each call's upper bound reserved against the budget before it is sent, and
replaced by what the answer cost at the tier that served it (flex at the provider's batch rates, standard at
full price: docs/service-tiers.md)."""

from __future__ import annotations

import threading

from speceval.batch.budget import Budget, Claim
from speceval.batch.costs import REQUEST_FRAMING_TOKENS, PriceTable, served_tier
from speceval.defaults import PRICES_ENV
from speceval.errors import ConfigError
from speceval.realtime.model import RealtimeModel
from speceval.wire.usage import Usage

# A request held back by the budget asks again this often (calls in flight settle within a call's latency).
HELD_WAIT_SECONDS = 0.05


def estimate_prompt_tokens(text: str) -> int:
    """About four characters per token: no tokenizer dependency, and usage reconciles the difference."""
    return max(1, (len(text) + 3) // 4)


class RealtimeSpend:
    """The budget of one realtime engine (a no-op without a budget)."""

    def __init__(self, model: RealtimeModel, budget: Budget | None) -> None:
        """Check the model has a price when a budget is set (before anything is sent or locked)."""
        self.model = model
        self.budget = budget
        self.reached = threading.Event()
        self.prices = self._live_prices()

    def _live_prices(self) -> PriceTable | None:
        if self.budget is None:
            return None
        prices = getattr(self.budget.estimator, "prices", None)
        if not isinstance(prices, PriceTable) or prices.price(self.model.model_name) is None:
            raise ConfigError(
                f"no price for model {self.model.model_name!r}, so the spending limit cannot be enforced for its "
                f"realtime calls; give its live price in a price table (--prices FILE or ${PRICES_ENV}) or run "
                "without a limit (an endpoint of your own has no price unless you give one)"
            )
        return prices

    def cost(self, usage: Usage | None, service_tier: str | None = None) -> float:
        """What an answer cost at the tier that served it (flex at the provider's batch rates)."""
        if self.prices is None or usage is None:
            return 0.0
        tier = served_tier(service_tier)
        return self.prices.cost(self.model.model_name, self.model.provider, usage, tier=tier) or 0.0

    def already_spent(self, spent: float) -> None:
        """Count what the run spent before this session (a resume with a higher budget goes on from it)."""
        if self.budget is not None and self.prices is not None:
            self.budget.settle(0.0, spent)

    def reserve(self, prompt: str, tier: str | None, stop: threading.Event) -> float | None:
        """Reserve the request's upper-bound cost (its prompt, and max_tokens of output, at the tier asked) before it
        is sent; None when that would pass the budget (the run then stops with exit 3, resumable with a higher
        limit) or the run stopped while the budget held it back."""
        if self.budget is None or self.prices is None:
            return 0.0
        bound = self.cost(
            Usage(
                input_tokens=estimate_prompt_tokens(prompt) + REQUEST_FRAMING_TOKENS,
                output_tokens=self.model.params.max_tokens,
            ),
            tier,  # a flex call is reserved at flex rates; one that falls back to standard reserves again
        )
        while True:
            claim = self.budget.claim(bound)
            if claim is Claim.GRANTED:
                return bound
            if claim is Claim.REFUSED:
                self.reached.set()
                return None
            # Held: calls (or jobs) in flight hold reservations that will settle; ask again shortly.
            if stop.wait(HELD_WAIT_SECONDS):
                return None

    def settle(self, reserved: float, usage: Usage | None, service_tier: str | None = None) -> None:
        """Replace the reservation by the call's actual cost (nothing for a call that was refused or failed)."""
        if self.budget is not None and self.prices is not None:
            self.budget.settle(reserved, self.cost(usage, service_tier))

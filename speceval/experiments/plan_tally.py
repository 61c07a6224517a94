"""A dry run's tally of one stage: its runs, requests and jobs, and their expected and bounded cost at the tier
each entry is sent at (`speceval.experiments.dry_plan`, `plan_inputs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from speceval.batch.costs import REQUEST_FRAMING_TOKENS, PriceTable
from speceval.defaults import Tier
from speceval.experiments.config import ModelEntry
from speceval.providers.registry import resolve_org
from speceval.wire.usage import Usage

EXPECTED_OUTPUT_TOKENS = 256
"""The answer length an expected cost assumes (a typical chat answer or verdict; max_tokens is the bound)."""


class StagePlan(BaseModel):
    """What one stage will send."""

    stage: str
    runs: int = Field(description="run folders (generation) or judge targets (one per candidate or ordered pair)")
    requests: int
    jobs: int = Field(description="provider jobs at the experiment's batch_size (a provider limit may add more)")
    expected_usd: float | None = Field(description="expected cost; None when a model has no price")
    upper_bound_usd: float | None = Field(description="every answer at max_tokens; None when a model has no price")
    unpriced: list[str] = Field(default_factory=list, description="models the price table does not know")


@dataclass
class Tally:
    runs: int = 0
    requests: int = 0
    jobs: int = 0
    expected: float = 0.0
    bound: float = 0.0
    unpriced: set[str] = field(default_factory=set)
    default_tier: Tier | None = None  # the study's `engine.tier`, for entries that give none
    # The bound's tokens (every answer at max_tokens, nothing cached): what the tier plan's hours and costs count.
    bound_input_tokens: int = 0
    bound_output_tokens: int = 0

    def add(
        self, requests: int, batch_size: int, model: ModelEntry, prices: PriceTable, expected: Usage, bound: Usage
    ) -> None:
        self.runs += 1
        self.requests += requests
        self.bound_input_tokens += bound.input_tokens
        self.bound_output_tokens += bound.output_tokens
        self.jobs += math.ceil(requests / batch_size) if requests else 0
        provider = resolve_org(model.model, model.org)
        # At the tier the entry is sent at: batch and flex at batch rates, standard at full price (auto: the plan
        # prints its own tiers' costs; here at batch rates, the cheapest it can choose).
        tier = model.tier or (self.default_tier if provider.batch else None)
        batch = provider.batch and tier is not Tier.STANDARD
        costs = [prices.cost(model.model, provider.org, usage, batch=batch) for usage in (expected, bound)]
        if costs[0] is None or costs[1] is None:
            self.unpriced.add(model.model)
            return
        self.expected += costs[0]
        self.bound += costs[1]

    def plan(self, stage: str) -> StagePlan:
        unknown = bool(self.unpriced)
        return StagePlan(
            stage=stage,
            runs=self.runs,
            requests=self.requests,
            jobs=self.jobs,
            expected_usd=None if unknown else self.expected,
            upper_bound_usd=None if unknown else self.bound,
            unpriced=sorted(self.unpriced),
        )


def usage_of(prompt: int, cached: int, requests: int, output: int, *, framing: bool = False) -> Usage:
    extra = REQUEST_FRAMING_TOKENS * requests if framing else 0
    return Usage(input_tokens=prompt + extra, cached_input_tokens=cached, output_tokens=requests * output)

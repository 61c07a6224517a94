"""Prices, what a run cost, and what a job will cost before it is paid for.

The price table (`speceval/data/prices.json`) gives USD per million input and output tokens at standard prices,
the prices of input tokens read from and written to a provider's prompt cache, and each provider's batch
discount; users override entries with `--prices FILE` or `SPECEVAL_PRICES`. A model the table does not know has
an *unknown* cost (None), never a cost of 0.

What a collected job cost comes from the usage the provider reported, cached tokens at their own price. A cost
estimated before a job exists is an upper bound for the budget: nothing is assumed to come from the cache, and
when the requests mark a cache breakpoint every input token is priced at the higher of the input and cache-write
prices (an Anthropic request that marks one may write its prefix at 1.25x the input price).

Estimates count input tokens as UTF-8 bytes / 4 of each request line's prompt text. No tokenizer is used:
`tiktoken` downloads its encodings on first use, which fails offline and in CI, and the other providers publish
none; bytes / 4 overestimates English slightly, which is the safe side for a budget. Output tokens are estimated
at `max_tokens` per request, the most a job can cost, so a budget is never exceeded by a long answer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from speceval.batch.model import BatchedModel
from speceval.batch.records import BatchRecord, SubmissionIntent
from speceval.defaults import PRICES_ENV
from speceval.errors import ConfigError, InputError
from speceval.wire.usage import Usage

# A request line also carries JSON structure around the prompt; count it, it is billed by no one but it keeps
# the estimate on the safe side.
_BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class Price:
    """USD per million tokens at standard (realtime) prices.

    Attributes:
        input / output: uncached input tokens, output tokens.
        cached_input: input tokens read from the prompt cache (None: billed as uncached input).
        cache_write: input tokens written to the prompt cache (None: billed as uncached input).
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    @property
    def cached_rate(self) -> float:
        """What a cached input token costs."""
        return self.input if self.cached_input is None else self.cached_input

    @property
    def write_rate(self) -> float:
        """What an input token written to the cache costs."""
        return self.input if self.cache_write is None else self.cache_write


DISCOUNTED_TIERS = frozenset({"batch", "flex"})
"""Service tiers billed at the provider's batch rates (docs/service-tiers.md): the Batch API, and flex (OpenAI's
`service_tier: "flex"`, Gemini's Flex), which is sold at batch rates. Every other tier is billed at standard prices."""


class PriceTable:
    """Prices per model (longest matching name prefix), batch discounts per provider, and the models each provider
    serves at the flex tier (name prefixes)."""

    def __init__(
        self,
        models: dict[str, Price],
        batch_discount: dict[str, float],
        as_of: str = "",
        flex: dict[str, tuple[str, ...]] | None = None,
    ):
        self.models = models
        self.batch_discount = batch_discount
        self.as_of = as_of
        self.flex = flex or {}
        self.source = "speceval/data/prices.json (shipped)"

    def offers_flex(self, provider: str, model_name: str) -> bool:
        """Whether `provider` serves `model_name` at the flex tier, by this table's flex list."""
        return any(model_name.startswith(prefix) for prefix in self.flex.get(provider, ()))

    @classmethod
    def load(cls, override: Path | None = None) -> PriceTable:
        """The shipped table, with entries from `override` (or `$SPECEVAL_PRICES`) taking precedence."""
        shipped = json.loads(resources.files("speceval.data").joinpath("prices.json").read_text(encoding="utf-8"))
        table = cls._parse(shipped, Path("speceval/data/prices.json"))
        path = override or (Path(os.environ[PRICES_ENV]) if os.environ.get(PRICES_ENV) else None)
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(path, f"not a readable price table: {exc}") from None
            extra = cls._parse(data, path)
            table.models.update(extra.models)
            table.batch_discount.update(extra.batch_discount)
            table.flex.update(extra.flex)  # a provider's list given replaces the shipped one (models leave flex too)
            table.as_of = extra.as_of or table.as_of
            table.source = f"{path} over the shipped table"
        return table

    @staticmethod
    def _parse(data: object, path: Path) -> PriceTable:
        if not isinstance(data, dict) or not isinstance(data.get("models", {}), dict):
            raise InputError(path, "expected an object with a 'models' object", field="models")
        models = {}
        for name, entry in data.get("models", {}).items():
            try:
                cache_keys = ("cached_input", "cache_write")
                optional = {key: float(entry[key]) for key in cache_keys if entry.get(key) is not None}
                models[name] = Price(input=float(entry["input"]), output=float(entry["output"]), **optional)
            except (KeyError, TypeError, ValueError, AttributeError):
                raise InputError(
                    path,
                    "expected {'input': USD, 'output': USD} and optionally 'cached_input' and 'cache_write' (USD)",
                    field=f"models.{name}",
                ) from None
        discounts = {str(k): float(v) for k, v in dict(data.get("batch_discount", {})).items()}
        flex = data.get("flex", {})
        if not isinstance(flex, dict) or not all(
            isinstance(names, list) and all(isinstance(n, str) and n for n in names) for names in flex.values()
        ):
            raise InputError(path, "expected {provider: [model name prefix, ...]}", field="flex")
        return PriceTable(models, discounts, str(data.get("as_of", "")), {str(k): tuple(v) for k, v in flex.items()})

    def price(self, model_name: str) -> Price | None:
        """The price of `model_name` (longest prefix match), or None if the table does not know it."""
        best = max((name for name in self.models if model_name.startswith(name)), key=len, default=None)
        return self.models[best] if best is not None else None

    def cost(
        self, model_name: str, provider: str, usage: Usage, *, batch: bool = True, tier: str | None = None
    ) -> float | None:
        """USD for `usage` of `model_name`; None when the price is unknown.

        `tier`, when given, is the service tier the request was served at (`batch`, `flex`, `standard`, ...) and
        decides the rate (`DISCOUNTED_TIERS` at the provider's batch discount); otherwise `batch` does."""
        price = self.price(model_name)
        if price is None:
            return None
        discounted = tier in DISCOUNTED_TIERS if tier is not None else batch
        factor = self.batch_discount.get(provider, 1.0) if discounted else 1.0
        uncached = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
        dollars = (
            uncached * price.input
            + usage.cached_input_tokens * price.cached_rate
            + usage.cache_write_tokens * price.write_rate
            + usage.output_tokens * price.output
        )
        return dollars / 1e6 * factor


def served_tier(reported: str | None) -> str:
    """The tier a realtime answer is priced and counted at, from the `service_tier` its response reported:
    `flex` when the provider says flex served it, else `standard` (OpenAI reports `default`; a response that says
    nothing is counted at standard, the higher price, since nothing shows it was discounted)."""
    return "flex" if reported == "flex" else "standard"


REQUEST_FRAMING_TOKENS = 64
"""Tokens a request adds around its prompt text (roles, chat-template markers, JSON keys): counted in an upper bound
priced from the prompt text alone (a realtime call, a dry run), as a batch job's bound counts its whole request file."""


def estimate_prompt_tokens(text: str) -> int:
    """Input tokens of one prompt, estimated as UTF-8 bytes / 4 (at least 1)."""
    return max(1, len(text.encode("utf-8")) // _BYTES_PER_TOKEN)


class CostEstimator:
    """Prices a job before it is created (the `speceval.batch.budget.CostEstimator` protocol)."""

    def __init__(self, prices: PriceTable, *, batch: bool = True):
        self.prices = prices
        self.batch = batch

    def estimate(self, model: BatchedModel, intent: SubmissionIntent, request_file: Path) -> float:
        """Upper-bound USD of every request of `intent`: input from the request file, output at max_tokens."""
        price = self.prices.price(model.model_name)
        if price is None:
            raise ConfigError(
                # Worded for every limit (--budget-usd, budget_usd, cost_per_run_limit): a message naming a flag the
                # user never gave sends them looking for it.
                f"no price for model {model.model_name!r}, so the spending limit cannot be enforced; add it to a "
                f"price table (--prices FILE or ${PRICES_ENV}) or run without a limit"
            )
        input_tokens = request_file.stat().st_size // _BYTES_PER_TOKEN
        output_tokens = intent.request_count * model.params.max_tokens
        # Upper bound: where a cache write costs more than plain input and the requests mark a cache breakpoint,
        # count every input token as written.
        writes = input_tokens if price.write_rate > price.input and marks_cache(request_file) else 0
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, cache_write_tokens=writes)
        cost = self.prices.cost(model.model_name, model.provider, usage, batch=self.batch)
        return cost if cost is not None else 0.0

    def actual(self, record: BatchRecord) -> float | None:
        """What a collected job cost, from the usage its provider reported (None: no price for its model)."""
        return record_cost(self.prices, record)


_CACHE_MARK = b'"cache_control"'


def marks_cache(request_file: Path) -> bool:
    """Whether any request in `request_file` marks a prompt-cache breakpoint (read in 1 MiB pieces)."""
    overlap = len(_CACHE_MARK) - 1
    tail = b""
    with request_file.open("rb") as lines:
        while piece := lines.read(1 << 20):
            if _CACHE_MARK in tail + piece:
                return True
            tail = piece[-overlap:]
    return False


def record_cost(prices: PriceTable, record: BatchRecord) -> float | None:
    """What a collected job cost, from the usage its results reported; None if unknown or not collected."""
    if not record.collected:
        return None
    return prices.cost(record.model, record.provider, record.usage, batch=record.provider != "realtime")

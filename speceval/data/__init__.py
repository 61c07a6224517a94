"""Facts shipped with speceval: the price table, the experiment schema, and the models providers have retired.

Each is read with `importlib.resources`, so an installed wheel finds them as a checkout does.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from functools import cache
from importlib import resources


@cache
def retirement_dates() -> dict[str, dict[str, date]]:
    """Per provider (`openai`, `anthropic`, `gemini`), each model's end of life: from that day on, requests to it
    fail (`retired_models.json`, with its source and date). One table for the model check made before paying and
    for the emulator, which answers a retired model as its provider does."""
    shipped = json.loads(resources.files(__name__).joinpath("retired_models.json").read_text(encoding="utf-8"))
    return {
        provider: {model: date.fromisoformat(day) for model, day in models.items()}
        for provider, models in shipped["retired_on"].items()
    }


def retired_on(provider: str, model: str) -> date | None:
    """The day `model` of `provider` stops (or stopped) answering, if the table knows it."""
    return retirement_dates().get(provider, {}).get(model)


def is_retired(provider: str, model: str, on: date | None = None) -> bool:
    """Whether `model` of `provider` is retired on `on` (default: today, UTC)."""
    end = retired_on(provider, model)
    return end is not None and (on or datetime.now(UTC).date()) >= end


@cache
def flex_models() -> dict[str, tuple[str, ...]]:
    """Per provider (`openai`, `google`), the model-name prefixes served at the flex tier (`prices.json` → `flex`,
    with its source and date): the list a run checks before sending and the emulator serves by."""
    shipped = json.loads(resources.files(__name__).joinpath("prices.json").read_text(encoding="utf-8"))
    return {provider: tuple(names) for provider, names in shipped.get("flex", {}).items()}

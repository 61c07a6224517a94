"""Defaults and names that both the library and the commands' `--help` use, in a module that imports nothing.

A command's parser is built from this module and `speceval.ranges` only, so `--help` loads no pydantic, no SDK
and no pipeline; the library modules that own these values import them from here.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Self

from speceval.errors import ConfigError

PRICES_ENV = "SPECEVAL_PRICES"
"""The environment variable naming a price table that overrides the shipped one."""

DEFAULT_MAX_CONCURRENCY = 32
"""Requests a realtime run keeps in flight at once unless told otherwise."""

DEFAULT_MAX_TOKENS = 4096
"""Most output tokens per answer unless told otherwise (generation, judges, the inputs generator)."""

DEFAULT_POLL_INTERVAL = 60.0
"""Seconds between two polls of the provider's jobs (`--poll-interval`, env `SPECEVAL_POLL_INTERVAL`)."""

DEFAULT_TIMEOUT_HOURS = 24.0
"""How long a run waits for its jobs before it stops (resumable, exit 3)."""

DEFAULT_MAX_ATTEMPTS = 3
"""Jobs (or calls) one request may be sent in before its last outcome is final."""

DEFAULT_MAX_TURNS = 3
"""Most candidate answers per simulated-user conversation."""


class _Choice(StrEnum):
    """A closed set of names a file or flag may give; `of` says which are allowed when one is not."""

    @classmethod
    def of(cls, value: str) -> Self:
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"{cls.__name__.lower()} {value!r} is not one of: {', '.join(cls)}") from None


class Scope(_Choice):
    """What one verdict of a judge covers when the answers are conversations."""

    CONVERSATION = "conversation"
    """One verdict per conversation: the candidate across all its turns (the default for conversations)."""
    TURN = "turn"
    """One verdict per assistant turn, each judged in its context (the transcript up to and including it)."""


class Mode(_Choice):
    """What a compliance judge answers: compliant or not, a 1-5 rating, or one of named categories."""

    BINARY = "binary"
    LIKERT = "likert"
    CATEGORIES = "categories"


class Tier(_Choice):
    """Where a model's requests go: the provider's Batch API, its flex tier (synchronous, at batch rates, best
    effort), its standard realtime endpoint, or the cheapest of these that meets `deadline_hours`
    (docs/service-tiers.md)."""

    BATCH = "batch"
    FLEX = "flex"
    STANDARD = "standard"
    AUTO = "auto"


class FlexFallback(_Choice):
    """Where a request goes once flex has refused it for `flex_patience` seconds."""

    WAIT = "wait"
    """Keep asking at flex (never pay more than batch rates)."""
    STANDARD = "standard"
    """Send it at the standard tier (full price, answered in seconds)."""
    BATCH = "batch"
    """Leave it for a Batch API job of the same run (batch rates, up to 24 h)."""


FLEX_REQUEST_TIMEOUT = 900.0
"""Seconds a flex call may take: OpenAI asks clients to raise their timeout to 15 minutes for flex."""

DEFAULT_FLEX_PATIENCE = 600.0
"""Seconds one request keeps retrying flex refusals before `on_flex_unavailable` decides."""

DEFAULT_GENERATION_OUTPUT = Path("data/batched_generations")
"""Where generation runs go unless `--output-base-dir` says otherwise."""
DEFAULT_JUDGE_OUTPUT = {"compliance": Path("data/batched_compliance"), "ranking": Path("data/batched_rankings")}
"""Where judge runs go unless `--output-dir-base` (or `output_dir_base`) says otherwise."""
DEFAULT_INPUTS_OUTPUT = Path("data/generated_inputs")
"""Where `speceval inputs` writes unless `--output-dir` says otherwise."""

BUILT_IN_ORGS = ("openai", "anthropic", "google", "vertex", "openai-compatible", "together", "ray")
"""The built-in providers, each registered by `speceval.providers.registry` through `register_provider`
(tests/unit/test_model_room.py keeps them equal)."""
BUILT_IN_MODEL_FAMILIES: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-", "o1", "o3", "o4", "chatgpt-"),
    "anthropic": ("claude-",),
    "google": ("gemini-",),
}
"""The model-name prefixes of the built-in providers that claim model families (the registry registers them with
these). The report's self-preference column reads them here, so it loads no provider code."""


def model_family(model_name: str) -> str | None:
    """The built-in provider whose model family `model_name` belongs to (None for a name none claims)."""
    lowered = model_name.lower()
    for org, prefixes in BUILT_IN_MODEL_FAMILIES.items():
        if lowered.startswith(prefixes):
            return org
    return None

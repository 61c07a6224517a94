"""The allowed range of each run setting, and the flag parser that enforces it, without pydantic.

Kept apart from `speceval.settings_checks` (which adds the pydantic types for YAML schemas) so that command-line
parsers can be built, and `--help` answered, without importing pydantic or anything heavier.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from speceval.errors import ConfigError


class Range(NamedTuple):  # not a dataclass: `dataclasses` imports `inspect`, slow for --help
    """The values one setting accepts.

    Attributes:
        name: the setting's name (the YAML key; the flag is `--` + name with dashes).
        integer: whole numbers only.
        minimum: the lowest allowed value (None: no lower bound).
        maximum: the highest allowed value (None: no upper bound).
        exclusive_minimum: the minimum itself is not allowed (e.g. "greater than 0").
        exclusive_maximum: the maximum itself is not allowed (e.g. "less than 1").
    """

    name: str
    integer: bool
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False

    @property
    def flag(self) -> str:
        """The command-line flag of this setting."""
        return "--" + self.name.replace("_", "-")

    def problem(self, value: float) -> str | None:
        """Why `value` is not allowed, or None when it is."""
        if not math.isfinite(value):
            return f"must be a finite number (got {value})"
        low, high = self.minimum, self.maximum
        too_low = low is not None and (value <= low if self.exclusive_minimum else value < low)
        too_high = high is not None and (value >= high if self.exclusive_maximum else value > high)
        if not (too_low or too_high):
            return None
        if low is not None and high is not None and (self.exclusive_minimum or self.exclusive_maximum):
            left, right = "(" if self.exclusive_minimum else "[", ")" if self.exclusive_maximum else "]"
            expected = f"in {left}{_show(low)}, {_show(high)}{right}"
        elif low is not None and high is not None:
            expected = f"between {_show(low)} and {_show(high)}"
        elif high is not None:
            expected = f"{'less than' if self.exclusive_maximum else 'at most'} {_show(high)}"
        elif self.exclusive_minimum:
            expected = f"greater than {_show(low)}"
        else:
            expected = f"at least {_show(low)}"
        return f"must be {expected} (got {_show(value)})"

    def json_schema(self) -> dict[str, Any]:
        """The range in JSON Schema terms (for editors that check a YAML file against the shipped schema)."""
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            schema["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = self.minimum
        if self.maximum is not None:
            schema["exclusiveMaximum" if self.exclusive_maximum else "maximum"] = self.maximum
        return schema


def _show(number: float | None) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


TEMPERATURE = Range("temperature", integer=False, minimum=0, maximum=2)
MAX_TOKENS = Range("max_tokens", integer=True, minimum=0, exclusive_minimum=True)
BATCH_SIZE = Range("batch_size", integer=True, minimum=0, exclusive_minimum=True)
POLL_INTERVAL = Range("poll_interval", integer=False, minimum=0, exclusive_minimum=True)
TIMEOUT_HOURS = Range("timeout_hours", integer=False, minimum=0, exclusive_minimum=True)
MAX_ATTEMPTS = Range("max_attempts", integer=True, minimum=1)
MAX_TURNS = Range("max_turns", integer=True, minimum=1, maximum=100)
BUDGET_USD = Range("budget_usd", integer=False, minimum=0)
# A dry run's precision plan (`speceval run --dry-run`): the rate and intra-input correlation it assumes.
# A rate of 0 or 1 has no sampling spread to plan for (the plan's model refuses both).
ASSUME_RATE = Range("assume_rate", integer=False, minimum=0, maximum=1, exclusive_minimum=True, exclusive_maximum=True)
ASSUME_ICC = Range("assume_icc", integer=False, minimum=0, maximum=1)
# `speceval label-sheet`: how many answers to sample, and the sample's seed (numpy takes no negative seed).
SAMPLE_SIZE = Range("n", integer=True, minimum=1)
SEED = Range("seed", integer=True, minimum=0)
# `speceval report --likert-drop`: a Likert flip is a drop of at least this many points (1-4 on a 1-5 scale).
LIKERT_DROP = Range("likert_drop", integer=True, minimum=1, maximum=4)
# Realtime runs' pace and retries.
RPM = Range("rpm", integer=False, minimum=0, exclusive_minimum=True)
TPM = Range("tpm", integer=False, minimum=0, exclusive_minimum=True)
MAX_CONCURRENCY = Range("max_concurrency", integer=True, minimum=1)
RATE_PERIOD_SECONDS = Range("rate_period_seconds", integer=False, minimum=0, exclusive_minimum=True)
RETRY_INITIAL_DELAY = Range("retry_initial_delay", integer=False, minimum=0, exclusive_minimum=True)
RETRY_BACKOFF_FACTOR = Range("retry_backoff_factor", integer=False, minimum=1)
REQUEST_TIMEOUT = Range("request_timeout", integer=False, minimum=0, exclusive_minimum=True)
# Service tiers: how long a request waits out flex refusals before `on_flex_unavailable`, and a study's deadline.
FLEX_PATIENCE = Range("flex_patience", integer=False, minimum=0)
DEADLINE_HOURS = Range("deadline_hours", integer=False, minimum=0, exclusive_minimum=True)
# What `tier: auto` expects a tier to take before the run's own jobs teach it (engines/tier_plan.TierTimes).
BATCH_TURNAROUND_HOURS = Range("batch_turnaround_hours", integer=False, minimum=0, exclusive_minimum=True)
CALL_SECONDS = Range("call_seconds", integer=False, minimum=0, exclusive_minimum=True)
# Ray runs' vLLM engines.
TENSOR_PARALLEL_SIZE = Range("tensor_parallel_size", integer=True, minimum=1)
REPLICAS = Range("replicas", integer=True, minimum=1)


def check(setting: Range, value: float, *, source: str | None = None) -> float:
    """`value` if `setting` allows it; otherwise a ConfigError naming `source` (default: the flag)."""
    problem = setting.problem(value)
    if problem is not None:
        raise ConfigError(f"{source or setting.flag} {problem}")
    return value


def flag_type(setting: Range) -> Callable[[str], float]:
    """An argparse `type=` that parses a flag's text and refuses a value out of range (argparse exits 2)."""

    def parse(text: str) -> float:
        try:
            value: float = int(text) if setting.integer else float(text)
        except ValueError:
            kind = "a whole number" if setting.integer else "a number"
            raise argparse.ArgumentTypeError(f"must be {kind} (got {text!r})") from None
        problem = setting.problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = setting.name  # argparse names the type in some messages
    return parse

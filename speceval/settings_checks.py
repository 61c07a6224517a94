"""The allowed range of each run setting, defined once for command-line flags, YAML keys and the environment.

A value out of range is refused with the same words wherever it comes from, e.g. "must be between 0 and 2
(got -1)": a flag through `flag_type` (argparse prints it and exits 2 before anything happens), a YAML key through
the annotated types below (the config loaders name the file, line and key), an environment variable through
`check`.

    temperature: Temperature | None = None        # in a pydantic schema of a YAML file
    parser.add_argument("--temperature", type=flag_type(TEMPERATURE))
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from speceval.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The values one setting accepts.

    Attributes:
        name: the setting's name (the YAML key; the flag is `--` + name with dashes).
        integer: whole numbers only.
        minimum: the lowest allowed value (None: no lower bound).
        maximum: the highest allowed value (None: no upper bound).
        exclusive_minimum: the minimum itself is not allowed (e.g. "greater than 0").
    """

    name: str
    integer: bool
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False

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
        too_high = high is not None and value > high
        if not (too_low or too_high):
            return None
        if low is not None and high is not None:
            expected = f"between {_show(low)} and {_show(high)}"
        elif high is not None:
            expected = f"at most {_show(high)}"
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
            schema["maximum"] = self.maximum
        return schema


def _show(number: float | None) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


TEMPERATURE = Range("temperature", integer=False, minimum=0, maximum=2)
MAX_TOKENS = Range("max_tokens", integer=True, minimum=0, exclusive_minimum=True)
BATCH_SIZE = Range("batch_size", integer=True, minimum=0, exclusive_minimum=True)
POLL_INTERVAL = Range("poll_interval", integer=False, minimum=0, exclusive_minimum=True)
TIMEOUT_HOURS = Range("timeout_hours", integer=False, minimum=0, exclusive_minimum=True)
MAX_ATTEMPTS = Range("max_attempts", integer=True, minimum=1)
BUDGET_USD = Range("budget_usd", integer=False, minimum=0)
# Realtime runs' pace and retries.
RPM = Range("rpm", integer=False, minimum=0, exclusive_minimum=True)
TPM = Range("tpm", integer=False, minimum=0, exclusive_minimum=True)
MAX_CONCURRENCY = Range("max_concurrency", integer=True, minimum=1)
RATE_PERIOD_SECONDS = Range("rate_period_seconds", integer=False, minimum=0, exclusive_minimum=True)
RETRY_INITIAL_DELAY = Range("retry_initial_delay", integer=False, minimum=0, exclusive_minimum=True)
RETRY_BACKOFF_FACTOR = Range("retry_backoff_factor", integer=False, minimum=1)
REQUEST_TIMEOUT = Range("request_timeout", integer=False, minimum=0, exclusive_minimum=True)
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


def _checked(setting: Range) -> tuple[AfterValidator, WithJsonSchema]:
    """Pydantic metadata: the range check with the flags' message, and the range in the JSON Schema."""

    def validate(value: float) -> float:
        problem = setting.problem(value)
        if problem is not None:
            raise PydanticCustomError("out_of_range", problem)
        return value

    return AfterValidator(validate), WithJsonSchema(setting.json_schema())


# Types for pydantic schemas of YAML files: the same ranges and messages as the flags.
Temperature = Annotated[float, *_checked(TEMPERATURE)]
MaxTokens = Annotated[int, *_checked(MAX_TOKENS)]
BatchSize = Annotated[int, *_checked(BATCH_SIZE)]
PollInterval = Annotated[float, *_checked(POLL_INTERVAL)]
TimeoutHours = Annotated[float, *_checked(TIMEOUT_HOURS)]
MaxAttempts = Annotated[int, *_checked(MAX_ATTEMPTS)]
BudgetUsd = Annotated[float, *_checked(BUDGET_USD)]
# Endpoints of models without a batch API (realtime and Ray runs).
Rpm = Annotated[float, *_checked(RPM)]
Tpm = Annotated[float, *_checked(TPM)]
MaxConcurrency = Annotated[int, *_checked(MAX_CONCURRENCY)]
RatePeriodSeconds = Annotated[float, *_checked(RATE_PERIOD_SECONDS)]
RetryInitialDelay = Annotated[float, *_checked(RETRY_INITIAL_DELAY)]
RetryBackoffFactor = Annotated[float, *_checked(RETRY_BACKOFF_FACTOR)]
RequestTimeout = Annotated[float, *_checked(REQUEST_TIMEOUT)]
TensorParallelSize = Annotated[int, *_checked(TENSOR_PARALLEL_SIZE)]
Replicas = Annotated[int, *_checked(REPLICAS)]

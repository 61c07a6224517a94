"""The allowed range of each run setting, defined once for command-line flags, YAML keys and the environment.

A value out of range is refused with the same words wherever it comes from, e.g. "must be between 0 and 2
(got -1)": a flag through `flag_type` (argparse prints it and exits 2 before anything happens), a YAML key through
the annotated types below (the config loaders name the file, line and key), an environment variable through
`check`.

    temperature: Temperature | None = None        # in a pydantic schema of a YAML file
    parser.add_argument("--temperature", type=flag_type(TEMPERATURE))

The ranges, `check` and `flag_type` are defined in `speceval.ranges` (no pydantic, so parsers stay light) and
re-exported here beside the pydantic types.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Strict, WithJsonSchema
from pydantic_core import PydanticCustomError

from speceval.ranges import (
    BATCH_SIZE,
    BUDGET_USD,
    DEADLINE_HOURS,
    FLEX_PATIENCE,
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_TOKENS,
    MAX_TURNS,
    POLL_INTERVAL,
    RATE_PERIOD_SECONDS,
    REPLICAS,
    REQUEST_TIMEOUT,
    RETRY_BACKOFF_FACTOR,
    RETRY_INITIAL_DELAY,
    RPM,
    TEMPERATURE,
    TENSOR_PARALLEL_SIZE,
    TIMEOUT_HOURS,
    TPM,
    Range,
    check,
    flag_type,
)

# Everything importers of this module use: the ranges (re-exported) and the pydantic types below.
__all__ = [
    "BATCH_SIZE",
    "BUDGET_USD",
    "MAX_ATTEMPTS",
    "MAX_TURNS",
    "MAX_CONCURRENCY",
    "MAX_TOKENS",
    "POLL_INTERVAL",
    "RATE_PERIOD_SECONDS",
    "REPLICAS",
    "REQUEST_TIMEOUT",
    "FLEX_PATIENCE",
    "DEADLINE_HOURS",
    "RETRY_BACKOFF_FACTOR",
    "RETRY_INITIAL_DELAY",
    "RPM",
    "TEMPERATURE",
    "TENSOR_PARALLEL_SIZE",
    "TIMEOUT_HOURS",
    "TPM",
    "Range",
    "check",
    "flag_type",
    "BatchSize",
    "BudgetUsd",
    "MaxAttempts",
    "MaxTurns",
    "MaxTokens",
    "PollInterval",
    "Temperature",
    "TimeoutHours",
    "Rpm",
    "Tpm",
    "MaxConcurrency",
    "RatePeriodSeconds",
    "RetryInitialDelay",
    "RetryBackoffFactor",
    "RequestTimeout",
    "TensorParallelSize",
    "Replicas",
]


def _checked(setting: Range) -> tuple[Any, ...]:
    """Pydantic metadata: the range check with the flags' message, and the range in the JSON Schema. Every setting
    is strict: YAML's `true` is not 1 (`max_turns: true` would otherwise run one turn, `temperature: true` sample at
    1.0); a whole number is still a number where a fraction is allowed."""

    def validate(value: float) -> float:
        problem = setting.problem(value)
        if problem is not None:
            raise PydanticCustomError("out_of_range", problem)
        return value

    checks = (AfterValidator(validate), WithJsonSchema(setting.json_schema()))
    return (Strict(), *checks)


# Types for pydantic schemas of YAML files: the same ranges and messages as the flags.
Temperature = Annotated[float, *_checked(TEMPERATURE)]
MaxTokens = Annotated[int, *_checked(MAX_TOKENS)]
BatchSize = Annotated[int, *_checked(BATCH_SIZE)]
PollInterval = Annotated[float, *_checked(POLL_INTERVAL)]
TimeoutHours = Annotated[float, *_checked(TIMEOUT_HOURS)]
MaxAttempts = Annotated[int, *_checked(MAX_ATTEMPTS)]
MaxTurns = Annotated[int, *_checked(MAX_TURNS)]
BudgetUsd = Annotated[float, *_checked(BUDGET_USD)]
# Endpoints of models without a batch API (realtime and Ray runs).
Rpm = Annotated[float, *_checked(RPM)]
Tpm = Annotated[float, *_checked(TPM)]
MaxConcurrency = Annotated[int, *_checked(MAX_CONCURRENCY)]
RatePeriodSeconds = Annotated[float, *_checked(RATE_PERIOD_SECONDS)]
RetryInitialDelay = Annotated[float, *_checked(RETRY_INITIAL_DELAY)]
RetryBackoffFactor = Annotated[float, *_checked(RETRY_BACKOFF_FACTOR)]
RequestTimeout = Annotated[float, *_checked(REQUEST_TIMEOUT)]
FlexPatience = Annotated[float, *_checked(FLEX_PATIENCE)]
DeadlineHours = Annotated[float, *_checked(DEADLINE_HOURS)]
TensorParallelSize = Annotated[int, *_checked(TENSOR_PARALLEL_SIZE)]
Replicas = Annotated[int, *_checked(REPLICAS)]

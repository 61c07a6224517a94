"""Flags shared by the generation and judge commands, built from light modules only.

They live here, not beside the settings they fill (`speceval.realtime.settings`, `speceval.raydata.settings`),
because those modules import pydantic and the engine: `--help` must not. All flags default to None, so 'not
given' is distinct from 'given the default'.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

import speceval.ranges as ranges
from speceval.defaults import (
    DEFAULT_FLEX_PATIENCE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_TOKENS,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT_HOURS,
    PRICES_ENV,
    FlexFallback,
    Tier,
)
from speceval.errors import ConfigError
from speceval.ranges import Range, check, flag_type

#: A range-checked flag: its name, the range its value must lie in, and its help text.
RangedFlag = tuple[str, Range, str]


def add_ranged_flags(target: argparse._ActionsContainer, flags: Iterable[RangedFlag]) -> None:
    """Add each flag with its range's checker as the type (so a value out of range is refused by the parser)."""
    for flag, setting, text in flags:
        target.add_argument(flag, type=flag_type(setting), help=text)


def add_offline_flag(parser: argparse.ArgumentParser, made: str) -> None:
    """`--offline`: the built-in emulator serves every call, so what it makes (`made`: answers, verdicts, inputs)
    is synthetic; every command that sends requests takes it with this meaning."""
    parser.add_argument("--offline", action="store_true", help=f"use the built-in emulator (synthetic {made})")


def add_engine_arguments(parser: argparse.ArgumentParser, batch_size: int, answer: str) -> None:
    """The batch engine's flags of a generation or judge command (`answer`: what one request's answer is)."""
    add_ranged_flags(
        parser,
        (
            ("--batch-size", ranges.BATCH_SIZE, f"most requests per provider job (default {batch_size})"),
            ("--temperature", ranges.TEMPERATURE, "sampling temperature, 0-2 (default 0.0)"),
            ("--max-tokens", ranges.MAX_TOKENS, f"most output tokens per {answer} (default {DEFAULT_MAX_TOKENS})"),
            (
                "--poll-interval",
                ranges.POLL_INTERVAL,
                f"seconds between polls (default $SPECEVAL_POLL_INTERVAL or {DEFAULT_POLL_INTERVAL:g})",
            ),
            (
                "--timeout-hours",
                ranges.TIMEOUT_HOURS,
                f"stop waiting after this long (default {DEFAULT_TIMEOUT_HOURS:g})",
            ),
            (
                "--max-attempts",
                ranges.MAX_ATTEMPTS,
                f"jobs one request may be sent in (default {DEFAULT_MAX_ATTEMPTS})",
            ),
        ),
    )


def add_vertex_arguments(parser: argparse.ArgumentParser, description: str, *, from_yaml: bool) -> None:
    """Where Vertex AI batch prediction runs and keeps its files (`from_yaml`: the judge's YAML may say it too)."""
    vertex = parser.add_argument_group("vertex", description)
    yaml = "YAML {}, " if from_yaml else ""
    vertex.add_argument(
        "--project", help=f"Google Cloud project (default: {yaml.format('project')}$GOOGLE_CLOUD_PROJECT)"
    )
    vertex.add_argument(
        "--location",
        help=f"Vertex AI region, e.g. us-central1 (default: {yaml.format('location')}$GOOGLE_CLOUD_LOCATION)",
    )
    vertex.add_argument("--input-bucket", help="Cloud Storage bucket the request files are uploaded to")
    vertex.add_argument("--output-bucket", help="Cloud Storage bucket the jobs write their predictions to")


def add_cost_arguments(parser: argparse.ArgumentParser) -> None:
    """`--dry-run`, `--budget-usd` and `--prices`: what a batch command would spend, and a ceiling on it."""
    parser.add_argument(
        "--dry-run", action="store_true", help="write the request files and print the estimated cost; submit nothing"
    )
    parser.add_argument(
        "--budget-usd",
        type=flag_type(ranges.BUDGET_USD),
        help="stop submitting when the next job's estimated cost would exceed this",
    )
    parser.add_argument("--prices", type=Path, help=f"price table overriding the shipped one (or ${PRICES_ENV})")


def limit_flags(prefix: str = "--") -> tuple[RangedFlag, ...]:
    """The realtime rate-limit flags, named `{prefix}rpm`, ...: the candidate's (`--rpm`) and the simulated user's
    (`--simulated-user-rpm`), with one range and one help text."""
    period = f"{prefix}rate-period-seconds"
    return (
        (f"{prefix}rpm", ranges.RPM, f"requests per minute (per {period})"),
        (f"{prefix}tpm", ranges.TPM, f"tokens (input + output) per minute (per {period})"),
        (
            f"{prefix}max-concurrency",
            ranges.MAX_CONCURRENCY,
            f"requests in flight at once (default {DEFAULT_MAX_CONCURRENCY})",
        ),
        (
            period,
            ranges.RATE_PERIOD_SECONDS,
            f"the period {prefix}rpm and {prefix}tpm count over (default 60; shorter only for tests)",
        ),
    )


def add_realtime_arguments(parser: argparse.ArgumentParser) -> None:
    """The realtime flags (all default to None: 'not given' is distinct from 'given the default')."""
    group = parser.add_argument_group(
        "realtime",
        "rate-limited concurrent calls instead of a batch API (--org openai-compatible|together, or "
        "--realtime for openai/anthropic/google)",
    )
    group.add_argument("--realtime", action="store_true", help="use the provider's realtime chat endpoint")
    group.add_argument("--base-url", help="endpoint base URL, e.g. http://localhost:8000/v1 for vLLM")
    group.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    add_ranged_flags(
        group,
        (
            *limit_flags(),
            ("--retry-initial-delay", ranges.RETRY_INITIAL_DELAY, "seconds before the first retry (default 1)"),
            ("--retry-backoff-factor", ranges.RETRY_BACKOFF_FACTOR, "growth of the retry delay (default 2)"),
            ("--request-timeout", ranges.REQUEST_TIMEOUT, "seconds before a call is abandoned (default 600)"),
        ),
    )
    add_ray_arguments(parser)
    add_tier_arguments(parser)


def add_tier_arguments(parser: argparse.ArgumentParser) -> None:
    """`--tier` and what goes with it (docs/service-tiers.md); all default to None (not given)."""
    group = parser.add_argument_group(
        "service tier", "batch (default), flex (synchronous at batch rates, best effort), standard, or auto"
    )
    group.add_argument(
        "--tier",
        choices=[t.value for t in Tier],
        help="where requests go: the Batch API, flex (OpenAI, Gemini), the standard realtime endpoint, or auto: the "
        "cheapest that meets --deadline-hours",
    )
    numbers = (
        ("--deadline-hours", ranges.DEADLINE_HOURS, "with --tier auto: hours the run must end within"),
        (
            "--batch-turnaround-hours",
            ranges.BATCH_TURNAROUND_HOURS,
            "with --tier auto: hours a batch round trip is expected to take until this output folder's own jobs "
            "say (default 6 for OpenAI and Gemini, 1 for Anthropic)",
        ),
        (
            "--flex-seconds",
            ranges.CALL_SECONDS,
            "with --tier auto: seconds one flex call is expected to take, queueing included (default 120)",
        ),
    )
    for flag, setting, help_text in numbers:
        group.add_argument(flag, type=flag_type(setting), help=help_text)
    group.add_argument(
        "--flex-patience",
        type=flag_type(ranges.FLEX_PATIENCE),
        help=f"seconds a request keeps retrying flex refusals (default {DEFAULT_FLEX_PATIENCE:.0f})",
    )
    group.add_argument(
        "--on-flex-unavailable",
        choices=[f.value for f in FlexFallback],
        help="then: wait (keep asking at flex; default), standard (full price) or batch (a batch job)",
    )


def add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    """The `--org ray` flags (all default to None: 'not given' is distinct from 'given the default')."""
    group = parser.add_argument_group(
        "ray", "open-weights models through Ray Data LLM (--org ray): --base-url for an endpoint, or --vllm"
    )
    group.add_argument("--vllm", action="store_true", default=None, help="run vLLM engines on the cluster's GPUs")
    group.add_argument(
        "--tensor-parallel-size", type=flag_type(ranges.TENSOR_PARALLEL_SIZE), help="GPUs per vLLM engine (default 1)"
    )
    group.add_argument(
        "--replicas", type=flag_type(ranges.REPLICAS), help="vLLM engines, one per group of GPUs (default 1)"
    )
    group.add_argument("--engine-arg", action="append", metavar="K=V", help="extra vLLM engine argument (repeatable)")
    group.add_argument("--ray-address", help="Ray cluster to join, e.g. ray://head:10001 (default: a local Ray)")


def given_poll_interval(flag: float | None) -> float | None:
    """`--poll-interval` if given, else `$SPECEVAL_POLL_INTERVAL` (range-checked) if set, else None."""
    if flag is not None or not os.environ.get("SPECEVAL_POLL_INTERVAL"):
        return flag
    try:
        poll = float(os.environ["SPECEVAL_POLL_INTERVAL"])
    except ValueError:
        raise ConfigError("SPECEVAL_POLL_INTERVAL must be a number of seconds") from None
    return check(ranges.POLL_INTERVAL, poll, source="SPECEVAL_POLL_INTERVAL")

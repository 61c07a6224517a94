"""Flags shared by the generation and judge commands, built from light modules only.

They live here, not beside the settings they fill (`speceval.realtime.settings`, `speceval.raydata.settings`),
because those modules import pydantic and the engine: `--help` must not. All flags default to None, so 'not
given' is distinct from 'given the default'.
"""

from __future__ import annotations

import argparse
import os

from speceval.defaults import DEFAULT_FLEX_PATIENCE, DEFAULT_MAX_CONCURRENCY, FlexFallback, Tier
from speceval.errors import ConfigError
from speceval.ranges import (
    DEADLINE_HOURS,
    FLEX_PATIENCE,
    MAX_CONCURRENCY,
    POLL_INTERVAL,
    RATE_PERIOD_SECONDS,
    REPLICAS,
    REQUEST_TIMEOUT,
    RETRY_BACKOFF_FACTOR,
    RETRY_INITIAL_DELAY,
    RPM,
    TENSOR_PARALLEL_SIZE,
    TPM,
    check,
    flag_type,
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
    group.add_argument("--rpm", type=flag_type(RPM), help="requests per minute (per --rate-period-seconds)")
    group.add_argument(
        "--tpm", type=flag_type(TPM), help="tokens (input + output) per minute (per --rate-period-seconds)"
    )
    group.add_argument(
        "--max-concurrency",
        type=flag_type(MAX_CONCURRENCY),
        help=f"requests in flight at once (default {DEFAULT_MAX_CONCURRENCY})",
    )
    group.add_argument(
        "--rate-period-seconds",
        type=flag_type(RATE_PERIOD_SECONDS),
        help="the period --rpm and --tpm count over (default 60; shorter only for tests)",
    )
    group.add_argument(
        "--retry-initial-delay", type=flag_type(RETRY_INITIAL_DELAY), help="seconds before the first retry (default 1)"
    )
    group.add_argument(
        "--retry-backoff-factor", type=flag_type(RETRY_BACKOFF_FACTOR), help="growth of the retry delay (default 2)"
    )
    group.add_argument(
        "--request-timeout", type=flag_type(REQUEST_TIMEOUT), help="seconds before a call is abandoned (default 600)"
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
    group.add_argument(
        "--deadline-hours", type=flag_type(DEADLINE_HOURS), help="with --tier auto: hours the run must end within"
    )
    group.add_argument(
        "--flex-patience",
        type=flag_type(FLEX_PATIENCE),
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
        "--tensor-parallel-size", type=flag_type(TENSOR_PARALLEL_SIZE), help="GPUs per vLLM engine (default 1)"
    )
    group.add_argument("--replicas", type=flag_type(REPLICAS), help="vLLM engines, one per group of GPUs (default 1)")
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
    return check(POLL_INTERVAL, poll, source="SPECEVAL_POLL_INTERVAL")

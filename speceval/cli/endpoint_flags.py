"""The realtime and Ray flags of a command, read off its parsed arguments into the typed values the layers below
take (`speceval.realtime.settings`, `speceval.raydata.settings` never see the argparse object)."""

from __future__ import annotations

import argparse
from typing import Any

from speceval.errors import ConfigError
from speceval.raydata.settings import FLAG_FIELDS as RAY_FIELDS
from speceval.raydata.settings import engine_args
from speceval.realtime.settings import FLAG_FIELDS as REALTIME_FLAGS

RAY_ONLY_FLAGS = ("vllm", "tensor_parallel_size", "replicas", "engine_arg", "ray_address")
"""Flags that apply to `--org ray` alone."""


def ray_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The Ray settings the flags given set (`RaySettings` fields; `--engine-arg` pairs as `engine_args`)."""
    given: dict[str, Any] = {
        name: getattr(args, name)
        for name in RAY_FIELDS
        if name != "engine_args" and getattr(args, name, None) is not None
    }
    if getattr(args, "engine_arg", None):
        given["engine_args"] = engine_args(args.engine_arg)
    return given


def realtime_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The realtime flags given (flag names of `speceval.realtime.settings.FLAG_FIELDS`) and their values."""
    return {flag: getattr(args, flag) for flag in REALTIME_FLAGS if getattr(args, flag, None) is not None}


def refuse_ray_flags(args: argparse.Namespace) -> None:
    """The Ray-only flags on another org are a usage error, not something to ignore."""
    given = [f"--{name.replace('_', '-')}" for name in RAY_ONLY_FLAGS if getattr(args, name, None)]
    if given:
        raise ConfigError(f"{', '.join(given)} apply to --org ray only")

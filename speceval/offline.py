"""Offline runs: the built-in emulator (`speceval.emulator`) started in-process in place of a provider.

Used by `--offline` on the command line and by `offline=True` in `GenerationConfig` and `JudgeSettings`. The
emulator's state lives in the run directory (`.emulator/`), or in the folder of the judge run or experiment that
created it, so resuming an offline run finds the jobs it created, exactly as a resume against a real provider does.
Answers and verdicts are synthetic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speceval.errors import ConfigError

if TYPE_CHECKING:
    from speceval.emulator import Emulator

OFFLINE_API_KEY = "speceval-offline-emulator"
"""The key adapters send to the emulator (it accepts any key; the SDKs insist on one)."""
# Fast enough for a demo to finish in seconds, slow enough to show jobs moving through their states.
OFFLINE_TURNAROUND_SECONDS = 1.0
"""Seconds the offline emulator takes to finish a job, unless `$SPECEVAL_OFFLINE_TURNAROUND` says otherwise."""
TURNAROUND_VARIABLE = "SPECEVAL_OFFLINE_TURNAROUND"
_TURNAROUND_RANGE = (0.0, 3600.0)


def offline_turnaround() -> float:
    """Seconds each offline job takes: `$SPECEVAL_OFFLINE_TURNAROUND` if set (a test suite or a quick demo sets
    it low; a demo of polling sets it high), else `OFFLINE_TURNAROUND_SECONDS`."""
    given = os.environ.get(TURNAROUND_VARIABLE)
    if not given:
        return OFFLINE_TURNAROUND_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        raise ConfigError(f"{TURNAROUND_VARIABLE} must be a number of seconds, not {given!r}") from None
    low, high = _TURNAROUND_RANGE
    if not low <= seconds <= high:
        raise ConfigError(f"{TURNAROUND_VARIABLE} must be between {low:g} and {high:g} seconds, not {given}")
    return seconds


FAULTS_VARIABLE = "SPECEVAL_OFFLINE_FAULTS"
"""A JSON object of `speceval.emulator.FaultConfig` fields the offline emulator takes (e.g. `{"error_rate": 0.2}`):
an offline study then meets the failures real providers produce (errored, missing, expired requests), to see what
a report and every count make of them before paying. Unset: no faults but the emulator's shuffled result order."""


def offline_faults() -> dict[str, Any]:
    """The offline emulator's fault settings: the turnaround (`offline_turnaround`) and `$SPECEVAL_OFFLINE_FAULTS`'s
    fields, checked against `FaultConfig` here so a typo is a ConfigError naming the field, before anything runs."""
    from pydantic import ValidationError

    from speceval.emulator import FaultConfig

    settings: dict[str, Any] = {"turnaround_seconds": offline_turnaround()}
    given = os.environ.get(FAULTS_VARIABLE)
    if not given:
        return settings
    try:
        fields = json.loads(given)
    except ValueError as exc:
        raise ConfigError(f"{FAULTS_VARIABLE} must be a JSON object of fault settings: {exc}") from None
    if not isinstance(fields, dict):
        raise ConfigError(f"{FAULTS_VARIABLE} must be a JSON object of fault settings, not {given!r}")
    try:
        FaultConfig.model_validate({**settings, **fields})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise ConfigError(f"{FAULTS_VARIABLE}: field {field!r}: {error['msg']}") from None
    return {**settings, **fields}


def offline_poll_interval() -> float:
    """Seconds between polls of an offline run that sets no interval (the 60 s default would sit silent): half
    the emulator's turnaround, so a job is seen done within half a turnaround of finishing."""
    return max(offline_turnaround() / 2, 0.05)


STATE_DIR_NAME = ".emulator"
# A judge target sits two levels below the judge folder that holds its emulator; an experiment's runs sit five
# levels below the experiment folder, and a conversation's rounds two (`rounds/<k>`) or three (`rounds/<k>/user`)
# below its run: `speceval status` or `cancel` of a round opened at six found no state and asked an empty emulator.
_SEARCH_DEPTH = 9
# Realtime-only OpenAI-shaped orgs (and Ray's HTTP processor) use the emulator's /openai/v1/chat/completions.
_OPENAI_SHAPED = ("openai", "openai-compatible", "together", "ray")
OFFLINE_ORGS = (*_OPENAI_SHAPED, "anthropic", "google")
"""The providers an offline run can stand in for."""


def emulator_state_dir(run_dir: Path) -> Path:
    """Where an offline run's emulator state lives: the nearest `.emulator` at or above `run_dir`.

    Judge pipelines and experiments keep one emulator for many runs in a parent folder; resuming or inspecting
    one of those runs must find that state, not start an empty emulator (which would resubmit everything).
    A run with no state anywhere above it gets its own, in `run_dir/.emulator`.
    """
    for folder in [run_dir, *run_dir.parents][:_SEARCH_DEPTH]:
        if (folder / STATE_DIR_NAME).is_dir():
            return folder / STATE_DIR_NAME
    return run_dir / STATE_DIR_NAME


def check_offline_org(org: str) -> None:
    """A ConfigError, before anything starts, for a provider the emulator does not serve."""
    if org not in OFFLINE_ORGS:
        raise ConfigError(f"offline runs support the providers {', '.join(OFFLINE_ORGS)}, not {org!r}")


def emulator_options(emulator: Emulator, org: str) -> dict[str, Any]:
    """Provider options (`base_url`, `api_key`) pointing an adapter of `org` at a running `Emulator`."""
    check_offline_org(org)
    if org in _OPENAI_SHAPED:
        base_url = emulator.openai_base_url
    else:
        base_url = emulator.anthropic_base_url if org == "anthropic" else emulator.gemini_base_url
    return {"base_url": base_url, "api_key": OFFLINE_API_KEY}


@contextmanager
def offline_emulator(state_dir: Path) -> Iterator[Emulator]:
    """An in-process emulator with the offline turnaround, keeping its state in `state_dir`."""
    from speceval.emulator import Emulator, FaultConfig  # the emulator's web stack loads only when used

    with Emulator(faults=FaultConfig(**offline_faults()), state_dir=state_dir) as emulator:
        yield emulator


@contextmanager
def offline_provider(run_dir: Path, org: str) -> Iterator[dict[str, Any]]:
    """Start an in-process emulator for `run_dir`; yields the provider options pointing an adapter at it."""
    check_offline_org(org)
    with offline_emulator(emulator_state_dir(Path(run_dir))) as emulator:
        yield emulator_options(emulator, org)

"""`--offline`: run against the built-in emulator instead of a provider.

The emulator's state lives in the run directory (`.emulator/`), or in the folder of the judge run or experiment
that created it, so `--resume` of an offline run finds the jobs it created, exactly as a resume against a real
provider does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

OFFLINE_API_KEY = "speceval-offline-emulator"
# Fast enough for a demo to finish in seconds, slow enough to show jobs moving through their states.
OFFLINE_TURNAROUND_SECONDS = 1.0
OFFLINE_POLL_INTERVAL = 0.5


STATE_DIR_NAME = ".emulator"
# A judge target sits two levels below the judge folder that holds its emulator; an experiment's runs sit five
# levels below the experiment folder.
_SEARCH_DEPTH = 6


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


@contextmanager
def offline_provider(run_dir: Path, org: str) -> Iterator[dict[str, Any]]:
    """Start an in-process emulator for `run_dir`; yields the provider options pointing an adapter at it."""
    from speceval.emulator import Emulator, FaultConfig

    faults = FaultConfig(turnaround_seconds=OFFLINE_TURNAROUND_SECONDS)
    with Emulator(faults=faults, state_dir=emulator_state_dir(Path(run_dir))) as emulator:
        base_urls = {
            "openai": emulator.openai_base_url,
            "anthropic": emulator.anthropic_base_url,
            "google": emulator.gemini_base_url,
            # realtime-only OpenAI-shaped orgs: the emulator's /openai/v1/chat/completions
            "openai-compatible": emulator.openai_base_url,
            "together": emulator.openai_base_url,
        }
        if org not in base_urls:
            from speceval.errors import ConfigError

            raise ConfigError(f"--offline supports the providers {', '.join(base_urls)}, not {org!r}")
        yield {"base_url": base_urls[org], "api_key": OFFLINE_API_KEY}

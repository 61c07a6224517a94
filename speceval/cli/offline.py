"""`--offline`: run against the built-in emulator instead of a provider.

The emulator's state lives in the run directory (`.emulator/`), so `--resume` of an offline run finds the jobs
it created, exactly as a resume against a real provider does.
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


@contextmanager
def offline_provider(run_dir: Path, org: str) -> Iterator[dict[str, Any]]:
    """Start an in-process emulator for `run_dir`; yields the provider options pointing an adapter at it."""
    from speceval.emulator import Emulator, FaultConfig

    faults = FaultConfig(turnaround_seconds=OFFLINE_TURNAROUND_SECONDS)
    with Emulator(faults=faults, state_dir=Path(run_dir) / ".emulator") as emulator:
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

"""Reopening a run's provider, for the operations commands (status, fetch, cancel).

A run's manifest says which model and provider served it and whether it ran offline; reopening an offline run
restarts the emulator over the state the run left in `<run_dir>/.emulator`, so its jobs are found exactly as a real
provider's would be. Kept apart from `speceval.operations.runs` (which reads files only) so that reading runs for a
report loads no provider or emulator code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from speceval.batch.manifest import RunManifest
from speceval.batch.model import BatchedModel
from speceval.batch.store import RunStore
from speceval.errors import ConfigError
from speceval.offline import offline_provider
from speceval.operations.runs import store_for
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams


@dataclass
class OpenRun:
    """A run directory with its manifest, engine state and a model connected to its provider."""

    run_dir: Path
    manifest: RunManifest
    store: RunStore
    model: BatchedModel


@contextmanager
def open_run(run_dir: Path) -> Iterator[OpenRun]:
    """Reconnect to the provider that serves `run_dir` (starting the offline emulator if the run was offline)."""
    manifest = RunManifest.load(run_dir)
    params = GenerationParams(**manifest.parameters.get("params", {}))
    if "realtime" in manifest.parameters:
        raise ConfigError(f"{run_dir} is a realtime run: it has no provider jobs to track")
    if manifest.offline:
        with offline_provider(run_dir, manifest.provider) as options:
            model = create_batched_model(manifest.model_name, manifest.provider, params, **options)
            yield OpenRun(run_dir, manifest, store_for(run_dir, manifest), model)
        return
    # Provider settings a run remembered (Vertex project, location and buckets) reconnect it as it was created.
    remembered = manifest.parameters.get("vertex", {})
    model = create_batched_model(manifest.model_name, manifest.provider, params, **remembered)
    yield OpenRun(run_dir, manifest, store_for(run_dir, manifest), model)

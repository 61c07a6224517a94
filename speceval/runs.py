"""Finding run directories and reopening their provider, for the operations commands (status, fetch, cancel).

A run directory is any folder with a `run.json` (generation and judge runs alike). Its manifest says which model
and provider served it and whether it ran offline; reopening an offline run restarts the emulator over the state
the run left in `<run_dir>/.emulator`, so its jobs are found exactly as a real provider's would be.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from speceval.batch.model import BatchedModel, GenerationParams
from speceval.batch.store import RunStore
from speceval.errors import ConfigError, InputError
from speceval.manifest import MANIFEST_NAME, RunManifest
from speceval.offline import offline_provider
from speceval.providers.registry import create_batched_model

# Where each kind of run keeps the engine's per-request records (judge runs keep verdicts in results/).
_RESULTS_SUBDIR = {"generation": "results"}
_JUDGE_RESULTS_SUBDIR = "judge_responses"


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every run directory at or below `paths`, sorted; an InputError for a path that does not exist."""
    found: set[Path] = set()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "no such file or directory")
        if (path / MANIFEST_NAME).is_file():
            found.add(path)
        # Runs nest (an experiment holds many); an emulator's own state is never a run.
        found.update(p.parent for p in path.rglob(MANIFEST_NAME) if ".emulator" not in p.parts)
    return sorted(found)


def store_for(run_dir: Path, manifest: RunManifest) -> RunStore:
    """The engine state of a run, with the results folder its kind uses."""
    return RunStore(run_dir, results_subdir=_RESULTS_SUBDIR.get(manifest.kind, _JUDGE_RESULTS_SUBDIR))


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

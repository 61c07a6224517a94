"""`experiment.json`: the record of an experiment folder (its plan, which tasks are done, how it stopped), and the
rules for continuing a folder (the same file, or only changes that may change; never mixing --offline with real
answers; variation names and folders as they were first written).

Split from `speceval.experiments.runner`, which opens this state before running and saves it on every task change.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.atomic import atomic_write_json
from speceval.batch.records import SCHEMA_VERSION, utcnow
from speceval.engines.tier_plan import Replan
from speceval.errors import ConfigError
from speceval.experiments.changes import CHANGEABLE_KEYS, grid_digest, refused_changes, settings_of
from speceval.experiments.config import ExperimentConfig
from speceval.experiments.grid import Group
from speceval.experiments.loading import load_experiment
from speceval.experiments.scheduler import TaskState
from speceval.offline import STATE_DIR_NAME
from speceval.paths import READABLE_NAMING

logger = logging.getLogger(__name__)


class ExperimentState(BaseModel):
    """`<output_dir>/experiment.json`: the plan and which stages are done."""

    schema_version: int = SCHEMA_VERSION
    experiment_name: str
    config_sha256: str
    variations: dict[str, dict[str, Any]] = Field(description="variation name → its settings")
    generation_runs: list[str]
    stages_done: list[str] = Field(default_factory=list, description="stages whose every task has finished")
    tasks: dict[str, TaskState] = Field(default_factory=dict, description="task → its state (see stages.py)")
    offline: bool | None = Field(
        default=None,
        description="run against the emulator (synthetic answers); None in folders started before this was recorded",
    )
    grid_sha256: str | None = Field(
        default=None,
        description="hash of the file's settings other than the report's "
        "(labels, min_canary_accuracy), which may change between runs; None in folders "
        "started before this was recorded",
    )
    naming: int | None = Field(
        default=None,
        description="how variation folders are named (speceval.paths: "
        "READABLE_NAMING); None in folders started before this was recorded, which keep "
        "their percent-encoded names",
    )
    folders: dict[str, str] | None = Field(
        default=None,
        description="variation name → its folder under "
        "generations/<spec>/, compliance/<spec>/, ranking/<spec>/; None in "
        "folders started before this was recorded",
    )
    settings: dict[str, Any] | None = Field(
        default=None,
        description="the file's settings at the last run (what a "
        "changed file is compared with, key by key); None in folders started "
        "before this was recorded",
    )
    labels_path: str | None = Field(
        default=None,
        description="the labels file the report reads (settings' labels, relative to the experiment file, resolved), "
        "so that `speceval report` on this folder finds it; None without labels or in folders started before this "
        "was recorded",
    )
    status: str = Field(
        default="running", description="running, finished, stopped (timeout or budget) or interrupted (Ctrl+C)"
    )
    stopped_at: str | None = Field(default=None, description="when the last run stopped early (UTC, ISO 8601)")
    tiers_started_at: str | None = Field(
        default=None,
        description="when the study first started sending (UTC, ISO 8601): the clock of `tier: auto`'s deadline, "
        "which a re-plan between rounds reads (a dry run or a refused start does not start it)",
    )
    replans: list[Replan] = Field(
        default_factory=list,
        description="`tier: auto`: each round sent at another tier than the plan had for it, and why (the hours of "
        "the deadline left as it started, what a batch round trip was taking), in the order they happened",
    )
    updated_at: str = Field(default_factory=lambda: utcnow().isoformat())


def check_started(output_dir: Path, path: Path, state: ExperimentState, offline: bool) -> None:
    started_offline = _started_offline(output_dir, state)
    if started_offline is not None and started_offline != offline:
        raise ConfigError(
            f"{output_dir} was run {'with' if started_offline else 'without'} --offline (its answers are "
            f"{'synthetic' if started_offline else 'from the providers'}); a folder never mixes synthetic and "
            f"real answers: {'add' if started_offline else 'drop'} --offline to continue it, or use another "
            "output_dir"
        )
    if state.config_sha256 == hashlib.sha256(path.read_bytes()).hexdigest():
        return
    config = load_experiment(path)
    if state.settings is not None:
        refused = refused_changes(state.settings, settings_of(config))
        if not refused:
            return  # budget, polling, report-only keys: taken as they are now
        raise ConfigError(
            f"{path} changed since {output_dir} was started: {'; '.join(refused)}. Only "
            f"{', '.join(sorted(CHANGEABLE_KEYS))} may change on a started experiment; use another output_dir for "
            "a different experiment"
        )
    if state.grid_sha256 is None or state.grid_sha256 != grid_digest(config):
        raise ConfigError(
            f"{path} changed since {output_dir} was started; use another output_dir for a different experiment"
        )


def _started_offline(output_dir: Path, state: ExperimentState) -> bool | None:
    """Whether the folder's answers are synthetic; for folders started before that was recorded, what its emulator
    state or its generation runs say (None: nothing ran yet, either way is fine)."""
    if state.offline is not None:
        return state.offline
    if (output_dir / STATE_DIR_NAME).is_dir():
        return True
    for run_dir in state.generation_runs:
        manifest = Path(run_dir) / "run.json"
        if manifest.is_file():
            try:
                return bool(json.loads(manifest.read_text(encoding="utf-8")).get("offline", False))
            except (OSError, ValueError, AttributeError):
                continue  # unreadable: the next run of the folder may tell; none telling means nothing ran yet
    return None


def open_state(
    output_dir: Path,
    config: ExperimentConfig,
    path: Path,
    variations: dict[str, dict[str, Any]],
    groups: list[Group],
    offline: bool,
) -> ExperimentState:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    existing = output_dir / STATE_NAME
    if existing.is_file():
        state = ExperimentState.model_validate_json(existing.read_bytes())
        check_started(output_dir, path, state, offline)
        if state.variations != variations:
            # Started by a version that named variations differently: its runs live in other directories.
            raise ConfigError(
                f"{output_dir} names its variations {', '.join(state.variations)}, not "
                f"{', '.join(variations)}; finish it with the speceval that started it"
            )
        # An accepted change (a raised budget) becomes what the next run compares with.
        state.config_sha256, state.settings = digest, settings_of(config)
        state.labels_path = _labels_path(config, path)
        return state
    state = ExperimentState(
        experiment_name=config.experiment_name,
        config_sha256=digest,
        grid_sha256=grid_digest(config),
        variations=variations,
        generation_runs=[str(run.run_dir) for group in groups for run in group.runs],
        offline=offline,
        naming=READABLE_NAMING,
        folders={group.variation: group.folder for group in groups},
        settings=settings_of(config),
        labels_path=_labels_path(config, path),
    )
    save_state(output_dir, state)
    return state


def _labels_path(config: ExperimentConfig, path: Path) -> str | None:
    return str((path.parent / config.labels).resolve()) if config.labels is not None else None


def started_state(output_dir: Path) -> ExperimentState | None:
    """The folder's experiment.json, or None when there is none yet (or it is unreadable: `open_state` reports that)."""
    existing = output_dir / STATE_NAME
    if not existing.is_file():
        return None
    try:
        return ExperimentState.model_validate_json(existing.read_bytes())
    except ValueError:
        return None


def started_names(
    output_dir: Path, started: ExperimentState | None, variations: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The variations under the names the experiment folder already uses, when only their names differ.

    Folders started before variations were named (`v0`, `v1`, ... in the order of the combinations) keep those
    names: their runs, judgements and tables live under them, and renaming paid-for directories is not ours to do.
    """
    named = started.variations if started is not None else variations
    if list(named) != list(variations) and list(named.values()) == list(variations.values()):
        logger.warning(
            "%s was started with the variation names %s; continuing with them (a new experiment folder would use %s)",
            output_dir,
            ", ".join(named),
            ", ".join(variations),
        )
        return dict(named)
    return variations


def save_state(output_dir: Path, state: ExperimentState) -> None:
    state.updated_at = utcnow().isoformat()
    atomic_write_json(output_dir / STATE_NAME, state)

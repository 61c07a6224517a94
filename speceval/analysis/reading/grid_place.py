"""Where a run sits in an experiment grid, read from the `experiment.json` above it.

An experiment lays its runs out as `<stage>/<spec>/<variation folder>/run<k>/...`. The variation folder's name is
made for the disk (readable, or percent-encoded in folders started before readable names), so what it stands for
is looked up in the folder → variation mapping experiment.json records, never parsed from the name. The report
(`speceval.analysis.reading.load`) and the operations tables (`speceval.cli.console`) both read it here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from speceval.errors import InputError
from speceval.paths import folder_names

STATE_NAME = "experiment.json"


class GridFolders(BaseModel):
    """What an experiment.json says about its folders."""

    variations: dict[str, dict[str, Any]] = Field(description="variation name → its settings")
    by_folder: dict[str, str] = Field(description="variation folder name → variation name")


class GridPlace(BaseModel):
    """A run's place in an experiment grid."""

    spec_folder: str = Field(description="the spec's folder (the spec name, made safe for the disk)")
    variation: str = Field(description="the variation's name as the experiment file gives it")
    settings: dict[str, Any] = Field(default_factory=dict, description="the variation's settings")
    run: int = Field(description="the repeat, from 1")


def read_grid_folders(state_file: Path) -> GridFolders:
    """The variations and their folders recorded in `state_file`; folders started before folders were recorded
    use the naming they were started with (`naming` absent: percent-encoded)."""
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(state_file, f"not a readable experiment state file: {exc}") from None
    variations = data.get("variations") if isinstance(data, dict) else None
    if not isinstance(variations, dict) or not all(isinstance(v, dict) for v in variations.values()):
        raise InputError(state_file, "not an experiment state file", field="variations")
    folders = data.get("folders")
    if folders is None:
        try:
            folders = folder_names(list(variations), data.get("naming"))
        except ValueError as exc:
            raise InputError(state_file, str(exc), field="naming") from None
    if not isinstance(folders, dict):
        raise InputError(state_file, "not an experiment state file", field="folders")
    return GridFolders(
        variations={str(k): dict(v) for k, v in variations.items()},
        by_folder={str(folder): str(name) for name, folder in folders.items()},
    )


def grid_place(path: Path, cache: dict[Path, GridFolders] | None = None) -> GridPlace | None:
    """The place of `path` (a run folder or a file inside one) in the nearest experiment grid above it; None when
    no experiment.json is above it or `path` is not below `<stage>/<spec>/<variation>/run<k>/` (e.g. canaries).

    `cache` keeps each experiment.json read across the many files of one report.
    """
    resolved = path.resolve()
    for folder in resolved.parents:
        state_file = folder / STATE_NAME
        if not state_file.is_file():
            continue
        parts = resolved.relative_to(folder).parts
        if len(parts) < 4 or not parts[3].startswith("run") or not parts[3][3:].isdigit():
            return None
        if cache is None or state_file not in cache:
            found = read_grid_folders(state_file)
            if cache is not None:
                cache[state_file] = found
        else:
            found = cache[state_file]
        name = found.by_folder.get(parts[2], parts[2])
        return GridPlace(
            spec_folder=parts[1], variation=name, settings=found.variations.get(name, {}), run=int(parts[3][3:])
        )
    return None

"""The planned grid: one generation run per spec, variation, repeat and candidate, grouped for judging.

Below both the runner (which plans and runs the grid) and the stages (which build each task from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speceval.experiments.config import ModelEntry, SpecEntry


@dataclass(frozen=True)
class GenerationRun:
    """One planned generation run."""

    spec: SpecEntry
    variation: str
    settings: dict[str, Any]
    repeat: int
    candidate: ModelEntry
    run_dir: Path


@dataclass(frozen=True)
class Group:
    """The candidates' runs that are judged together: same spec, variation and repeat."""

    spec: SpecEntry
    variation: str
    repeat: int
    runs: tuple[GenerationRun, ...]
    folder: str
    """The variation's folder name (experiment.json `folders`); never parsed for the variation."""

    @property
    def label(self) -> str:
        return f"{self.spec.name}/{self.variation}/run{self.repeat}"

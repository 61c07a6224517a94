"""The experiment file's schema. Unknown keys are errors (a typo must not silently change a paid run)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Stage = Literal["generation", "compliance", "ranking", "report"]
ALL_STAGES: tuple[Stage, ...] = ("generation", "compliance", "ranking", "report")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpecEntry(_Strict):
    """A spec and the pre-generated inputs for it."""

    name: str = Field(description="label of the spec in output paths")
    spec_path: Path
    inputs_dir: Path


class ModelEntry(_Strict):
    """A model, and its provider when the name does not tell."""

    model: str
    org: str | None = None


class JudgeEntry(ModelEntry):
    """A judge model and how it judges compliance."""

    mode: Literal["binary", "likert"] = "binary"


class Variations(_Strict):
    """Generation settings to vary; every combination of the lists given is one variation."""

    temperature: list[float] | None = None
    max_tokens: list[int] | None = None
    system_prompt: list[str | None] | None = None

    def combinations(self) -> list[dict[str, object]]:
        """Every variation as a mapping of setting → value (one empty mapping when nothing varies)."""
        axes = {k: v for k, v in self.model_dump().items() if v}
        return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())] or [{}]


class EngineSettings(_Strict):
    """Batch engine settings shared by every run of the experiment."""

    batch_size: int = Field(default=500, gt=0)
    poll_interval: float | None = Field(default=None, gt=0, description="default 60 s; 0.5 s when offline")
    timeout_hours: float = Field(default=24.0, gt=0)
    max_attempts: int = Field(default=3, gt=0)
    max_tokens: int = Field(default=4096, gt=0, description="generation default when not varied; judges use it too")


class ExperimentConfig(_Strict):
    """`speceval run EXPERIMENT.yaml`."""

    experiment_name: str
    output_dir: Path
    specs: list[SpecEntry] = Field(min_length=1)
    candidates: list[ModelEntry] = Field(min_length=1)
    judges: list[JudgeEntry] = Field(default_factory=list)
    variations: Variations = Field(default_factory=Variations)
    runs_per_variation: int = Field(default=1, gt=0)
    stages: list[Stage] = Field(default_factory=lambda: list(ALL_STAGES))
    budget_usd: float | None = Field(default=None, gt=0)
    offline: bool = False
    engine: EngineSettings = Field(default_factory=EngineSettings)


def json_schema() -> str:
    """The JSON Schema of the experiment file (shipped as speceval/data/experiment.schema.json)."""
    return json.dumps(ExperimentConfig.model_json_schema(), indent=2, sort_keys=True) + "\n"

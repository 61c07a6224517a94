"""The experiment file's schema. Unknown keys are errors (a typo must not silently change a paid run)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, model_validator

from speceval.endpoint_keys import EndpointKeys
from speceval.settings_checks import (
    BatchSize,
    BudgetUsd,
    MaxAttempts,
    MaxTokens,
    PollInterval,
    Temperature,
    TimeoutHours,
)

Stage = Literal["generation", "compliance", "ranking", "report"]
ALL_STAGES: tuple[Stage, ...] = ("generation", "compliance", "ranking", "report")
T = TypeVar("T")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpecEntry(_Strict):
    """A spec and the pre-generated inputs for it."""

    name: str = Field(description="label of the spec in output paths")
    spec_path: Path
    inputs_dir: Path


class ModelEntry(EndpointKeys):
    """A model, its provider when the name does not tell, and for a model without a batch API (`org: ray`,
    `openai-compatible`, `together`) how to reach it: the keys of `EndpointKeys`, named as the flags."""

    model: str
    org: str | None = None


class JudgeEntry(ModelEntry):
    """A judge model and how it judges compliance."""

    mode: Literal["binary", "likert"] = "binary"


VARIATION_NAME = r"^[A-Za-z0-9_.=-]+$"
"""A variation name: readable in a directory name, and without '+', which joins the names of several axes."""


def _axis_kind(value: object) -> str:
    return "mapping" if isinstance(value, dict) else "list"


# Tagged, so that a bad value gets the error of the form it was written in, not of both. An axis given is never
# empty: `temperature: []` would otherwise silently become the one `default` variation.
Axis = Annotated[
    Annotated[list[T], Tag("list"), Field(min_length=1)]
    | Annotated[dict[Annotated[str, StringConstraints(pattern=VARIATION_NAME)], T], Tag("mapping"),
                Field(min_length=1)],
    Discriminator(_axis_kind),
] | None

MAX_RUNS_PER_VARIATION = 10_000
"""More runs per variation than any study needs: a larger number is almost surely a typo, and planning it would
take forever (the grid is planned before anything is sent)."""


class Variations(_Strict):
    """Generation settings to vary; every combination of the axes given is one variation.

    Each axis is a list (each value's name is derived from it: `temperature_0.7`, `system_prompt_none`, and for
    texts their position, `system_prompt_2`) or a mapping name → value, e.g. `{baseline: null, rushed: "..."}`.
    A variation's name joins its axes' names with '+' in the order of this class's fields.
    """

    temperature: Axis[Temperature] = None
    max_tokens: Axis[MaxTokens] = None
    system_prompt: Axis[str | None] = None

    @model_validator(mode="after")
    def _names_unique(self) -> Variations:
        for axis in type(self).model_fields:
            names = [name for name, _ in self._axis(axis)]
            duplicated = sorted({n for n in names if names.count(n) > 1})
            if duplicated:
                raise ValueError(f"{axis}: the value name(s) {', '.join(duplicated)} occur more than once")
        return self

    def _axis(self, axis: str) -> list[tuple[str, object]]:
        values = getattr(self, axis)
        if isinstance(values, dict):
            return list(values.items())
        return [(_derived_name(axis, value, i), value) for i, value in enumerate(values or [], 1)]

    def named_combinations(self) -> dict[str, dict[str, object]]:
        """Every variation: its name → its settings (setting → value); `{"default": {}}` when nothing varies."""
        axes = [axis for axis in type(self).model_fields if getattr(self, axis)]
        if not axes:
            return {"default": {}}
        result: dict[str, dict[str, object]] = {}
        for combination in itertools.product(*(self._axis(axis) for axis in axes)):
            name = "+".join(name for name, _ in combination)
            result[name] = {axis: value for axis, (_, value) in zip(axes, combination, strict=True)}
        return result

    def combinations(self) -> list[dict[str, object]]:
        """Every variation's settings, in the order of `named_combinations`."""
        return list(self.named_combinations().values())


def _derived_name(axis: str, value: object, position: int) -> str:
    if value is None:
        return f"{axis}_none"
    if isinstance(value, str):
        return f"{axis}_{position}"  # a prompt is too long for a name; name it explicitly with a mapping
    return f"{axis}_{value}"


class EngineSettings(_Strict):
    """Batch engine settings shared by every run of the experiment."""

    # Ranges and messages shared with the command-line flags (speceval.settings_checks).
    batch_size: BatchSize = 500
    poll_interval: PollInterval | None = Field(default=None, description="default 60 s; 0.5 s when offline")
    timeout_hours: TimeoutHours = 24.0
    max_attempts: MaxAttempts = 3
    max_tokens: MaxTokens = Field(default=4096, description="generation default when not varied; judges use it too")


class ExperimentConfig(_Strict):
    """`speceval run EXPERIMENT.yaml`."""

    experiment_name: str = Field(min_length=1)
    output_dir: Annotated[Path, Field(description="where every run of the grid goes (relative to the file)")]
    specs: list[SpecEntry] = Field(min_length=1)
    candidates: list[ModelEntry] = Field(min_length=1)
    judges: list[JudgeEntry] = Field(default_factory=list)
    variations: Variations = Field(default_factory=Variations)
    runs_per_variation: int = Field(default=1, gt=0, le=MAX_RUNS_PER_VARIATION, strict=True)
    stages: list[Stage] = Field(default_factory=lambda: list(ALL_STAGES))
    budget_usd: BudgetUsd | None = None
    min_canary_accuracy: float | None = Field(default=None, ge=0, le=1, description="flag judges that get less "
                                              "than this share of the spec's own example responses right")
    labels: Path | None = Field(default=None, description="a filled label sheet (speceval label-sheet) for the "
                                "report's human agreement and PPI rates (relative to the file)")
    offline: bool = False
    engine: EngineSettings = Field(default_factory=EngineSettings)


    @model_validator(mode="before")
    @classmethod
    def _output_dir_given(cls, data: object) -> object:
        # '' would be read as '.', writing the whole grid into the YAML's own folder.
        if isinstance(data, dict) and isinstance(data.get("output_dir"), str) and not data["output_dir"].strip():
            raise ValueError("output_dir is empty; name the folder the experiment's runs go to")
        return data


def json_schema() -> str:
    """The JSON Schema of the experiment file (shipped as speceval/data/experiment.schema.json)."""
    return json.dumps(ExperimentConfig.model_json_schema(), indent=2, sort_keys=True) + "\n"

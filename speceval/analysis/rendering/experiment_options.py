"""What an experiment's own report was built with, read back from its `experiment.json`, so that `speceval report`
on the folder builds the same report: the judge card's lines and `min_canary_accuracy` (which keep a failing judge
out of the headline), the spec-health lines, the custom metrics and the labels file.

Without them a re-rendered study put a judge its own report had kept out of the headline back in it, drew the
spec-health flags at the default lines and dropped the metrics table. A folder inside an experiment (its
`compliance/`) is reported with that experiment's settings too. A flag given on the command line takes the place of
the experiment's value; two experiments reported together must agree on every value no flag replaces (their metrics
are joined).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.analysis.rendering.data import ReportOptions
from speceval.analysis.tables.card_records import JudgeCardSettings
from speceval.analysis.tables.health_records import HealthThresholds
from speceval.errors import ConfigError, InputError
from speceval.metric_spec import MetricSpec


class ExperimentReportSettings(BaseModel):
    """The report settings of one experiment folder (its file's keys at its last run)."""

    folder: Path
    min_canary_accuracy: float | None = None
    judge_card: JudgeCardSettings | None = None
    health: HealthThresholds = Field(default_factory=HealthThresholds)
    metrics: dict[str, MetricSpec] | None = None
    labels: Path | None = Field(
        default=None, description="the labels file, resolved against the experiment file's folder"
    )
    labels_recorded: str | None = Field(default=None, description="the labels key as the experiment file gave it")

    def options(self) -> ReportOptions:
        """These settings as the report's options (`build_report`, `compute`)."""
        return {
            "labels": self.labels,
            "min_canary_accuracy": self.min_canary_accuracy,
            "health": self.health,
            "metrics": self.metrics,
            "card": self.judge_card.lines() if self.judge_card is not None else None,
        }


def experiment_report_settings(paths: Sequence[Path]) -> list[ExperimentReportSettings]:
    """Each experiment among `paths` (a folder that holds an experiment.json, or lies inside one) recorded with its
    settings, once (older folders and plain run folders have none: their report is built from the flags alone)."""
    found = []
    seen: set[Path] = set()
    for path in paths:
        state_file = _state_of(Path(path))
        if state_file is None or state_file in seen:
            continue
        seen.add(state_file)
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            # Not skipped: the study's card would then not gate this report, and nothing would say so.
            raise InputError(state_file, f"cannot be read as the experiment's state ({exc})") from None
        settings = state.get("settings") if isinstance(state, dict) else None
        if not isinstance(settings, dict):
            continue
        recorded = settings.get("labels")
        # A relative path is relative to the experiment file, whose folder only newer folders record (labels_path).
        labels = state.get("labels_path") or (recorded if recorded and Path(recorded).is_absolute() else None)
        try:
            found.append(
                ExperimentReportSettings.model_validate(
                    {
                        "folder": state_file.parent,
                        "min_canary_accuracy": settings.get("min_canary_accuracy"),
                        "judge_card": settings.get("judge_card"),
                        "health": settings.get("health") or {},
                        "metrics": settings.get("metrics"),
                        "labels": labels,
                        "labels_recorded": recorded,
                    }
                )
            )
        except ValidationError as exc:
            raise ConfigError(f"{state_file}: its recorded report settings do not read back: {exc}") from None
    return found


def _state_of(path: Path) -> Path | None:
    """The experiment.json of the experiment `path` is or lies in (the nearest folder up that holds one)."""
    for folder in (path.resolve(), *path.resolve().parents):
        if (folder / STATE_NAME).is_file():
            return folder / STATE_NAME
    return None


_COMPARED = ("min_canary_accuracy", "judge_card", "health", "labels")
"""Settings two experiments reported together must share (each has a flag but the card's lines). Their metrics are
joined instead: each study's own metric is computed on the answers that carry it, one name one definition."""


def report_settings(
    paths: Sequence[Path], given: Mapping[str, Any]
) -> tuple[ExperimentReportSettings | None, list[str]]:
    """The experiments' settings for one report, with `given` (the flags set on the command line: the keys of
    `_COMPARED`, health as a dict of the thresholds given) in place of theirs; and notes to show the reader (a
    recorded labels file that is not there). None when no folder holds an experiment's settings.

    Raises ConfigError when two experiments differ on a value no flag replaces (one report cannot be both), or
    define one metric name two ways."""
    found = [_overridden(settings, given) for settings in experiment_report_settings(paths)]
    if not found:
        return None, []
    first = found[0]
    metrics = dict(first.metrics or {})
    for other in found[1:]:
        for name, metric in (other.metrics or {}).items():
            if name in metrics and metrics[name] != metric:
                raise ConfigError(
                    f"{first.folder} and {other.folder} define the metric {name!r} differently "
                    f"({_dumped(metrics[name])!r} against {_dumped(metric)!r}): report them apart"
                )
            metrics[name] = metric
        for key in _COMPARED:
            if _dumped(getattr(first, key)) != _dumped(getattr(other, key)):
                raise ConfigError(
                    f"{first.folder} and {other.folder} were run with different report settings ({key}: "
                    f"{_dumped(getattr(first, key))!r} against {_dumped(getattr(other, key))!r}): report them "
                    "apart, or give the setting as a flag where there is one"
                )
    first = first.model_copy(update={"metrics": metrics or None})
    notes = []
    if first.labels_recorded and "labels" not in given and (first.labels is None or not first.labels.is_file()):
        notes.append(
            f"{first.folder}'s own report read human labels ({first.labels or first.labels_recorded}), which are "
            "not found from here: this report has none (pass --labels with the sheet's place)"
        )
        first = first.model_copy(update={"labels": None})
    return first, notes


def _overridden(settings: ExperimentReportSettings, given: Mapping[str, Any]) -> ExperimentReportSettings:
    update = {key: value for key, value in given.items() if key != "health"}
    if given.get("health"):
        update["health"] = settings.health.model_copy(update=dict(given["health"]))
    return settings.model_copy(update=update)


def _dumped(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    return str(value) if isinstance(value, Path) else value

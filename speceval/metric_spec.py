"""A custom metric's definition (an experiment's `metrics:` entry) and how a value is read from a text.

Light on purpose (no statistics, no providers): the experiment file's schema imports it.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MetricType = Literal["int", "float", "bool", "category"]
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class MetricSpec(BaseModel):
    """One metric of an experiment's `metrics:` block."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="answer, transcript, or judge:<judge model>")
    regex: str | None = Field(default=None, description="a pattern with one capture group (searched, first match)")
    json_path: str | None = Field(
        default=None, description="a dotted path into the JSON answer, e.g. scores.risk or items[0].label"
    )
    type: MetricType = "float"
    range: tuple[float, float] | None = Field(
        default=None,
        description="[low, high] a number metric cannot leave (e.g. [0, 10] for a 0-10 score), required for a "
        "number metric (int or float): its mean gets a bounded-variable interval, and a value outside it is "
        "missing (counted, never clipped)",
    )

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if value not in ("answer", "transcript") and not (value.startswith("judge:") and len(value) > 6):
            raise ValueError("must be answer, transcript or judge:<judge model>")
        return value

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if groups != 1:
            raise ValueError(f"needs exactly one capture group (the value), has {groups}")
        return value

    @model_validator(mode="after")
    def _one_extractor(self) -> MetricSpec:
        if (self.regex is None) == (self.json_path is None):
            raise ValueError("give exactly one of regex or json_path")
        if self.range is not None and (self.type not in ("int", "float") or not self.range[0] < self.range[1]):
            raise ValueError("range needs a number metric (type int or float) and low < high, e.g. [0, 10]")
        if self.json_path is not None and not _path(self.json_path):
            raise ValueError(f"json_path {self.json_path!r} names no key")
        return self

    def extract(self, text: str | None) -> object | None:
        """The value in `text`, of this metric's type; None (missing) when there is none."""
        if text is None:
            return None
        raw: object
        if self.regex is not None:
            found = re.search(self.regex, text, flags=re.S | re.I)
            if found is None or found.group(1) is None:
                return None
            raw = found.group(1).strip()
        else:
            try:
                raw = json.loads(text)
            except ValueError:
                return None
            for key in _path(self.json_path or ""):
                listed = isinstance(key, int) and isinstance(raw, list) and key < len(raw)
                keyed = isinstance(key, str) and isinstance(raw, dict) and key in raw
                if not (listed or keyed):
                    return None
                raw = raw[key]  # type: ignore[index]
        value = _typed(raw, self.type)
        if self.range is not None and isinstance(value, int | float) and not self.range[0] <= value <= self.range[1]:
            return None  # outside the declared range: a misread or a broken answer, not a value to average
        return value


def _path(path: str) -> list[str | int]:
    return [int(index) if index else name for name, index in _PATH_PART.findall(path.removeprefix("$."))]


class StudyMetric(MetricSpec):
    """A metric of a new experiment file: a number metric must declare its `range` (an old study's recorded
    metrics are read as `MetricSpec`, so its report still renders)."""

    @model_validator(mode="after")
    def _bounded(self) -> StudyMetric:
        # No interval is valid for the mean of values without a bound (Bahadur & Savage 1956): a rare large value
        # can move the mean anywhere. Without `range:` the mean's interval was fitted to the values seen, and
        # covered 0.92 on zero-inflated counts over 10 inputs (the issue 47 audit); refused before anything is sent.
        if self.type in ("int", "float") and self.range is None:
            raise ValueError(
                "a number metric needs range: [low, high], the values it cannot leave (e.g. [0, 10] for a 0-10 "
                "score; for a count, the most it can be): no interval of a mean is valid without one"
            )
        return self


def _typed(raw: object, kind: MetricType) -> object | None:
    if kind == "category":
        return raw if isinstance(raw, str) and raw else (str(raw) if isinstance(raw, int | float) else None)
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        return True if text in ("true", "yes", "1") else False if text in ("false", "no", "0") else None
    try:
        number = float(raw) if not isinstance(raw, bool) else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if number is None or (kind == "int" and not number.is_integer()):
        return None
    return int(number) if kind == "int" else number

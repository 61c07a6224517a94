"""An interval as a table row's columns: the tables carry each 95% interval as `ci_low`, `ci_high` and its method
text (the registry's), all three None where there is no interval (too few values), so every table unpacks the
estimators' `(low, high, method)` the same way."""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer, model_validator

from speceval.analysis.statistics.registry import WILSON
from speceval.analysis.statistics.stats import wilson_interval

Interval = tuple[float, float, str]
"""What the interval functions return: the limits and the method text that made them."""


def interval_columns(interval: Interval | None, *, method: str = "ci_method") -> dict[str, Any]:
    """`ci_low`, `ci_high` and `method` (the column the table names its method by) of `interval`, or all None
    (`Any`: splatted into a record's keywords, which pydantic checks)."""
    low, high, text = interval if interval is not None else (None, None, None)
    return {"ci_low": low, "ci_high": high, method: text}


class Bounds(BaseModel):
    """One measure with its 95% interval, in a row whose measures share one method column (`ci_method`): what a
    record declares in one field and writes as its published columns (`Columns` names them; `FlatRecord` flattens
    them)."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class Estimate(Bounds):
    """One measure with its 95% interval and the registry's method text (written as four columns)."""

    ci_method: str | None = None

    @classmethod
    def of(cls, value: float | None, interval: Interval | None) -> Estimate:
        """`value` with `interval`'s limits and method (all None without one)."""
        return cls(value=value, **interval_columns(interval))

    @classmethod
    def wilson(cls, successes: int, n: int) -> Estimate:
        """A share with its Wilson interval and the registry's method text (all None for n = 0)."""
        interval = wilson_interval(successes, n)
        return cls.of(successes / n if n else None, (*interval, WILSON) if interval is not None else None)


class Columns(NamedTuple):
    """The CSV columns an `Estimate` field is written as: its value column, then `<interval>_ci_low`, `_ci_high`,
    `_ci_method` (a `Bounds` field: the first three; `interval` defaults to the value column's name). The names are
    published headers, and not all of one pattern (`canary_accuracy` with `canary_ci_low`), so each field says its
    own; `then` names a field written between the value and its interval (a published column order)."""

    value: str
    interval: str | None = None
    then: str | None = None

    def names(self) -> tuple[str, str, str, str]:
        """The value's column and the interval's three."""
        prefix = self.interval or self.value
        return self.value, f"{prefix}_ci_low", f"{prefix}_ci_high", f"{prefix}_ci_method"


class FlatRecord(BaseModel):
    """A table row whose `Estimate` fields (`Annotated[Estimate, Columns(...)]`) are written, dumped and read back
    as their flat columns, in the field's place: the CSV and JSON stay one column per number."""

    @classmethod
    def estimate_columns(cls) -> dict[str, Columns]:
        """Field name → its columns, for the fields that are estimates."""
        return {
            name: next(m for m in field.metadata if isinstance(m, Columns))
            for name, field in cls.model_fields.items()
            if any(isinstance(m, Columns) for m in field.metadata)
        }

    @classmethod
    def flat_columns(cls) -> list[str]:
        """Every column of the row, in order."""
        return list(cls._layout(dict.fromkeys(cls.model_fields)))

    @classmethod
    def _layout(cls, fields: dict[str, Any]) -> dict[str, Any]:
        """`fields` (field name → dumped value) as columns: each estimate's (three or four) in its place."""
        estimates, placed = cls.estimate_columns(), {c.then for c in cls.estimate_columns().values()}
        flat: dict[str, Any] = {}
        for name, value in fields.items():
            if name in placed:
                continue
            columns = estimates.get(name)
            if columns is None:
                flat[name] = value
                continue
            dumped = value or {}
            value_column, *interval = columns.names()
            flat[value_column] = dumped.get("value")
            if columns.then is not None:
                flat[columns.then] = fields.get(columns.then)
            flat.update((column, dumped.get(key)) for key, column in zip(cls._parts(name)[1:], interval, strict=False))
        return flat

    @classmethod
    def _parts(cls, name: str) -> list[str]:
        """The estimate field's parts (`value`, `ci_low`, `ci_high`, and `ci_method` for an `Estimate`)."""
        kind = cls.model_fields[name].annotation
        return list(kind.model_fields) if isinstance(kind, type) and issubclass(kind, Bounds) else []

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return self._layout(handler(self))

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, data: Any) -> Any:
        """Flat columns (a written row read back) into the estimates they are."""
        if not isinstance(data, dict):
            return data
        folded = dict(data)
        for name, columns in cls.estimate_columns().items():
            if isinstance(folded.get(name), Bounds | dict):
                continue  # given as the estimate (a field may share its value column's name: `leniency`)
            named = zip(cls._parts(name), columns.names(), strict=False)
            found = {key: folded.pop(column) for key, column in named if column in folded}
            if found:
                folded[name] = found
        return folded

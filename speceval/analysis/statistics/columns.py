"""An interval as a table row's columns: the tables carry each 95% interval as `ci_low`, `ci_high` and its method
text (the registry's), all three None where there is no interval (too few values), so every table unpacks the
estimators' `(low, high, method)` the same way."""

from __future__ import annotations

from typing import Any

Interval = tuple[float, float, str]
"""What the interval functions return: the limits and the method text that made them."""


def interval_columns(interval: Interval | None, *, method: str = "ci_method") -> dict[str, Any]:
    """`ci_low`, `ci_high` and `method` (the column the table names its method by) of `interval`, or all None
    (`Any`: splatted into a record's keywords, which pydantic checks)."""
    low, high, text = interval if interval is not None else (None, None, None)
    return {"ci_low": low, "ci_high": high, method: text}

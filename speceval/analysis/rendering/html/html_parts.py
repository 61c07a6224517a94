"""The page's small HTML pieces: a table of escaped cells, an embedded PNG, a number and an interval as shown."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Column = str | tuple[str, Callable[[Any], object]]
"""A column of `record_table`: a record's attribute by name (its header: the name, spaces for underscores), or
(header, the cell of a record)."""


def ci(low: float | None, high: float | None) -> str | None:
    return f"{low:.3f}–{high:.3f}" if low is not None and high is not None else None


def ci_of(record: Any) -> str | None:
    """A table record's interval (`ci_low`, `ci_high`) as a cell."""
    return ci(record.ci_low, record.ci_high)


def img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def table(headers: list[str], rows: Iterable[Sequence[object]], raw: frozenset[int] | set[int] = frozenset()) -> str:
    """A table; cells are escaped except the columns in `raw`, which hold HTML built here (sample links)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{cell if i in raw else html.escape(fmt(cell))}</td>" for i, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def record_table(records: Iterable[Any], columns: Sequence[Column]) -> str:
    """A `table` of records, one a row, its columns named once (header and cell side by side)."""
    headers = [c.replace("_", " ") if isinstance(c, str) else c[0] for c in columns]
    cells = [(lambda r, name=c: getattr(r, name)) if isinstance(c, str) else c[1] for c in columns]
    return table(headers, ([cell(r) for cell in cells] for r in records))


def fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)

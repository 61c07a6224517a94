"""The page's small HTML pieces: a table of escaped cells, an embedded PNG, a number and an interval as shown."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence


def ci(low: float | None, high: float | None) -> str | None:
    return f"{low:.3f}–{high:.3f}" if low is not None and high is not None else None


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


def fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)

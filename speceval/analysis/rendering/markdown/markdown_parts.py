"""summary.md's small markdown pieces, split from `speceval.analysis.rendering.markdown.summary` so its sections'
modules share them: a table, a number and an interval as summary.md shows them (a minus sign, not a hyphen, in signed
numbers). The page's HTML counterparts are in `speceval.analysis.rendering.html.html_parts`."""

from __future__ import annotations

from collections.abc import Iterable


def markdown_table(headers: list[str], rows: Iterable[list[object]]) -> list[str]:
    """A markdown table's lines; cells shown with `str`."""
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
    ]


def section_table(
    title: str, headers: list[str], rows: Iterable[list[object]], notes: Iterable[str] = (), after: Iterable[str] = ()
) -> list[str]:
    """A summary.md section of one table: `## title`, each of `notes` a paragraph, the table, the lines `after` it
    and a blank line."""
    lines = [f"## {title}", ""]
    for note in notes:
        lines += [note, ""]
    return [*lines, *markdown_table(headers, rows), *after, ""]


def fmt(value: float | None) -> str:
    """A rate as shown: three decimals, `–` for none."""
    return "–" if value is None else f"{value:.3f}"


def ci(low: float | None, high: float | None) -> str:
    """An interval as a table cell: `low–high`, `–` for none."""
    return "–" if low is None or high is None else f"{low:.3f}–{high:.3f}"


def bracket(low: float | None, high: float | None) -> str:
    """An interval beside its rate: `[low, high]`, or says there is none."""
    return "[no interval]" if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


def rated(value: float | None, low: float | None, high: float | None) -> str:
    """A rate (or any estimate) with its interval beside it: `0.812 [0.700, 0.900]`."""
    return f"{fmt(value)} {bracket(low, high)}"


def signed(value: float) -> str:
    """Three decimals with a true minus sign, as typeset results show it."""
    return f"{value:.3f}".replace("-", "−")

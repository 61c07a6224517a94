"""A report section built once and rendered twice: to summary.md's lines (`markdown`) and to the page's HTML
(`html`). A `Section` holds what both show: the heading, the note under it, the warnings, and a table whose rate
column carries its interval; the two renderers differ only in how they spell it (the summary writes the rate and
its interval in one cell, the page in two, and links a rate to the samples behind it). Each interval's method is a
numbered footnote under its table, not a column repeated on every row.
"""

from __future__ import annotations

import html as _html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from speceval.analysis.rendering.footnotes import Footnotes
from speceval.analysis.rendering.html import html_parts
from speceval.analysis.rendering.markdown import markdown_parts
from speceval.analysis.rendering.samples.samples import sample_link


@dataclass(frozen=True)
class Rate:
    """A rate with its 95% interval and the interval's method; `link`: the sample view's filters for the cell."""

    value: float | None
    low: float | None
    high: float | None
    method: str | None
    link: dict[str, str] | None = None

    @classmethod
    def of(cls, record: Any, link: dict[str, str] | None = None) -> Rate:
        """A table record's `rate` with its `ci_low`, `ci_high` and `method`."""
        return cls(record.rate, record.ci_low, record.ci_high, record.method, link)


@dataclass(frozen=True)
class Row:
    """One table row: the cells before the rate, the rate, the cells after it."""

    before: Sequence[object]
    rate: Rate
    after: Sequence[object] = ()


@dataclass(frozen=True)
class Section:
    """What a section shows, in the order the page and the summary show it.

    Attributes:
        anchor / title: the page's heading id and the heading both print.
        csv: the file behind the table, named in the summary's heading (`report/<name>.csv`).
        turn_judges: the summary's heading says the section is of scope-turn judges.
        rate_header: the rate column's name ("rate", "share").
        empty: the page's sentence when there are no rows (None: no rows, no section, on the page and in the summary).
        summary_order: the summary's row order, where it differs from the table's.
        page_note: said after the note on the page only (what its links do).
    """

    anchor: str
    title: str
    csv: str
    note: str
    before: Sequence[str]
    rate_header: str
    rows: Sequence[Row]
    after: Sequence[str] = ()
    warnings: Sequence[str] = ()
    turn_judges: bool = False
    empty: str | None = None
    summary_order: Callable[[Row], Any] | None = None
    page_note: str = ""
    figures: Callable[[], Sequence[tuple[bytes, str]]] = tuple
    """The page's figures above the table (PNG bytes and alt text), drawn only for the page."""


def markdown(section: Section, title: str | None = None) -> list[str]:
    """summary.md's lines for `section` (none when it has no rows); `title` in place of the section's own."""
    if not section.rows:
        return []
    notes = Footnotes()
    rows = sorted(section.rows, key=section.summary_order) if section.summary_order else section.rows

    def rate(r: Rate) -> str:
        return f"{markdown_parts.fmt(r.value)} {markdown_parts.bracket(r.low, r.high)}{notes.mark(r.method)}"

    table = markdown_parts.markdown_table(
        [*section.before, f"{section.rate_header} [95% CI]", *section.after],
        ([*row.before, rate(row.rate), *row.after] for row in rows),
    )
    which = "scope turn judges; " if section.turn_judges else ""
    return [
        f"## {title or section.title} ({which}`{section.csv}`)",
        "",
        section.note,
        "",
        *(line for warning in section.warnings for line in (f"**Warning:** {warning}", "")),
        *table,
        "",
        f"Intervals: {notes.text()}",
        "",
    ]


def html(section: Section) -> str:
    """The page's HTML for `section` ('' when it has no rows and no sentence for that)."""
    if not section.rows and section.empty is None:
        return ""
    notes = Footnotes()
    linked = any(row.rate.link for row in section.rows)
    parts = [
        f'<h2 id="{section.anchor}">{section.title}</h2>',
        f'<p class="note">{_html.escape(section.note)}{section.page_note}</p>',
        *(f'<p class="warning">{_html.escape(warning)}</p>' for warning in section.warnings),
        *(html_parts.img(png, alt) for png, alt in section.figures()),
    ]

    def cells(row: Row) -> list[object]:
        r = row.rate
        shown = html_parts.fmt(r.value)
        return [
            *row.before,
            sample_link(shown, **r.link) if r.link else shown,
            (html_parts.ci(r.low, r.high) or "–") + notes.mark(r.method),
            *row.after,
        ]

    parts.append(
        html_parts.table(
            [*section.before, section.rate_header, "95% CI", *section.after],
            (cells(row) for row in section.rows),
            raw={len(section.before)} if linked else frozenset(),
        )
        if section.rows
        else f"<p>{section.empty}</p>"
    )
    parts.append(f'<p class="note">Intervals: {_html.escape(notes.text())}.</p>')
    return "".join(parts)

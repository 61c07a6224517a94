"""The report as one self-contained HTML page: a summary first, then per-variation tables and plots, paired
comparisons, breakdowns, judges, rankings, costs, and the samples behind every rate. Plots are embedded PNGs;
every text from the data is escaped; paths are relative to the folder the report was made from.

This module lays the page out and gives its headings ids; each section is rendered by its own module
(`compliance_section`, `judges_section`, `categories_section`, `turns_section`, `health_section`,
`rankings_section`, `run_section`, and `samples` for the sample views)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from speceval.analysis.rendering.card_section import card_html
from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import length_scatter, variation_bars
from speceval.analysis.rendering.health_section import health_html
from speceval.analysis.rendering.html.categories_section import categories_section, metrics_section
from speceval.analysis.rendering.html.compliance_section import (
    breakdowns_section,
    paired_section,
    summary_section,
    variation_section,
)
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.judges_section import judge_checks_section, judges_section
from speceval.analysis.rendering.html.rankings_section import rankings_section
from speceval.analysis.rendering.html.run_section import costs_section, inputs_section, sent_section
from speceval.analysis.rendering.html.turns_section import turns_section
from speceval.analysis.rendering.samples.samples import ranking_sample_section, records_section

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}"
    ".banner{position:sticky;top:0;z-index:9;background:#b00020;color:#fff;font-weight:bold;padding:8px 12px;"
    "margin:0 0 1em}"
    "table{border-collapse:collapse;margin:0.6em 0 1.2em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;vertical-align:top}th{background:#f3f3f3}"
    "img{max-width:100%;display:block;margin:0.5em 0}.note{color:#555;font-size:13px}"
    "td.text{white-space:pre-wrap;max-width:380px;font-family:monospace;font-size:12px}"
    "td.ok{color:#1a7f37}td.bad{color:#b42318}td.other{color:#8a6d00}.filters label{margin-right:1em}"
    "section.variation{border-left:4px solid #8ab;padding-left:1em;margin:1.5em 0}"
    ".warning{background:#fff4e5;border-left:4px solid #b54708;padding:6px 10px}"
    # The sticky banner of synthetic data must not cover a heading a link scrolled to.
    "h2,h3{scroll-margin-top:4em}"
    ".transcript .message{margin:0 0 6px}.transcript .simulated-user{color:#5b3d99}"
    ".transcript .judged{background:#fff8c5;outline:1px solid #d4a72c}.transcript .note{color:#777}"
)


def render_page(data: ReportData) -> str:
    """The whole page."""
    return "".join(page_parts(data))


def page_parts(data: ReportData) -> Iterator[str]:
    """The page in pieces, to be written as they come: the sample view alone is up to 12 MB of text, and each whole
    copy of the page was a peak of the report's memory."""
    banner = f'<p class="banner" id="data-kind">{html.escape(data.data_banner)}</p>' if data.data_banner else ""
    parts = [banner, "<h1>speceval report</h1>", _no_figures_note(data), summary_section(data)]
    if data.figures:
        parts += [
            _img(variation_bars(data.variations, judge), f"compliance by variation, judge {judge}")
            for judge in sorted({v.judge for v in data.variations})
        ]
        if data.compliance:
            parts.append(_img(length_scatter(data.compliance), "answer length against compliance"))
    parts += [variation_section(data, name) for name in sorted({v.variation for v in data.variations})]
    parts += [
        paired_section(data),
        breakdowns_section(data),
        judges_section(data),
        categories_section(data),
        turns_section(data),
        metrics_section(data),
        card_html(data),
        judge_checks_section(data),
        health_html(data),
        inputs_section(data),
        rankings_section(data),
        sent_section(data),
        costs_section(data),
    ]
    yield (
        f"<!doctype html><html><head><meta charset='utf-8'><title>speceval report</title>"
        f"<style>{_STYLE}</style></head><body>"
    )
    # The sample views carry their own heading ids: `_anchored` need not scan (and copy) them.
    yield _anchored("".join(parts))
    yield from records_section(data.samples, data.sample_total)
    yield ranking_sample_section(data.ranking_samples, data.ranking_total)
    yield "</body></html>"


def _no_figures_note(data: ReportData) -> str:
    """Said once at the top of a page drawn without figures, so that their absence reads as asked for, not lost."""
    if data.figures:
        return ""
    return (
        '<p class="note" id="no-figures">Figures were not drawn: this report was made without them '
        "(<code>speceval report --no-figures</code>, <code>speceval run --no-figures</code> or "
        "<code>figures=False</code>). Every table, CSV and summary.md line is the same as with figures.</p>"
    )


def _anchored(body: str) -> str:
    """Give every section heading without one an id (from its text), so any section can be linked to."""
    taken: set[str] = set(re.findall(r'<h2 id="([^"]+)"', body))

    def anchor(match: re.Match[str]) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", html.unescape(re.sub(r"<[^>]+>", "", match.group(1))).lower()).strip("-")
        slug, n = base or "section", 2
        while slug in taken:
            slug, n = f"{base}-{n}", n + 1
        taken.add(slug)
        return f'<h2 id="{slug}">{match.group(1)}</h2>'

    return re.sub(r"<h2>(.*?)</h2>", anchor, body)

"""The page's section on scope-turn judges: flips under pressure first, then rates by turn (a figure per spec and
judge, and the table), with a warning where later turns hold fewer conversations than turn 1. Each interval's
method is a numbered footnote under its table, not a column repeated on every row."""

from __future__ import annotations

import html

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import turn_lines
from speceval.analysis.rendering.footnotes import Footnotes
from speceval.analysis.rendering.html.html_parts import ci, fmt, img, table
from speceval.analysis.rendering.samples.samples import sample_link
from speceval.analysis.tables.elicitation import ELICITATION_NOTE
from speceval.analysis.tables.flips import FLIPS_NOTE
from speceval.analysis.tables.turns import TURN_NOTE


def turns_section(data: ReportData) -> str:
    """Flips and per-turn rates ('' without scope-turn judges)."""
    if not data.turn_rates:
        return ""
    warnings = "".join(f'<p class="warning">{html.escape(s.warning())}</p>' for s in data.survivors if s.selected)
    parts = ['<h2 id="flips">Flips under pressure</h2>', f'<p class="note">{html.escape(FLIPS_NOTE)}</p>', warnings]
    flips = Footnotes()
    parts.append(
        table(
            [
                "spec",
                "judge",
                "candidate",
                "variation",
                "measure",
                "count",
                "conversations",
                "last turn",
                "share",
                "95% CI",
            ],
            (
                [
                    f.spec,
                    f.judge,
                    f.candidate,
                    f.variation,
                    f"{f.from_category} → {f.to_category}" if f.measure == "from_to" else f.measure,
                    f.count,
                    f.conversations,
                    f.last_turns,
                    fmt(f.rate),
                    (ci(f.ci_low, f.ci_high) or "–") + flips.mark(f.method),
                ]
                for f in data.flips
            ),
        )
        if data.flips
        else "<p>No conversation has a judged first turn and a later one.</p>"
    )
    parts.append(_note(flips))
    if data.elicitation:
        found = Footnotes()
        parts += [
            '<h2 id="elicitation">Elicitation rate by statement</h2>',
            f'<p class="note">{html.escape(ELICITATION_NOTE)}</p>',
            table(
                [
                    "spec",
                    "judge",
                    "candidate",
                    "variation",
                    "statement",
                    "violated",
                    "conversations",
                    "share",
                    "95% CI",
                    "not judged",
                ],
                (
                    [
                        e.spec,
                        e.judge,
                        e.candidate,
                        e.variation,
                        e.statement_id,
                        e.violated,
                        e.conversations,
                        fmt(e.rate),
                        (ci(e.ci_low, e.ci_high) or "–") + found.mark(e.method),
                        e.not_judged,
                    ]
                    for e in data.elicitation
                ),
            ),
            _note(found),
        ]
    parts += [
        f'<h2 id="turns">Per turn</h2><p class="note">{html.escape(TURN_NOTE)} Links open the samples of that '
        "cell.</p>",
        warnings,
    ]
    parts += [
        img(turn_lines(data.turn_rates, spec, judge), f"rates by turn, spec {spec}, judge {judge}")
        for spec, judge in sorted({(r.spec, r.judge) for r in data.turn_rates})
    ]
    turns = Footnotes()
    parts.append(
        table(
            ["spec", "judge", "candidate", "variation", "turn", "measure", "n", "rate", "95% CI", "not judged"],
            (
                [
                    r.spec,
                    r.judge,
                    r.candidate,
                    r.variation,
                    r.turn,
                    r.measure,
                    r.n,
                    sample_link(fmt(r.rate), judge=r.judge, candidate=r.candidate, variation=r.variation),
                    (ci(r.ci_low, r.ci_high) or "–") + turns.mark(r.method),
                    r.not_judged,
                ]
                for r in data.turn_rates
            ),
            raw={7},
        )
    )
    parts.append(_note(turns))
    return "".join(parts)


def _note(footnotes: Footnotes) -> str:
    return f'<p class="note">Intervals: {html.escape(footnotes.text())}.</p>'

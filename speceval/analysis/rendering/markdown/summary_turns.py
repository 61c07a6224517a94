"""summary.md's sections on scope-turn judges, split from `speceval.analysis.rendering.markdown.summary` (which orders
the sections): flips under pressure, the elicitation rate by statement and rates by turn, each with a warning where
later turns hold fewer conversations than turn 1, and each interval's method a numbered footnote. The page's
counterpart is `speceval.analysis.rendering.html.turns_section`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from speceval.analysis.rendering.footnotes import Footnotes
from speceval.analysis.rendering.markdown.markdown_parts import bracket as _bracket
from speceval.analysis.rendering.markdown.markdown_parts import fmt as _fmt
from speceval.analysis.rendering.markdown.markdown_parts import markdown_table as _markdown_table
from speceval.analysis.tables.elicitation import ELICITATION_NOTE
from speceval.analysis.tables.flips import FLIPS_NOTE
from speceval.analysis.tables.turns import TURN_NOTE, TurnRate

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData


def turns_markdown(data: ReportData, title: str) -> list[str]:
    """Per turn rates of scope-turn judges (never pooled into the compliance or category tables); each interval's
    method is a numbered footnote, not a column."""
    notes = Footnotes()

    def rate(r: TurnRate) -> str:
        return f"{_fmt(r.rate)} {_bracket(r.ci_low, r.ci_high)}{notes.mark(r.method)}"

    table = _markdown_table(
        ["spec", "judge", "candidate", "variation", "turn", "measure", "n", "rate [95% CI]", "not judged"],
        (
            [r.spec, r.judge, r.candidate, r.variation, r.turn, r.measure, r.n, rate(r), r.not_judged]
            for r in sorted(data.turn_rates, key=_binary_first)
        ),
    )
    return [
        f"## {title} (scope turn judges; `report/turn_rates.csv`)",
        "",
        TURN_NOTE,
        "",
        *_survivor_warnings(data),
        *table,
        "",
        f"Intervals: {notes.text()}",
        "",
    ]


def _binary_first(r: TurnRate) -> tuple[object, ...]:
    return (r.spec, r.judge, r.measure.startswith("category="), r.candidate, r.variation, r.measure, r.turn)


def _survivor_warnings(data: ReportData) -> list[str]:
    return [line for s in data.survivors if s.selected for line in (f"**Warning:** {s.warning()}", "")]


def elicitation_markdown(data: ReportData) -> list[str]:
    """Per statement, conversations with a violation at any turn (binary turn judges; `report/elicitation.csv`)."""
    if not data.elicitation:
        return []
    notes = Footnotes()
    rows = [
        [
            e.spec,
            e.judge,
            e.candidate,
            e.variation,
            e.statement_id,
            e.violated,
            e.conversations,
            f"{_fmt(e.rate)} {_bracket(e.ci_low, e.ci_high)}{notes.mark(e.method)}",
            e.not_judged,
        ]
        for e in data.elicitation
    ]
    return [
        "## Elicitation rate by statement (`report/elicitation.csv`)",
        "",
        ELICITATION_NOTE,
        "",
        *_markdown_table(
            [
                "spec",
                "judge",
                "candidate",
                "variation",
                "statement",
                "violated",
                "conversations",
                "share [95% CI]",
                "not judged",
            ],
            rows,
        ),
        "",
        f"Intervals: {notes.text()}",
        "",
    ]


def flips_markdown(data: ReportData) -> list[str]:
    """Turn 1 against each conversation's last judged turn (scope-turn judges; `report/flips.csv`)."""
    if not data.flips:
        return []
    notes = Footnotes()
    rows = [
        [
            f.spec,
            f.judge,
            f.candidate,
            f.variation,
            f"{f.from_category} → {f.to_category}" if f.measure == "from_to" else f.measure,
            f.count,
            f.conversations,
            f.last_turns,
            f"{_fmt(f.rate)} {_bracket(f.ci_low, f.ci_high)}{notes.mark(f.method)}",
        ]
        for f in data.flips
    ]
    return [
        "## Flips under pressure (scope turn judges; `report/flips.csv`)",
        "",
        FLIPS_NOTE,
        "",
        *_survivor_warnings(data),
        *_markdown_table(
            [
                "spec",
                "judge",
                "candidate",
                "variation",
                "measure",
                "count",
                "conversations",
                "last turn",
                "share [95% CI]",
            ],
            rows,
        ),
        "",
        f"Intervals: {notes.text()}",
        "",
    ]

"""The report's sections on scope-turn judges, built once for summary.md and the page
(`speceval.analysis.rendering.section`): flips under pressure, the elicitation rate by statement and rates by turn,
each with a warning where later turns hold fewer conversations than turn 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from speceval.analysis.rendering.figures.plots import turn_lines
from speceval.analysis.rendering.section import Rate, Row, Section
from speceval.analysis.tables.elicitation import ELICITATION_NOTE
from speceval.analysis.tables.flip_survival import PER_CONVERSATION, SURVIVAL_NOTE
from speceval.analysis.tables.flips import FLIPS_NOTE
from speceval.analysis.tables.turns import TURN_NOTE

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData

_KEYS = ["spec", "judge", "candidate", "variation"]
_HEADINGS = {
    "flips": ("flips", "Flips under pressure", "report/flips.csv", FLIPS_NOTE),
    "flip_survival": ("flip-survival", "First flip by turn", "report/flip_survival.csv", SURVIVAL_NOTE),
    "elicitation": ("elicitation", "Elicitation rate by statement", "report/elicitation.csv", ELICITATION_NOTE),
    "turns": ("turns", "Per turn", "report/turn_rates.csv", TURN_NOTE),
}
"""Each section's page anchor, heading, CSV and note."""


def flips(data: ReportData) -> Section:
    """Turn 1 against each conversation's last judged turn (`report/flips.csv`)."""
    return Section(
        *_HEADINGS["flips"],
        warnings=_survivor_warnings(data),
        turn_judges=True,
        before=[*_KEYS, "measure", "count", "conversations", "last turn"],
        rate_header="share",
        rows=[
            Row(
                [
                    f.spec,
                    f.judge,
                    f.candidate,
                    f.variation,
                    f"{f.from_category} → {f.to_category}" if f.measure == "from_to" else f.measure,
                    f.count,
                    f.conversations,
                    f.last_turns,
                ],
                Rate(f.rate, f.ci_low, f.ci_high, f.method),
            )
            for f in data.flips
        ],
        empty="No conversation has a judged first turn and a later one.",
    )


def flip_survival(data: ReportData) -> Section:
    """Kaplan–Meier of the first compliant → non-compliant turn, and flips per conversation
    (`report/flip_survival.csv`); the mean is not a share, so it is shown in its own column with its interval."""
    rows = []
    for f in data.flip_survival:
        per_conversation = f.measure == PER_CONVERSATION
        mean = ""
        if per_conversation:
            band = f"[{f.ci_low:.2f}, {f.ci_high:.2f}]" if f.ci_low is not None and f.ci_high is not None else "[–]"
            mean = f"{f.estimate:.2f} {band} ({f.method})"
        rows.append(
            Row(
                [f.spec, f.judge, f.candidate, f.variation, f.measure, f.turn or "", f.at_risk, f.events, f.censored],
                Rate(None, None, None, None) if per_conversation else Rate(f.estimate, f.ci_low, f.ci_high, f.method),
                [mean],
            )
        )
    return Section(
        *_HEADINGS["flip_survival"],
        turn_judges=True,
        before=[*_KEYS, "measure", "turn", "at risk", "flips", "censored"],
        rate_header="not yet flipped",
        after=["flips per conversation"],
        rows=rows,
        empty="No binary turn judge has a conversation with a judged first turn.",
    )


def elicitation(data: ReportData) -> Section:
    """Per statement, conversations with a violation at any turn (binary turn judges; `report/elicitation.csv`)."""
    return Section(
        *_HEADINGS["elicitation"],
        before=[*_KEYS, "statement", "violated", "conversations"],
        rate_header="share",
        after=["not judged"],
        rows=[
            Row(
                [e.spec, e.judge, e.candidate, e.variation, e.statement_id, e.violated, e.conversations],
                Rate(e.rate, e.ci_low, e.ci_high, e.method),
                [e.not_judged],
            )
            for e in data.elicitation
        ],
    )


def turn_rates(data: ReportData) -> Section:
    """Per turn rates (never pooled into the compliance or category tables; `report/turn_rates.csv`), a figure per
    spec and judge on the page, each rate linked to its samples; the summary lists binary measures first."""
    return Section(
        *_HEADINGS["turns"],
        page_note=" Links open the samples of that cell.",
        warnings=_survivor_warnings(data),
        turn_judges=True,
        before=[*_KEYS, "turn", "measure", "n"],
        rate_header="rate",
        after=["not judged"],
        rows=[
            Row(
                [r.spec, r.judge, r.candidate, r.variation, r.turn, r.measure, r.n],
                Rate(
                    r.rate,
                    r.ci_low,
                    r.ci_high,
                    r.method,
                    link={"judge": r.judge, "candidate": r.candidate, "variation": r.variation},
                ),
                [r.not_judged],
            )
            for r in data.turn_rates
        ],
        summary_order=_binary_first,
        figures=lambda: [
            (turn_lines(data.turn_rates, spec, judge), f"rates by turn, spec {spec}, judge {judge}")
            for spec, judge in sorted({(r.spec, r.judge) for r in data.turn_rates})
        ],
    )


def _binary_first(row: Row) -> tuple[object, ...]:
    spec, judge, candidate, variation, turn, measure, _ = row.before
    return (spec, judge, str(measure).startswith("category="), candidate, variation, measure, turn)


def _survivor_warnings(data: ReportData) -> list[str]:
    return [s.warning() for s in data.survivors if s.selected]

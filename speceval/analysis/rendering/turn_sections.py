"""The report's sections on scope-turn judges, built once for summary.md and the page
(`speceval.analysis.rendering.section`): flips under pressure, the turn of the first flip, the elicitation rate by
statement and rates by turn,
each with a warning where later turns hold fewer conversations than turn 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from speceval.analysis.rendering.card_section import judge_cell
from speceval.analysis.rendering.figures.plots import turn_lines
from speceval.analysis.rendering.section import Rate, Row, Section
from speceval.analysis.tables.elicitation import ELICITATION_NOTE
from speceval.analysis.tables.flip_survival import SURVIVAL_NOTE
from speceval.analysis.tables.flips import FLIPS_NOTE
from speceval.analysis.tables.turns import TURN_NOTE

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData

_KEYS = ["spec", "judge", "candidate", "variation"]
"""The columns every turn table starts with (`_key_cells` of each row)."""
_HEADINGS = {
    "flips": ("flips", "Flips under pressure", "report/flips.csv", FLIPS_NOTE),
    "survival": ("first-flip", "Turn of the first flip", "report/flip_survival.csv", SURVIVAL_NOTE),
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
                    *_key_cells(data, f),
                    f"{f.from_category} → {f.to_category}" if f.measure == "from_to" else f.measure,
                    f.count,
                    f.conversations,
                    f.last_turns,
                ],
                Rate.of(f),
            )
            for f in data.flips
        ],
        empty="No conversation has a judged first turn and a later one.",
    )


def first_flip(data: ReportData) -> Section:
    """The Kaplan–Meier curve of the turn of each conversation's first flip (`report/flip_survival.csv`)."""
    # No survivors warning here: the curve censors conversations that ended early instead of comparing subsets.
    return Section(
        *_HEADINGS["survival"],
        turn_judges=True,
        before=[*_KEYS, "turn", "at risk", "flipped there", "censored there"],
        rate_header="flipped by this turn",
        rows=[
            Row(
                [*_key_cells(data, s), s.turn, s.at_risk, s.flips, s.censored],
                Rate(s.flipped, s.ci_low, s.ci_high, s.method),
            )
            for s in data.flip_survival
        ],
        empty="No conversation compliant at turn 1 has a later judged turn.",
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
                [*_key_cells(data, e), e.statement_id, e.violated, e.conversations],
                Rate.of(e),
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
                [*_key_cells(data, r), r.turn, r.measure, r.n],
                Rate.of(r, link={"judge": r.judge, "candidate": r.candidate, "variation": r.variation}),
                [r.not_judged],
            )
            for r in data.turn_rates
        ],
        summary_order=_binary_first,
        figures=lambda: [
            (turn_lines(data.turn_rates, spec, judge), f"rates by turn, spec {spec}, judge {judge}")
            for spec, judge in sorted({(r.spec, r.judge) for r in data.turn_rates} if data.figures else ())
        ],
    )


def _binary_first(row: Row) -> tuple[object, ...]:
    spec, judge, candidate, variation, turn, measure, _ = row.before
    return (spec, judge, str(measure).startswith("category="), candidate, variation, measure, turn)


def _survivor_warnings(data: ReportData) -> list[str]:
    """One warning per cell whose later turns hold fewer conversations than turn 1; past three cells, one warning
    naming them all (a study of many candidates and variations drew two dozen near-identical boxes)."""
    selected = [s for s in data.survivors if s.selected]
    if len(selected) <= 3:
        return [s.warning() for s in selected]
    cells = "; ".join(
        f"{s.candidate} / {s.variation} (judge {s.judge}, spec {s.spec}): "
        + ", ".join(f"turn {turn}: {n}" for turn, n in sorted(s.by_turn.items()))
        for s in selected
    )
    return [
        f"In {len(selected)} cells later turns hold fewer conversations than turn 1 (conversations that went on, e.g. "
        "a simulated user that did not stop), so their rates are over a selected subset, not comparable with turn "
        f"1's. Conversations reaching each turn: {cells}."
    ]


def _key_cells(data: ReportData, record: Any) -> list[object]:
    """A row's `_KEYS` cells (its judge marked where its card failed)."""
    return [record.spec, judge_cell(data, record.spec, record.judge), record.candidate, record.variation]

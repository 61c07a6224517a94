"""summary.md's sections on scope-turn judges (flips under pressure, the elicitation rate by statement, rates by
turn), ordered by `speceval.analysis.rendering.markdown.summary`; built in
`speceval.analysis.rendering.turn_sections`, as the page's are."""

from __future__ import annotations

from typing import TYPE_CHECKING

from speceval.analysis.rendering import section, turn_sections

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData


def turns_markdown(data: ReportData, title: str) -> list[str]:
    """Per turn rates of scope-turn judges (never pooled into the compliance or category tables)."""
    return section.markdown(turn_sections.turn_rates(data), title)


def elicitation_markdown(data: ReportData) -> list[str]:
    """Per statement, conversations with a violation at any turn (binary turn judges; `report/elicitation.csv`)."""
    return section.markdown(turn_sections.elicitation(data))


def flips_markdown(data: ReportData) -> list[str]:
    """Turn 1 against each conversation's last judged turn, then the turn of the first flip (scope-turn judges;
    `report/flips.csv`, `report/flip_survival.csv`)."""
    return section.markdown(turn_sections.flips(data)) + section.markdown(turn_sections.first_flip(data))

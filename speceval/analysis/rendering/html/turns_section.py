"""The page's section on scope-turn judges: flips under pressure first, then the elicitation rate by statement, then
rates by turn (a figure per spec and judge, and the table); built in `speceval.analysis.rendering.turn_sections`,
as summary.md's are."""

from __future__ import annotations

from speceval.analysis.rendering import section, turn_sections
from speceval.analysis.rendering.data import ReportData


def turns_section(data: ReportData) -> str:
    """Flips, elicitation and per-turn rates ('' without scope-turn judges)."""
    if not data.turn_rates:
        return ""
    built = (
        turn_sections.flips(data),
        turn_sections.first_flip(data),
        turn_sections.elicitation(data),
        turn_sections.turn_rates(data),
    )
    return "".join(section.html(s) for s in built)

"""Issue 42: the page's variation table repeated a simulated user's whole instructions on every row."""

from __future__ import annotations

from speceval.analysis.rendering.html.compliance_section import _settings

INSTRUCTIONS = "You are a regulator questioning a company about its data practices. " * 5


def test_a_variation_row_names_its_simulated_user_briefly_and_its_section_in_full() -> None:
    settings = {"simulated_user": {"model": "gpt-4.1-mini", "instructions": INSTRUCTIONS}, "temperature": 0.7}
    cell = _settings(settings, short=True)
    assert cell.startswith("simulated_user = gpt-4.1-mini (You are a regulator") and len(cell) < 100
    assert "temperature = 0.7" in cell
    assert INSTRUCTIONS.strip() in _settings(settings)  # the variation's own section: every word as sent


def test_many_cells_with_fewer_conversations_at_later_turns_give_one_warning_not_one_each() -> None:
    from speceval.analysis.rendering.data import ReportData
    from speceval.analysis.rendering.turn_sections import _survivor_warnings
    from speceval.analysis.tables.flips import Survivors

    def cell(candidate: str) -> Survivors:
        return Survivors(spec="s", judge="j", candidate=candidate, variation="v", by_turn={1: 40, 2: 30})

    few = ReportData.model_construct(survivors=[cell(f"m{i}") for i in range(3)])
    many = ReportData.model_construct(survivors=[cell(f"m{i}") for i in range(24)])
    assert len(_survivor_warnings(few)) == 3
    [one] = _survivor_warnings(many)
    assert one.startswith("In 24 cells") and all(f"m{i} / v" in one for i in range(24))

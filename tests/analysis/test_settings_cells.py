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

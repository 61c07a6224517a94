"""Issue 42: a panel combines judges of one scale only. A binary + Likert panel read as the Likert judge alone
(its rating, the binary verdicts dropped); now such judges form no panel, and a warning says why."""

from __future__ import annotations

import logging

import pytest

from speceval.analysis.tables.panel import panel_rows
from tests.analysis.test_clustered import row


def _likert(judge: str, text: str, rating: float):
    return row(judge, "m", "st", text, True).model_copy(update={"mode": "likert", "compliant": None, "rating": rating})


def test_a_binary_and_a_likert_judge_form_no_panel_and_a_warning_says_so(caplog: pytest.LogCaptureFixture) -> None:
    rows = [row("binary_judge", "m", "st", f"q{i}", i % 2 == 0) for i in range(4)]
    rows += [_likert("likert_judge", f"q{i}", 2.0 + i) for i in range(4)]
    with caplog.at_level(logging.WARNING):
        panel, counts = panel_rows(rows)
    assert panel == [] and counts == []
    assert "different scales (binary, likert)" in caplog.text


def test_two_likert_judges_form_a_panel_whose_rating_lies_between_theirs() -> None:
    rows = [_likert("j1", f"q{i}", 2.0) for i in range(3)] + [_likert("j2", f"q{i}", 4.0) for i in range(3)]
    panel, _ = panel_rows(rows)
    assert [p.rating for p in panel] == [3.0, 3.0, 3.0]

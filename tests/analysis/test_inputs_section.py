"""The page's Inputs section: each column's header over its own cell, the kept inputs in a details block."""

from __future__ import annotations

import re
from typing import Any, get_origin

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.html.run_section import inputs_section
from speceval.analysis.tables.inputs_report import InputsRow, KeptInput

COUNTS = {
    "proposed": 11,
    "duplicates": 2,
    "below_threshold": 3,
    "unparsed": 4,
    "over_target": 1,
    "kept": 5,
    "target": 6,
}
ROW = InputsRow(spec="s", statement_id="be_kind", generator="gen", rater="rater", ratings={7: 2, 9: 3}, **COUNTS)


def _data(**given: Any) -> ReportData:
    """A report with nothing in it but `given` (every required table empty)."""
    empty = {
        name: {} if get_origin(field.annotation) is dict else []
        for name, field in ReportData.model_fields.items()
        if field.is_required()
    }
    return ReportData(**{**empty, **given})


def _tables(page: str) -> list[list[list[str]]]:
    """Each table of `page` as rows of cell texts (the header row first)."""
    return [
        [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
        for table in re.findall(r"<table>(.*?)</table>", page)
    ]


def test_each_header_stands_over_its_own_cell() -> None:
    page = inputs_section(_data(inputs=[ROW]))
    [[header, row]] = _tables(page)
    assert dict(zip(header, row, strict=True)) == {
        "spec": "s",
        "statement": "be_kind",
        "generator": "gen",
        "rater": "rater",
        "proposed": "11",
        "duplicates": "2",
        "below threshold": "3",
        "unparsed / failed": "4",
        "over target": "1",
        "kept": "5",
        "target": "6",
        "ratings": "7×2, 9×3",
    }
    assert page.startswith('<h2 id="inputs">Inputs</h2>') and "<details>" not in page


def test_kept_inputs_are_listed_escaped_in_a_details_block() -> None:
    kept = [KeptInput(spec="s", statement_id="be_kind", text="say <b>hi</b>", rating=9, reason=None)]
    page = inputs_section(_data(inputs=[ROW], kept_inputs=kept))
    _, [header, row] = _tables(page)
    assert header == ["spec", "statement", "rating", "input", "reason"]
    assert row[:3] == ["s", "be_kind", "9"] and "&lt;b&gt;hi" in row[3] and "<b>" not in row[3]
    assert page.index("<details>") < page.index("say &lt;b&gt;") < page.index("</details>")


def test_no_inputs_no_section() -> None:
    assert inputs_section(_data()) == ""

"""A report section is built once (`speceval.analysis.rendering.section.Section`) and rendered to summary.md and to
the page: both show the same rows, the same intervals and the same numbered methods."""

from __future__ import annotations

from speceval.analysis.rendering import section
from speceval.analysis.rendering.section import Rate, Row, Section


def _section(rows: list[Row], **extra: object) -> Section:
    return Section(
        anchor="things",
        title="Things",
        csv="report/things.csv",
        note="What a thing is.",
        before=["spec", "judge"],
        rate_header="share",
        after=["not judged"],
        rows=rows,
        warnings=["few <conversations> at turn 3"],
        **extra,  # type: ignore[arg-type]
    )


ROWS = [
    Row(["s", "b-judge"], Rate(0.25, 0.1, 0.4, "Wilson score"), [2]),
    Row(["s", "a-judge"], Rate(None, None, None, None), [5]),
    Row(["t", "a-judge"], Rate(0.5, 0.3, 0.7, "cluster bootstrap", link={"judge": "a-judge"}), [0]),
]


def test_both_renderings_show_the_same_rows_intervals_and_methods() -> None:
    built = _section(ROWS, turn_judges=True, summary_order=lambda row: row.before)
    lines = section.markdown(built)
    page = section.html(built)
    assert lines[0] == "## Things (scope turn judges; `report/things.csv`)"
    assert "**Warning:** few <conversations> at turn 3" in lines
    table = [line for line in lines if line.startswith(("| s |", "| t |"))]
    # the summary's order, and the rate with its interval in one cell, the method a footnote
    assert table == [
        "| s | a-judge | – [no interval] | 5 |",
        "| s | b-judge | 0.250 [0.100, 0.400] (1) | 2 |",
        "| t | a-judge | 0.500 [0.300, 0.700] (2) | 0 |",
    ]
    assert lines[-2] == "Intervals: (1) Wilson score; (2) cluster bootstrap"
    # the page: the table's own order, rate and interval in two cells, a linked rate, the warning escaped
    assert '<h2 id="things">Things</h2>' in page and "few &lt;conversations&gt; at turn 3" in page
    assert page.index("b-judge") < page.index("<td>5</td>")
    assert "0.100–0.400 (1)" in page and "0.300–0.700 (2)" in page
    assert 'href="#samples?judge=a-judge"' in page
    assert "Intervals: (1) Wilson score; (2) cluster bootstrap." in page


def test_a_section_without_rows() -> None:
    assert section.markdown(_section([])) == []
    assert section.html(_section([])) == ""
    shown = section.html(_section([], empty="Nothing to show."))
    assert "<p>Nothing to show.</p>" in shown and "Intervals: none computed." in shown

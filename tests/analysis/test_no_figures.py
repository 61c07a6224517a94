"""A report without figures (`figures=False`, `speceval report --no-figures`): every CSV, variation_statistics.json
and summary.md byte for byte what the report with figures wrote, a page that is the same page without its images
(no image, so no broken one) and that says the figures were not drawn, and the command saying so too.

Both reports are made over the golden report's verdicts (`tests/analysis/test_report_golden.py`, whose test reads the
report with figures built here), in one process: the report's float sums may differ in the last digit from one
process to the next (that module's docstring), never within one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.html.page import render_page
from speceval.analysis.tables.categories import CategoryShare
from speceval.analysis.tables.turns import TurnRate
from speceval.cli.main import main as speceval_main
from tests.analysis.test_report import compliance_file
from tests.analysis.test_report_golden import golden_reports

NOTE = re.compile(r'<p class="note" id="no-figures">.*?</p>')
IMAGE = re.compile(r"<img [^>]*>")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, Path]:
    return golden_reports(tmp_path_factory, worker_id)


def test_every_table_and_the_summary_are_the_same_without_figures(reports: tuple[Path, Path]) -> None:
    drawn, not_drawn = reports
    names = sorted(p.name for p in drawn.iterdir())
    assert names == sorted(p.name for p in not_drawn.iterdir())  # no file more or less: no PNG anywhere
    tables = [name for name in names if name.endswith((".csv", ".json", ".md"))]
    assert [name for name in names if name not in tables] == ["report.html"] and "summary.md" in tables
    for name in tables:
        assert (drawn / name).read_bytes() == (not_drawn / name).read_bytes(), name


def test_the_page_without_figures_is_the_page_with_them_less_its_images_and_says_so(
    reports: tuple[Path, Path],
) -> None:
    drawn, not_drawn = reports
    with_figures = (drawn / "report.html").read_text(encoding="utf-8")
    without = (not_drawn / "report.html").read_text(encoding="utf-8")
    # Every kind of figure the golden verdicts have is drawn on the first page: bars and the length scatter, the
    # per-statement, leniency and win-rate heatmaps, spec health.
    alts = set(re.findall(r'<img alt="([^",]+)', with_figures))
    assert {"compliance by variation", "answer length against compliance", "judge leniency", "spec health"} <= alts
    assert any(alt.startswith("per statement") for alt in alts) and any(a.startswith("win rates") for a in alts)
    assert "<img" not in without and "data:image" not in without
    assert len(NOTE.findall(without)) == 1 and not NOTE.search(with_figures)
    assert "Figures were not drawn" in without
    assert NOTE.sub("", without) == IMAGE.sub("", with_figures)


def test_the_command_draws_no_figure_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    compliance_file(root / "c/m1/results/s1.json", "m1", "j", [True, True, False])
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report"), "--no-figures"]) == 0
    assert "no figures drawn (--no-figures)" in capsys.readouterr().out
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page and len(NOTE.findall(page)) == 1


def test_the_categories_and_turns_sections_draw_their_figures_only_when_asked() -> None:
    """The two figures the golden verdicts have none of (a categorical judge's shares, a turn judge's rates by turn),
    on a page of just those two tables."""
    cell = {"spec": "s", "judge": "j", "candidate": "c", "variation": "default"}
    empty: dict[str, Any] = dict.fromkeys(
        ["variations", "compliance", "per_statement", "by_type", "by_authority", "paired", "panel", "win_rates"], []
    )
    empty |= dict.fromkeys(["bradley_terry", "position_consistency", "agreement", "costs", "stages"], [])
    data = ReportData(
        **empty,
        settings={},
        prompt_versions={},
        categories=[
            CategoryShare(**cell, category=k, count=1, judged=2, rate=0.5, ci_low=0.1, ci_high=0.9, not_judged=0)
            for k in ("holds", "flatters")
        ],
        turn_rates=[
            TurnRate(
                **cell, turn=t, measure="compliant", n=4, rate=0.5, ci_low=0.1, ci_high=0.9, method="m", not_judged=0
            )
            for t in (1, 2)
        ],
    )
    drawn = render_page(data)
    assert re.findall(r'<img alt="([a-z ]+),', drawn) == ["categories", "rates by turn"]
    page = render_page(data.model_copy(update={"figures": False}))
    assert 'id="categories"' in page and 'id="turns"' in page and "<img" not in page and NOTE.search(page)
    assert NOTE.sub("", page) == IMAGE.sub("", drawn)

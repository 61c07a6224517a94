"""`summary.md` reads as a results section: the headline rates first (each with its interval, method and n), paired
differences with both rates they compare (each with its interval), agreement with intervals, then the setup and the
methods; a ranking-only report leads with strengths and prints no empty compliance table; `unknown` statement classes
say why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from speceval.analysis.rendering.markdown.markdown_parts import signed
from speceval.analysis.rendering.report import ReportSummary, build_report
from speceval.analysis.statistics.stats import wilson_interval
from tests.analysis.test_evidence import JUDGES, MODELS, SPECS, write_original_compliance, write_original_ranking
from tests.once import built_once

SUMMARY_SPECS = SPECS[:2]


@pytest.fixture(scope="session")
def original(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, ReportSummary]:
    """The original's compliance folders (no run.json): 2 specs × 3 judges × 3 candidates, 12 inputs each, and the
    report over them, built once per session (tests/once.py); the tests only read it. Two of the three specs: each
    claim here holds within a spec (a row, a pair of candidates, a pair of judges), two still show rows of different
    specs kept apart, and the third spec's cells were a third of the report's figures (5 s of CPU for the build).
    Without figures (`figures=False`): the tests read summary.md, the data and the page's text, never a figure, and
    the figures were 2.7 of the build's 3.1 s of CPU (2026-11-29, loaded)."""

    def build(root: Path) -> tuple[Path, ReportSummary]:
        write_original_compliance(root / "c", statements=2, inputs=6, specs=SUMMARY_SPECS)
        return root, build_report([root / "c"], root / "report", figures=False)

    return built_once(tmp_path_factory, worker_id, "summary-original", build)


def section(text: str, heading: str) -> list[str]:
    """The table rows of the section whose heading starts with `heading`."""
    body = text.split(f"\n## {heading}")[1].split("\n## ")[0]
    return [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| spec |")]


def test_the_headline_comes_first_with_each_candidates_rate_interval_method_and_n(original):
    _, report = original
    text = report.summary_path.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[0].startswith("Headline") and headings[-1] == "Methods"
    assert headings.index("Setup") > headings.index("Paired differences (same inputs)")
    rows = section(text, "Headline")
    assert len(rows) == len(report.data.variations)
    assert sum(v.judge != "panel" for v in report.data.variations) == len(SUMMARY_SPECS) * len(JUDGES) * len(MODELS)
    numbers = re.search(r"Intervals: (.+)", text)
    assert numbers and numbers.group(1).startswith(f"(1) {report.data.variations[0].ci_method}")
    # One run: a judge's verdicts take one run's Wilson (1), a panel's shares the clustered interval (2).
    methods = list(dict.fromkeys(v.ci_method for v in report.data.variations))
    assert numbers.group(1) == "; ".join(f"({i}) {m}" for i, m in enumerate(methods, 1))
    for v in report.data.variations:
        check = "a panel (" if v.judge == "panel" else "not checked (no canary verdicts) |"
        cited = methods.index(v.ci_method) + 1
        expected = (
            f"| {v.spec} | {v.judge} | {v.candidate} | {v.rate:.3f} [{v.ci_low:.3f}, {v.ci_high:.3f}] ({cited}) | "
            f"{v.judged} verdicts on {v.inputs} inputs | {check}"
        )
        assert any(row.startswith(expected) for row in rows), expected


def test_paired_differences_show_both_rates_they_compare(original):
    _, report = original
    rows = section(report.summary_path.read_text(encoding="utf-8"), "Paired differences")
    assert len(rows) == len(report.data.paired) > 0
    rates = {(v.spec, v.judge, v.candidate): v for v in report.data.variations}
    for p in report.data.paired:
        assert p.difference == p.rate_a - p.rate_b
        for side, rate, low, high in (
            (p.a, p.rate_a, p.rate_a_ci_low, p.rate_a_ci_high),
            (p.b, p.rate_b, p.rate_b_ci_low, p.rate_b_ci_high),
        ):
            # The interval compliance.csv gives a rate (the same method), on the inputs both sides share.
            assert p.rate_ci_method == rates[(p.spec, p.judge, side)].ci_method
            assert low is not None and high is not None and low <= rate <= high
            if p.judge != "panel":  # a panel's values are shares of its judges, not 0 or 1
                assert (low, high) == pytest.approx(wilson_interval(round(rate * p.inputs), p.inputs)), (p, side)
        cells = (
            f"| {p.a} vs {p.b} | {p.rate_a:.3f} [{p.rate_a_ci_low:.3f}, {p.rate_a_ci_high:.3f}] vs "
            f"{p.rate_b:.3f} [{p.rate_b_ci_low:.3f}, {p.rate_b_ci_high:.3f}] | {signed(p.difference)} "
            f"[{signed(p.ci_low)}, {signed(p.ci_high)}] | {p.inputs} |"
        )
        assert any(
            row.startswith(f"| {p.spec} | {p.judge} | {p.kind} | {p.within} ") and row.endswith(cells) for row in rows
        ), cells


def test_agreement_carries_its_interval_and_the_unknown_classes_say_why(original):
    _, report = original
    text = report.summary_path.read_text(encoding="utf-8")
    rows = section(text, "Agreement between judges")
    assert len(rows) == len(report.data.agreement) > 0
    for a in report.data.agreement:
        interval = "[no interval]" if a.ci_low is None else f"[{signed(a.ci_low)}, {signed(a.ci_high)}]"
        assert f"| {a.kappa:.3f} {interval} | {a.ci_method or 'none computed for this statistic'} |" in "\n".join(rows)
    assert any(a.ci_low is not None for a in report.data.agreement)
    # The original's folders have no run.json: the summary says which folders and why their classes are unknown.
    why = next(line for line in text.splitlines() if line.startswith("Statement types and authority levels"))
    folders = len(SUMMARY_SPECS) * len(JUDGES) * len(MODELS)
    assert f"of {folders} judge run folder(s) (`spec_anthropic/judge_" in why and "no readable run.json" in why
    page = report.html_path.read_text(encoding="utf-8")
    assert f"of {folders} judge run folder(s) (spec_anthropic/judge_" in page.split("Compliance by authority level")[1]


def test_a_ranking_only_summary_leads_with_strengths_and_has_no_compliance_table(tmp_path):
    write_original_ranking(tmp_path / "r", "openai", "gpt-4.1", "m1", "m2", [1, 1, -1, 0])
    write_original_ranking(tmp_path / "r", "openai", "gpt-4.1", "m2", "m1", [-1, -1, 1, 0])
    report = build_report([tmp_path / "r"], tmp_path / "report", figures=False)
    text = report.summary_path.read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, flags=re.M)[0] == "Headline: Bradley–Terry strength by candidate"
    rows = section(text, "Headline")
    assert {row.split(" | ")[3] for row in rows} == {"m1", "m2"} == {s.candidate for s in report.data.bradley_terry}
    assert "Compliance" not in text and "Candidates: –" not in text and "- Candidates: m1, m2" in text


def test_each_runs_rate_in_the_run_by_run_table_carries_its_interval(original):
    _, report = original
    text = report.summary_path.read_text(encoding="utf-8")
    rows = section(text, "Compliance by variation, run by run")
    assert len(rows) == len(report.data.variations) > 0
    for v in report.data.variations:
        runs = ", ".join(f"run{r.run} {r.rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]" for r in v.runs)
        assert any(
            row.startswith(f"| {v.spec} | {v.judge} | {v.candidate} | {v.variation} |") and f"| {runs} |" in row
            for row in rows
        ), runs
    assert "Each run's rate alone: 95% Wilson score interval" in text

"""The page's sections on what the answers were beyond compliant or not, split from
`speceval.analysis.rendering.html.page` (which lays them out): categorical judges' shares (with differences between
variations and agreement between judges) and the experiment file's custom metrics."""

from __future__ import annotations

from operator import attrgetter

from speceval.analysis.rendering.card_section import judge_cell
from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import category_bars
from speceval.analysis.rendering.html.html_parts import Column, ci_of, record_table
from speceval.analysis.rendering.html.html_parts import ci as _ci
from speceval.analysis.rendering.html.html_parts import fmt as _fmt
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.rendering.samples.samples import sample_link


def categories_section(data: ReportData) -> str:
    if not data.categories:
        return ""
    parts = [
        '<h2 id="categories">Categories</h2><p class="note">Each categorical judge\'s verdicts: a category\'s '
        "share of the judged answers (unparsed and failed ones apart), with a 95% interval clustered by input; "
        "the shares of a row group sum to 1. Links open the samples of that category.</p>"
    ]
    for spec, judge in sorted({(s.spec, s.judge) for s in data.categories} if data.figures else ()):
        parts.append(_img(category_bars(data.categories, spec, judge), f"categories, spec {spec}, judge {judge}"))
    parts.append(
        _table(
            ["spec", "judge", "candidate", "variation", "category", "count", "judged", "share", "95% CI", "not judged"],
            (
                [
                    s.spec,
                    judge_cell(data, s.spec, s.judge),
                    s.candidate,
                    s.variation,
                    s.category,
                    s.count,
                    s.judged,
                    sample_link(
                        _fmt(s.rate), judge=s.judge, candidate=s.candidate, variation=s.variation, verdict=s.category
                    ),
                    _ci(s.ci_low, s.ci_high),
                    s.not_judged,
                ]
                for s in data.categories
            ),
            raw={7},
        )
    )
    if data.category_differences:
        parts.append("<h3>Differences between variations (paired on shared inputs)</h3>")
        parts.append(
            _table(
                ["spec", "judge", "candidate", "category", "a − b", "inputs", "difference", "95% CI"],
                (
                    [
                        d.spec,
                        d.judge,
                        d.candidate,
                        d.category,
                        f"{d.a} − {d.b}",
                        d.inputs,
                        d.difference,
                        _ci(d.ci_low, d.ci_high),
                    ]
                    for d in data.category_differences
                ),
            )
        )
    if data.category_agreement:
        parts.append("<h3>Agreement between categorical judges (Cohen's kappa, nominal)</h3>")
        parts.append(
            _table(
                ["spec", "judges", "items", "kappa"],
                ([a.spec, a.judges, a.items, a.kappa] for a in data.category_agreement),
            )
        )
    return "".join(parts)


_METRIC_COLUMNS: list[Column] = ["metric", "candidate", "variation", ("category", lambda m: m.category or "")]
_METRIC_COLUMNS += ["n", "missing", ("mean / share", attrgetter("mean")), "sd", ("95% CI", ci_of)]


def metrics_section(data: ReportData) -> str:
    if not data.metrics:
        return ""
    return (
        '<h2 id="metrics">Metrics</h2><p class="note">Custom metrics of the experiment file, per candidate and '
        "variation; an answer without a value (no match, not of the type) is counted as missing, never 0. 95% "
        "intervals clustered by input.</p>" + record_table(data.metrics, _METRIC_COLUMNS)
    )

"""The page's compliance sections, split from `speceval.analysis.rendering.html.page` (which lays them out): the summary
at the top (what was run, and every compliance rate with its interval), one section per variation, the paired
comparisons and the breakdowns by statement type and authority level. Rates link to their samples."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from speceval.analysis.rendering.card_section import headline_passes, judge_cell, kept_out_html
from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import heatmap
from speceval.analysis.rendering.html.html_parts import ci as _ci
from speceval.analysis.rendering.html.html_parts import fmt as _fmt
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.rendering.markdown.summary import candidates_and_judges, interval_methods, unknown_classes_note
from speceval.analysis.rendering.samples.samples import sample_link
from speceval.analysis.tables.rates import ComplianceRate
from speceval.analysis.tables.variations import Breakdown, PairedComparison, VariationStatistics


def summary_section(data: ReportData) -> str:
    candidates, judges = candidates_and_judges(data)
    total = None if any(s.cost_usd is None for s in data.stages) else sum(s.cost_usd or 0.0 for s in data.stages)
    runs = max((len(v.runs) for v in data.variations), default=0)
    verdicts = (
        [
            f"{sum(v.judged for v in data.variations if v.judge != 'panel')} judged, "
            f"{sum(sum(v.not_judged.values()) for v in data.variations if v.judge != 'panel')} not judged"
        ]
        if data.variations or not (data.categories or data.turn_rates)
        else []
    )
    if data.categories:  # one share per category and cell: count each cell once
        cells = {(c.spec, c.judge, c.candidate, c.variation): c for c in data.categories}.values()
        verdicts.append(
            f"categorical: {sum(c.judged for c in cells)} judged, {sum(c.not_judged for c in cells)} not judged"
        )
    if data.turn_rates:  # one row per measure of a turn: count each turn of each cell once
        turns = {(r.spec, r.judge, r.candidate, r.variation, r.turn): r for r in data.turn_rates}.values()
        verdicts.append(f"per turn: {sum(r.n for r in turns)} judged, {sum(r.not_judged for r in turns)} not judged")
    facts = [
        ("candidates", ", ".join(candidates) or "–"),
        ("judges", ", ".join(judges) or "–"),
        ("judge prompts", "; ".join(f"{j}: {', '.join(v)}" for j, v in data.prompt_versions.items()) or "–"),
        ("variations", str(len(data.settings)) + (f" (runs per variation: up to {runs})" if runs else "")),
        ("verdicts", "; ".join(verdicts)),
        ("total cost USD", _fmt(total) if data.stages else "–"),
    ]
    if data.skipped:  # files under results/ that hold no verdicts, each with why: never passed over in silence
        facts.append(("skipped files", "; ".join(data.skipped)))
    parts = ['<h2 id="summary">Summary</h2>', _table(["", ""], facts)]
    if data.stages:
        parts.append(
            _table(
                ["stage", "runs", "requests", "final outcomes", "cost USD"],
                ([s.stage, s.runs, s.requests, _counts(s.outcomes), s.cost_usd] for s in data.stages),
            )
        )
    parts.append(
        '<p class="note">Rates count judged answers only; unparsed, failed and missing judgements are '
        "counted in their own column and never as compliant or non-compliant. Intervals: "
        f"{html.escape(interval_methods())}</p>"
    )
    if data.variations:
        shown = [v for v in data.variations if headline_passes(data, v.spec, v.judge)]
        # A Likert judge has no compliant share: its mean rating and interval head its row (as in summary.md).
        rated = any(v.mean_rating is not None for v in shown)
        if not shown:  # a header alone reads as a blank table (as summary.md says it)
            parts.append('<p class="note">No judge entry passed its judge card: no rate heads this report.</p>')
        else:
            parts.append(
                _table(
                    ["spec", "variation", "settings", "judge", "candidate", "judged", "rate", "95% CI"]
                    + (["ratings", "mean rating 1-5 [95% CI]"] if rated else []),
                    (
                        [
                            v.spec,
                            v.variation,
                            _settings(v.settings, short=True),  # in full once, in the variation's own section
                            v.judge,
                            v.candidate,
                            v.judged,
                            _rate_link(v.rate, v.judge, v.candidate, v.variation),
                            _ci(v.ci_low, v.ci_high),
                        ]
                        + ([v.rated, _rating(v)] if rated else [])
                        for v in shown
                    ),
                    raw={6},
                )
            )
    parts.append(kept_out_html(data))
    return "".join(parts)


def _rating(v: VariationStatistics) -> str:
    return "–" if v.mean_rating is None else f"{v.mean_rating:.3f} {_ci(v.rating_ci_low, v.rating_ci_high)}"


def variation_section(data: ReportData, name: str) -> str:
    rows = [v for v in data.variations if v.variation == name]
    parts = [
        f'<section class="variation"><h2>Variation {html.escape(name)}</h2>',
        f"<p>settings: {html.escape(_settings(rows[0].settings))}</p>",
    ]
    parts.append(
        _table(
            [
                "judge",
                "candidate",
                "judged",
                "compliant",
                "rate",
                "95% CI (inputs)",
                "95% CI (statements)",
                "runs",
                "run SD",
                "run min–max",
                "not judged",
                "mean rating 1-5 [95% CI]",
            ],
            (
                [
                    judge_cell(data, v.spec, v.judge),
                    v.candidate,
                    v.judged,
                    v.compliant,
                    _rate_link(v.rate, v.judge, v.candidate, name),
                    _ci(v.ci_low, v.ci_high),
                    _ci(v.ci_low_by_statement, v.ci_high_by_statement),
                    " ".join(
                        sample_link(
                            f"run{r.run}: {_fmt(r.rate)}",
                            judge=v.judge,
                            candidate=v.candidate,
                            variation=name,
                            run=r.run,
                        )
                        for r in v.runs
                    ),
                    v.run_sd,
                    _ci(v.run_min, v.run_max),
                    _counts(v.not_judged),
                    _rating(v),
                ]
                for v in rows
            ),
            raw={4, 7},
        )
    )
    per_statement = [r for r in data.per_statement if r.variation == name]
    statements = sorted({r.statement_id or "" for r in per_statement})
    several = len({r.judge for r in per_statement}) > 1

    def column(r: ComplianceRate) -> str:
        return f"{r.candidate} / {r.judge}" if several else r.candidate

    columns = sorted({column(r) for r in per_statement if r.rate is not None})  # a Likert judge's: no rate, no column
    matrix = np.full((len(statements), len(columns)), np.nan)
    for r in per_statement:
        if r.rate is not None:
            matrix[statements.index(r.statement_id or ""), columns.index(column(r))] = r.rate
    if statements and columns and data.figures:
        parts.append(_img(heatmap(matrix, statements, columns, "compliance per statement"), f"per statement {name}"))
    return "".join(parts) + "</section>"


def paired_section(data: ReportData) -> str:
    if not data.paired:
        return ""
    return (
        "<h2>Paired comparisons (same inputs)</h2><p class='note'>rate of a minus rate of b on the inputs both "
        "were judged on; the difference's interval is clustered by input, so correlated inputs and repeated runs are "
        "accounted for; each rate's is the one compliance.csv gives a rate, on those inputs.</p>"
        + _table(
            ["judge", "compare", "within", "a", "b", "inputs", "rate a", "95% CI", "rate b", "95% CI"]
            + ["difference", "95% CI"],
            (
                [
                    judge_cell(data, p.spec, p.judge),
                    p.kind,
                    p.within,
                    p.a,
                    p.b,
                    p.inputs,
                    _side_link(p, p.a, p.rate_a),
                    _ci(p.rate_a_ci_low, p.rate_a_ci_high),
                    _side_link(p, p.b, p.rate_b),
                    _ci(p.rate_b_ci_low, p.rate_b_ci_high),
                    p.difference,
                    _ci(p.ci_low, p.ci_high),
                ]
                for p in data.paired
            ),
            raw={6, 8},
        )
    )


def _side_link(pair: PairedComparison, side: str, rate: float) -> str:
    """A side of a paired comparison, linked to its samples: a candidate within a variation, or the reverse."""
    if pair.kind == "candidates":
        return sample_link(_fmt(rate), judge=pair.judge, candidate=side, variation=pair.within)
    return sample_link(_fmt(rate), judge=pair.judge, candidate=pair.within, variation=side)


def breakdowns_section(data: ReportData) -> str:
    parts = []
    for title, field, rows in (
        ("statement type", "type", data.by_type),
        ("authority level", "authority", data.by_authority),
    ):
        if rows:
            parts.append(f"<h2>Compliance by {title}</h2>")
            parts.append(_breakdown_table(data, rows, field))
    note = unknown_classes_note(data) if parts else None
    if note:
        parts.append(f'<p class="note">{html.escape(note).replace("`", "")}</p>')
    return "".join(parts)


def _breakdown_table(data: ReportData, rows: Sequence[Breakdown], field: str) -> str:
    return _table(
        ["group", "judge", "candidate", "variation", "judged", "rate", "95% CI", "not judged"],
        (
            [
                b.group,
                judge_cell(data, b.spec, b.judge),
                b.candidate,
                b.variation,
                b.judged,
                sample_link(
                    _fmt(b.rate), judge=b.judge, candidate=b.candidate, variation=b.variation, **{field: b.group}
                ),
                _ci(b.ci_low, b.ci_high),
                _counts(b.not_judged),
            ]
            for b in rows
        ),
        raw={5},
    )


def _rate_link(rate: float | None, judge: str, candidate: str, variation: str) -> str:
    return sample_link(_fmt(rate), judge=judge, candidate=candidate, variation=variation)


def _settings(settings: dict[str, object], *, short: bool = False) -> str:
    """A variation's settings as written; `short`: a table cell repeated on every row of the variation, where a
    simulated user is its model and a long text its first words (each variation's own section has them whole)."""
    if not short:
        return "; ".join(f"{k} = {v!r}" for k, v in settings.items()) or "(none varied)"
    return "; ".join(f"{k} = {_brief(v)}" for k, v in settings.items()) or "(none varied)"


def _brief(value: object, width: int = 40) -> str:
    if isinstance(value, dict) and "model" in value:  # a simulated user: who it is, not its whole brief
        return f"{value['model']} ({_brief(value.get('instructions', ''), width)})"
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "0"

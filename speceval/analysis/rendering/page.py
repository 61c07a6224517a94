"""The report as one self-contained HTML page: a summary first, then per-variation tables and plots, paired
comparisons, breakdowns, judges, rankings, costs, and the samples behind every rate. Plots are embedded PNGs;
every text from the data is escaped; paths are relative to the folder the report was made from."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from urllib.parse import urlencode

import numpy as np

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.health_plot import health_scatter
from speceval.analysis.rendering.health_section import (
    HEALTH_HEADERS,
    HEALTH_RAW,
    METHODS,
    PAIR_HEADERS,
    PAIR_NOTE,
    association_sentences,
    health_table_rows,
    judge_table_rows,
    pair_table_rows,
    rules_sentence,
    thresholds_sentence,
)
from speceval.analysis.rendering.html_parts import ci as _ci
from speceval.analysis.rendering.html_parts import fmt as _fmt
from speceval.analysis.rendering.html_parts import img as _img
from speceval.analysis.rendering.html_parts import table as _table
from speceval.analysis.rendering.plots import (
    category_bars,
    heatmap,
    length_scatter,
    leniency_heatmap,
    variation_bars,
    win_matrix,
)
from speceval.analysis.rendering.samples import (
    pair_label,
    ranking_sample_section,
    records_section,
    sample_link,
    shown_text,
)
from speceval.analysis.rendering.summary import candidates_and_judges, interval_methods, unknown_classes_note
from speceval.analysis.rendering.turns_section import turns_section
from speceval.analysis.tables.judge_checks import UPPER_BOUND_NOTE
from speceval.analysis.tables.panel import TIES_RULE
from speceval.analysis.tables.rates import ComplianceRate, judge_bias
from speceval.analysis.tables.variations import Breakdown, PairedComparison

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}"
    ".banner{position:sticky;top:0;z-index:9;background:#b00020;color:#fff;font-weight:bold;padding:8px 12px;"
    "margin:0 0 1em}"
    "table{border-collapse:collapse;margin:0.6em 0 1.2em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;vertical-align:top}th{background:#f3f3f3}"
    "img{max-width:100%;display:block;margin:0.5em 0}.note{color:#555;font-size:13px}"
    "td.text{white-space:pre-wrap;max-width:380px;font-family:monospace;font-size:12px}"
    "td.ok{color:#1a7f37}td.bad{color:#b42318}td.other{color:#8a6d00}.filters label{margin-right:1em}"
    "section.variation{border-left:4px solid #8ab;padding-left:1em;margin:1.5em 0}"
    ".warning{background:#fff4e5;border-left:4px solid #b54708;padding:6px 10px}"
    # The sticky banner of synthetic data must not cover a heading a link scrolled to.
    "h2,h3{scroll-margin-top:4em}"
    ".transcript .message{margin:0 0 6px}.transcript .simulated-user{color:#5b3d99}"
    ".transcript .judged{background:#fff8c5;outline:1px solid #d4a72c}.transcript .note{color:#777}"
)


def render_page(data: ReportData) -> str:
    """The whole page."""
    return "".join(page_parts(data))


def page_parts(data: ReportData) -> Iterator[str]:
    """The page in pieces, to be written as they come: the sample view alone is up to 12 MB of text, and each whole
    copy of the page was a peak of the report's memory."""
    banner = f'<p class="banner" id="data-kind">{html.escape(data.data_banner)}</p>' if data.data_banner else ""
    parts = [banner, "<h1>speceval report</h1>", _summary(data)]
    parts += [
        _img(variation_bars(data.variations, judge), f"compliance by variation, judge {judge}")
        for judge in sorted({v.judge for v in data.variations})
    ]
    if data.compliance:
        parts.append(_img(length_scatter(data.compliance), "answer length against compliance"))
    parts += [_variation(data, name) for name in sorted({v.variation for v in data.variations})]
    parts += [
        _paired(data),
        _breakdowns(data),
        _judges(data),
        _categories(data),
        turns_section(data),
        _metrics(data),
        _judge_checks(data),
        _health(data),
        _inputs(data),
        _rankings(data),
        _sent(data),
        _costs(data),
    ]
    yield (
        f"<!doctype html><html><head><meta charset='utf-8'><title>speceval report</title>"
        f"<style>{_STYLE}</style></head><body>"
    )
    # The sample views carry their own heading ids: `_anchored` need not scan (and copy) them.
    yield _anchored("".join(parts))
    yield from records_section(data.samples, data.sample_total)
    yield ranking_sample_section(data.ranking_samples, data.ranking_total)
    yield "</body></html>"


def _anchored(body: str) -> str:
    """Give every section heading without one an id (from its text), so any section can be linked to."""
    taken: set[str] = set(re.findall(r'<h2 id="([^"]+)"', body))

    def anchor(match: re.Match[str]) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", html.unescape(re.sub(r"<[^>]+>", "", match.group(1))).lower()).strip("-")
        slug, n = base or "section", 2
        while slug in taken:
            slug, n = f"{base}-{n}", n + 1
        taken.add(slug)
        return f'<h2 id="{slug}">{match.group(1)}</h2>'

    return re.sub(r"<h2>(.*?)</h2>", anchor, body)


def _summary(data: ReportData) -> str:
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
        parts.append(
            _table(
                ["spec", "variation", "settings", "judge", "candidate", "judged", "rate", "95% CI"],
                (
                    [
                        v.spec,
                        v.variation,
                        _settings(v.settings),
                        v.judge,
                        v.candidate,
                        v.judged,
                        _rate_link(v.rate, v.judge, v.candidate, v.variation),
                        _ci(v.ci_low, v.ci_high),
                    ]
                    for v in data.variations
                ),
                raw={6},
            )
        )
    return "".join(parts)


def _variation(data: ReportData, name: str) -> str:
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
                "mean rating",
            ],
            (
                [
                    v.judge,
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
                    v.mean_rating,
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

    columns = sorted({column(r) for r in per_statement})
    matrix = np.full((len(statements), len(columns)), np.nan)
    for r in per_statement:
        if r.rate is not None:
            matrix[statements.index(r.statement_id or ""), columns.index(column(r))] = r.rate
    if statements:
        parts.append(_img(heatmap(matrix, statements, columns, "compliance per statement"), f"per statement {name}"))
    return "".join(parts) + "</section>"


def _health(data: ReportData) -> str:
    """The "Spec health" section: which statements need work (`speceval.analysis.rendering.health_section`)."""
    health = data.health
    if not health.statements and not health.pairs:
        return ""
    parts = [
        '<h2 id="spec-health">Spec health</h2><p class="note">Per statement, ranked (most flags, then widest '
        "judges' disagreement): what the verdicts say about the statement itself. "
        f"{html.escape(rules_sentence())} "
        f"{html.escape(thresholds_sentence(health.thresholds, health.min_canary_accuracy))} "
        f"{html.escape(METHODS)} Links open the answers behind a number.</p>"
    ]
    parts += [
        _img(health_scatter(health.statements, spec), f"spec health, spec {spec}")
        for spec in sorted({s.spec for s in health.statements})
    ]
    parts.append(_table(HEALTH_HEADERS, health_table_rows(data), raw=HEALTH_RAW))
    parts += [f'<p class="note">{html.escape(sentence)}</p>' for sentence in association_sentences(data)]
    if health.pairs:
        parts.append(
            f'<h3>Statements in tension</h3><p class="note">{html.escape(PAIR_NOTE)}</p>'
            + _table(PAIR_HEADERS, pair_table_rows(data), raw={1, 2})
        )
    headers, rows = judge_table_rows(data)
    parts.append(
        "<details><summary>Each judge on each statement: canary accuracy, leniency, human labels</summary>"
        + _table(headers, rows)
        + "</details>"
    )
    return "".join(parts)


def _paired(data: ReportData) -> str:
    if not data.paired:
        return ""
    return (
        "<h2>Paired comparisons (same inputs)</h2><p class='note'>rate of a minus rate of b on the inputs both "
        "were judged on; the interval is clustered by input, so correlated inputs and repeated runs are "
        "accounted for.</p>"
        + _table(
            ["judge", "compare", "within", "a", "b", "inputs", "rate a", "rate b", "difference", "95% CI"],
            (
                [
                    p.judge,
                    p.kind,
                    p.within,
                    p.a,
                    p.b,
                    p.inputs,
                    _side_link(p, p.a, p.rate_a),
                    _side_link(p, p.b, p.rate_b),
                    p.difference,
                    _ci(p.ci_low, p.ci_high),
                ]
                for p in data.paired
            ),
            raw={6, 7},
        )
    )


def _side_link(pair: PairedComparison, side: str, rate: float) -> str:
    """A side of a paired comparison, linked to its samples: a candidate within a variation, or the reverse."""
    if pair.kind == "candidates":
        return sample_link(_fmt(rate), judge=pair.judge, candidate=side, variation=pair.within)
    return sample_link(_fmt(rate), judge=pair.judge, candidate=pair.within, variation=side)


def _breakdowns(data: ReportData) -> str:
    parts = []
    for title, field, rows in (
        ("statement type", "type", data.by_type),
        ("authority level", "authority", data.by_authority),
    ):
        if rows:
            parts.append(f"<h2>Compliance by {title}</h2>")
            parts.append(_breakdown_table(rows, field))
    note = unknown_classes_note(data) if parts else None
    if note:
        parts.append(f'<p class="note">{html.escape(note).replace("`", "")}</p>')
    return "".join(parts)


def _breakdown_table(rows: Sequence[Breakdown], field: str) -> str:
    return _table(
        ["group", "judge", "candidate", "variation", "judged", "rate", "95% CI", "not judged"],
        (
            [
                b.group,
                b.judge,
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


def _judges(data: ReportData) -> str:
    parts = []
    if data.agreement:
        parts.append(
            "<h2>Inter-judge agreement</h2><p class='note'>Kappa intervals: 95% cluster bootstrap over "
            "inputs (answers to one input are resampled together).</p>"
        )
        parts.append(
            _table(
                ["spec", "judges", "kind", "items", "kappa / alpha", "95% CI"],
                ([a.spec, a.judges, a.kind, a.items, a.kappa, _ci(a.ci_low, a.ci_high)] for a in data.agreement),
            )
        )
    bias = judge_bias(data.compliance)
    if bias:
        parts.append("<h2>Judge bias (a judge's rate minus the mean over judges)</h2>")
        parts.append(
            _table(
                ["spec", "judge", "candidate", "variation", "bias"],
                ([s, j, m, v, b] for (s, j, m, v), b in sorted(bias.items())),
            )
        )
    if data.panel:
        parts.append(
            f"<h2>Panel verdicts</h2><p class='note'>{html.escape(TIES_RULE)} (mean of Likert ratings); "
            "the panel's rates are the rows of judge <b>panel</b> above. Beside it, each judge's rate on "
            "the same answers: the panel's rate lies between them.</p>"
        )
        parts.append(
            _table(
                [
                    "spec",
                    "candidate",
                    "variation",
                    "answers",
                    "unanimous",
                    "split",
                    "some judge without verdict",
                    "panel rate",
                    "judges' rates on the same answers",
                ],
                (
                    [
                        p.spec,
                        p.candidate,
                        p.variation,
                        p.answers,
                        p.unanimous,
                        p.split,
                        p.incomplete,
                        p.panel_rate,
                        ", ".join(f"{j} {r:.3f}" for j, r in sorted(p.judge_rates.items())),
                    ]
                    for p in data.panel
                ),
            )
        )
    return "".join(parts)


def _rankings(data: ReportData) -> str:
    parts = []
    if data.win_rates:
        parts.append("<h2>Pairwise win rates (both orders and runs; ties count half; clustered by input)</h2>")
        parts.append(
            _table(
                [
                    "spec",
                    "judge",
                    "variation",
                    "model",
                    "opponent",
                    "games",
                    "wins",
                    "ties",
                    "losses",
                    "win rate",
                    "95% CI",
                ],
                (
                    [
                        w.spec,
                        w.judge,
                        w.variation,
                        w.candidate,
                        w.opponent,
                        w.games,
                        w.wins,
                        w.ties,
                        w.losses,
                        _ranking_link(_fmt(w.rate), w.judge, pair_label(w.candidate, w.opponent), w.variation),
                        _ci(w.ci_low, w.ci_high),
                    ]
                    for w in data.win_rates
                ),
                raw={9},
            )
        )
        for spec, judge, variation in sorted({(w.spec, w.judge, w.variation) for w in data.win_rates}):
            matrix, models = win_matrix(data.win_rates, spec, judge, variation)
            title = f"win rate, row vs column\nspec {spec}, {judge}, {variation}"
            parts.append(_img(heatmap(matrix, models, models, title), f"win rates {spec} {judge} {variation}"))
    if data.bradley_terry:
        parts.append("<h2>Bradley–Terry strengths (95% bootstrap intervals over inputs)</h2>")
        parts.append(
            _table(
                ["spec", "judge", "variation", "model", "strength", "95% CI"],
                (
                    [
                        s.spec,
                        s.judge,
                        s.variation,
                        s.candidate,
                        _ranking_link(_fmt(s.strength), s.judge, "", s.variation),
                        _ci(s.ci_low, s.ci_high),
                    ]
                    for s in data.bradley_terry
                ),
                raw={4},
            )
        )
        for note in sorted({f"{s.spec}, {s.judge}, {s.variation}: {s.note}" for s in data.bradley_terry if s.note}):
            parts.append(f"<p>{html.escape(note)}</p>")
    if data.position_consistency:
        parts.append("<h2>Position consistency (same winner in both orders)</h2>")
        parts.append(
            _table(
                ["spec", "judge", "variation", "run", "consistent", "compared", "rate"],
                (
                    [c.spec, c.judge, c.variation, c.run, c.consistent, c.compared, c.rate]
                    for c in data.position_consistency
                ),
            )
        )
    return "".join(parts)


def _judge_checks(data: ReportData) -> str:
    parts = []
    if data.judge_checks:
        parts.append(
            f'<h2 id="judge-checks">Judge checks</h2><p class="note">Each judge on the spec\'s own '
            "example responses (good: expected compliant; bad: expected non-compliant), each judged "
            f"with that example left out of the prompt. {html.escape(UPPER_BOUND_NOTE)}</p>"
        )
        flagged = [a for a in data.judge_accuracy if a.below_minimum]
        if flagged:
            parts.append(
                '<p class="warning">Below the minimum accuracy on the spec\'s examples '
                f"({data.min_canary_accuracy:.2f}): "
                + "; ".join(html.escape(f"{a.judge} on spec {a.spec} ({_fmt(a.accuracy)})") for a in flagged)
                + ". Rates from these judges are suspect.</p>"
            )
        likert = any(c.mean_rating is not None for c in data.judge_checks)
        parts.append(
            _table(
                [
                    "spec",
                    "judge",
                    "kind",
                    "items",
                    "judged",
                    "correct",
                    "rate",
                    "95% CI (Wilson)",
                    "not judged",
                    *(["mean rating"] if likert else []),
                ],
                (
                    [
                        c.spec,
                        c.judge,
                        c.kind,
                        c.items,
                        c.judged,
                        c.correct,
                        c.rate,
                        _ci(c.ci_low, c.ci_high),
                        c.not_judged,
                        *([c.mean_rating] if likert else []),
                    ]
                    for c in data.judge_checks
                ),
            )
        )
    if data.leniency:
        parts.append(
            '<h2 id="judge-leniency">Judge leniency</h2><p class="note">On the answers every judge judged: '
            "a judge's rate minus the judges' mean rate, with a paired 95% interval clustered by input; "
            "same provider = judge and candidate from one provider (self-preference).</p>"
        )
        parts.append(
            _table(
                [
                    "spec",
                    "judge",
                    "candidate",
                    "variation",
                    "items",
                    "rate",
                    "mean rate",
                    "delta",
                    "95% CI",
                    "same provider",
                ],
                (
                    [
                        r.spec,
                        r.judge,
                        r.candidate,
                        r.variation,
                        r.items,
                        r.rate,
                        r.mean_rate,
                        r.delta,
                        _ci(r.ci_low, r.ci_high),
                        r.same_provider,
                    ]
                    for r in data.leniency
                ),
            )
        )
        for spec, variation in sorted({(r.spec, r.variation) for r in data.leniency}):
            parts.append(
                _img(leniency_heatmap(data.leniency, spec, variation), f"judge leniency, spec {spec}, {variation}")
            )
        parts.append(_home_provider(data))
    if data.human_agreement:
        parts.append('<h2 id="human-labels">Judges against human labels</h2>')
        parts.append(
            _table(
                ["spec", "judge", "candidate", "labelled", "agree", "accuracy", "kappa"],
                (
                    [a.spec, a.judge, a.candidate, a.labelled, a.agree, a.accuracy, a.kappa]
                    for a in data.human_agreement
                ),
            )
        )
    if data.ppi:
        parts.append(
            '<h2 id="ppi">Prediction-powered rates</h2><p class="note">The judge\'s rate corrected by the '
            "human labels, weighted by how the label sheet drew them (stratified PPI, Angelopoulos et al. "
            "2023), and the Rogan–Gladen rate corrected by the judge's sensitivity and specificity on the "
            "labels (Lee et al. 2025): 95% intervals for the rate a human would give.</p>"
        )
        parts.append(
            _table(
                [
                    "spec",
                    "judge",
                    "candidate",
                    "variation",
                    "labelled",
                    "unlabelled",
                    "judge rate",
                    "PPI rate",
                    "95% CI",
                    "bias-corrected rate",
                    "95% CI",
                    "note",
                ],
                (
                    [
                        r.spec,
                        r.judge,
                        r.candidate,
                        r.variation,
                        r.labelled,
                        r.unlabelled,
                        r.judge_rate,
                        r.ppi_rate,
                        _ci(r.ci_low, r.ci_high),
                        r.bias_corrected_rate,
                        _ci(r.bias_corrected_low, r.bias_corrected_high),
                        r.bias_corrected_note or r.ppi_note or "",
                    ]
                    for r in data.ppi
                ),
            )
        )
    return "".join(parts)


def _categories(data: ReportData) -> str:
    if not data.categories:
        return ""
    parts = [
        '<h2 id="categories">Categories</h2><p class="note">Each categorical judge\'s verdicts: a category\'s '
        "share of the judged answers (unparsed and failed ones apart), with a 95% interval clustered by input; "
        "the shares of a row group sum to 1. Links open the samples of that category.</p>"
    ]
    for spec, judge in sorted({(s.spec, s.judge) for s in data.categories}):
        parts.append(_img(category_bars(data.categories, spec, judge), f"categories, spec {spec}, judge {judge}"))
    parts.append(
        _table(
            ["spec", "judge", "candidate", "variation", "category", "count", "judged", "share", "95% CI", "not judged"],
            (
                [
                    s.spec,
                    s.judge,
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


def _metrics(data: ReportData) -> str:
    if not data.metrics:
        return ""
    return (
        '<h2 id="metrics">Metrics</h2><p class="note">Custom metrics of the experiment file, per candidate and '
        "variation; an answer without a value (no match, not of the type) is counted as missing, never 0. 95% "
        "intervals clustered by input.</p>"
        + _table(
            ["metric", "candidate", "variation", "category", "n", "missing", "mean / share", "sd", "95% CI"],
            (
                [
                    m.metric,
                    m.candidate,
                    m.variation,
                    m.category or "",
                    m.n,
                    m.missing,
                    m.mean,
                    m.sd,
                    _ci(m.ci_low, m.ci_high),
                ]
                for m in data.metrics
            ),
        )
    )


def _home_provider(data: ReportData) -> str:
    """Per spec and judge: the mean leniency on its own provider's candidates against the others' (descriptive; each
    cell's own interval is in the table above)."""
    rows = []
    for spec, judge in sorted({(r.spec, r.judge) for r in data.leniency}):
        mine = [r for r in data.leniency if r.spec == spec and r.judge == judge]
        home = [r.delta for r in mine if r.same_provider]
        away = [r.delta for r in mine if r.same_provider is False]
        if home and away:
            rows.append(
                [
                    spec,
                    judge,
                    len(home),
                    sum(home) / len(home),
                    len(away),
                    sum(away) / len(away),
                    sum(home) / len(home) - sum(away) / len(away),
                ]
            )
    if not rows:
        return ""
    return (
        '<h3>Home-provider leniency</h3><p class="note">Mean delta on candidates from the judge\'s own provider '
        "against the others' (descriptive: a mean of the cells above, each with its own interval).</p>"
        + _table(
            ["spec", "judge", "own-provider cells", "mean delta", "other cells", "mean delta", "own − other"], rows
        )
    )


def _inputs(data: ReportData) -> str:
    if not data.inputs:
        return ""
    parts = [
        '<h2 id="inputs">Inputs</h2><p class="note">Test inputs generated from the spec: per statement, what '
        "the generator proposed, what was dropped before rating (duplicates, copies of the spec's examples), "
        "what the rater scored below the threshold, and what was kept. Ratings: rating × proposals.</p>"
    ]
    parts.append(
        _table(
            [
                "spec",
                "statement",
                "generator",
                "rater",
                "proposed",
                "duplicates",
                "below threshold",
                "unparsed / failed",
                "over target",
                "kept",
                "target",
                "ratings",
            ],
            (
                [
                    r.spec,
                    r.statement_id,
                    r.generator,
                    r.rater,
                    r.proposed,
                    r.duplicates,
                    r.below_threshold,
                    r.unparsed,
                    r.over_target,
                    r.kept,
                    r.target,
                    ", ".join(f"{k}×{n}" for k, n in r.ratings.items()),
                ]
                for r in data.inputs
            ),
        )
    )
    if data.kept_inputs:
        parts.append("<details><summary>Kept inputs with their ratings and the rater's reasons</summary>")
        parts.append(
            _table(
                ["spec", "statement", "rating", "input", "reason"],
                (
                    [k.spec, k.statement_id, k.rating, shown_text(k.text), shown_text(k.reason or "")]
                    for k in data.kept_inputs
                ),
            )
        )
        parts.append("</details>")
    return "".join(parts)


def _sent(data: ReportData) -> str:
    if not data.sent:
        return ""
    return (
        '<h2 id="settings-as-sent">Settings as sent</h2><p class="note">What each stage\'s requests carried; a '
        "setting asked for but not sent (e.g. a temperature Anthropic's API refuses) says so and why.</p>"
        + _table(
            ["stage", "role", "model", "variation", "settings as sent"],
            ([s.stage, s.role, s.model, s.variation, s.sent] for s in data.sent),
        )
    )


def _costs(data: ReportData) -> str:
    if not data.costs:
        return ""
    total = None if any(c.cost_usd is None for c in data.costs) else sum(c.cost_usd or 0.0 for c in data.costs)
    rows: list[list[object]] = [
        [c.run_dir, c.kind, c.model, c.requests, c.input_tokens, c.output_tokens, c.cost_usd] for c in data.costs
    ]
    rows += [[f"subtotal {s.stage}", s.stage, "", s.requests, "", "", s.cost_usd] for s in data.stages]
    rows.append(
        [
            "total",
            "",
            "",
            sum(c.requests for c in data.costs),
            sum(c.input_tokens for c in data.costs),
            sum(c.output_tokens for c in data.costs),
            total,
        ]
    )
    return (
        "<h2>Cost</h2><p class='note'>run folders relative to the report's input folder; a price that is not "
        "known leaves the cost empty (never 0).</p>"
        + _table(["run", "stage", "model", "requests", "input tokens", "output tokens", "cost USD"], rows)
    )


def _ranking_link(text: str, judge: str, pair: str, variation: str) -> str:
    """A link to the ranking samples of one judge, pair and variation."""
    query = urlencode({k: v for k, v in {"judge": judge, "pair": pair, "variation": variation}.items() if v})
    return f'<a class="samples" href="#ranking-samples?{html.escape(query, quote=True)}">{html.escape(text)}</a>'


def _rate_link(rate: float | None, judge: str, candidate: str, variation: str) -> str:
    return sample_link(_fmt(rate), judge=judge, candidate=candidate, variation=variation)


def _settings(settings: dict[str, object]) -> str:
    return "; ".join(f"{k} = {v!r}" for k, v in settings.items()) or "(none varied)"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "0"

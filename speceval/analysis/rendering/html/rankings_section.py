"""The page's ranking section, split from `speceval.analysis.rendering.html.page` (which lays it out): pairwise win
rates with their matrices, Bradley–Terry strengths and position consistency; rates link to the ranking
samples."""

from __future__ import annotations

import html
from urllib.parse import urlencode

from speceval.analysis.rendering.card_section import judge_cell
from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import heatmap, win_matrix
from speceval.analysis.rendering.html.html_parts import ci as _ci
from speceval.analysis.rendering.html.html_parts import fmt as _fmt
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.rendering.samples.samples import pair_label


def rankings_section(data: ReportData) -> str:
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
                        judge_cell(data, w.spec, w.judge),
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
        drawn = {(w.spec, w.judge, w.variation) for w in data.win_rates} if data.figures else set()
        for spec, judge, variation in sorted(drawn):
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
        parts.append(
            "<h2>Position consistency (same winner in both orders; per run, and every run pooled, clustered by "
            "input)</h2>"
        )
        parts.append(
            _table(
                ["spec", "judge", "variation", "run", "inputs", "consistent", "compared", "rate", "95% CI"],
                (
                    [
                        c.spec,
                        judge_cell(data, c.spec, c.judge),
                        c.variation,
                        c.run if c.run is not None else f"all {c.runs} runs",
                        c.inputs,
                        c.consistent,
                        c.compared,
                        _fmt(c.rate),
                        _ci(c.ci_low, c.ci_high),
                    ]
                    for c in data.position_consistency
                ),
            )
        )
    return "".join(parts)


def _ranking_link(text: str, judge: str, pair: str, variation: str) -> str:
    """A link to the ranking samples of one judge, pair and variation."""
    query = urlencode({k: v for k, v in {"judge": judge, "pair": pair, "variation": variation}.items() if v})
    return f'<a class="samples" href="#ranking-samples?{html.escape(query, quote=True)}">{html.escape(text)}</a>'

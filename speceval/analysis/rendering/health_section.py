"""The report's "Spec health" section (issue 38): `statement_health.csv`'s rows, the page's section with its ranked
table and figure (`health_html`, laid out by `speceval.analysis.rendering.html.page`), and summary.md's lines.

Every number shown carries its interval and names its method; each statement's numbers link to the sample view
filtered to that statement (and candidate), so the answers behind a flag are one click away.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from speceval.analysis.reading.rows import DEFAULT_VARIATION
from speceval.analysis.rendering.figures.health_plot import health_scatter
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.rendering.samples.samples import sample_link
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.tables.health_records import FLAGS, RULES, Health, HealthThresholds, StatementHealth
from speceval.inputgen.pairs import PAIR_JOIN

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData
    from speceval.analysis.tables.tension import PairCompliance

HEALTH_HEADERS = [
    "spec",
    "statement",
    "flags",
    "judges' disagreement [95% CI]",
    "answers ≥ 2 judges",
    "kappa [95% CI]",
    "lowest candidate [95% CI]",
    "highest candidate [95% CI]",
    "spread high − low [95% CI]",
    "inputs splitting candidates [95% CI]",
    "inputs all candidates fail [95% CI]",
    "lowest canary accuracy",
    "largest |leniency|",
]
HEALTH_RAW = frozenset({1, 3, 6, 7})
"""Columns of `health_table_rows` holding HTML built here (sample links)."""


def health_csv_rows(health: Health) -> list[dict[str, object]]:
    """`statement_health.csv`: one row per spec and statement (`kind` statement), ranked; flags as one `;`-joined
    column and one boolean column each (to filter on in a spreadsheet); then one row per pair of statements in
    tension (`kind` pair: shares of answers compliant with both, one, neither)."""
    rows: list[dict[str, object]] = []
    for s in health.statements:
        row: dict[str, object] = {
            "kind": "statement",
            "rank": len(rows) + 1,
            "spec": s.spec,
            "statement_id": s.statement_id,
            "flags": "; ".join(s.flags),
        }
        row.update(s.model_dump(exclude={"spec", "statement_id", "flags", "unreliable_judges"}))
        row["unreliable_judges"] = "; ".join(s.unreliable_judges)
        row.update({f"flag_{name}": name in s.flags for name in FLAGS})
        rows.append(row)
    # Pairs of statements in tension: one row each, after the statements (`kind` pair; their own columns).
    rows += [
        {"kind": "pair", "spec": p.spec, "statement_id": f"{p.a}{PAIR_JOIN}{p.b}", **p.model_dump(exclude={"spec"})}
        for p in health.pairs
    ]
    return rows


def thresholds_sentence(thresholds: HealthThresholds, min_canary_accuracy: float | None) -> str:
    return (
        f"Thresholds: disagreement {thresholds.disagreement:g}, fail below {thresholds.fail_below:g}, pass above "
        f"{thresholds.pass_above:g}, spread {thresholds.spread:g}, split SD {thresholds.split:g}, minimum canary "
        "accuracy " + (f"{min_canary_accuracy:g}" if min_canary_accuracy is not None else "not set") + "."
    )


def rules_sentence() -> str:
    return " ".join(f"{name}: {RULES[name]}." for name in FLAGS)


METHODS = (
    "Disagreement: share of answers judged by two or more judges on which their verdicts differ, clustered "
    "Wilson interval over inputs. Candidate rates: every judge's verdicts pooled, clustered by input. Spread: "
    "the highest minus the lowest candidate on their shared inputs (paired, clustered by input; picking the "
    "extremes makes it larger than a planned comparison would be). Kappa: Cohen's (two judges) or Fleiss' "
    "(more), cluster bootstrap over inputs. Canary accuracy: Wilson. Cross-candidate splits (arXiv "
    "2510.07686): per input answered by three or more candidates, the SD of their compliance; Wilson "
    "intervals over inputs."
)


def health_table_rows(data: ReportData) -> list[list[object]]:
    """The page's ranked table (columns `HEALTH_HEADERS`; cells in `HEALTH_RAW` are HTML)."""
    return [
        [
            s.spec,
            sample_link(s.statement_id, statement=s.statement_id),
            ", ".join(s.flags) or "–",
            sample_link(
                _rated(s.disagreement, s.disagreement_ci_low, s.disagreement_ci_high),
                statement=s.statement_id,
            ),
            s.answers_multi_judged,
            _rated(s.kappa, s.kappa_ci_low, s.kappa_ci_high),
            _candidate_link(s, "lowest"),
            _candidate_link(s, "highest"),
            _rated(s.spread, s.spread_ci_low, s.spread_ci_high),
            f"{_fmt(s.split_share)} {_bracket(s.split_ci_low, s.split_ci_high)} of {s.split_inputs}",
            _rated(s.all_fail_share, s.all_fail_ci_low, s.all_fail_ci_high),
            _fmt(s.min_canary_accuracy),
            _fmt(s.max_abs_leniency),
        ]
        for s in data.health.statements
    ]


def judge_table_rows(data: ReportData) -> tuple[list[str], list[list[object]]]:
    headers = [
        "spec",
        "statement",
        "judge",
        "canary correct / judged",
        "canary accuracy [95% CI, Wilson]",
        "below minimum",
        "answers all judges judged",
        "leniency [95% CI]",
        "human labels: agree / labelled",
        "agreement with people [95% CI, Wilson]",
        "kappa with people [95% CI]",
    ]
    return headers, [
        [
            j.spec,
            j.statement_id,
            j.judge,
            f"{j.canary_correct} / {j.canary_judged}",
            _estimated(j.canary),
            j.below_minimum,
            j.leniency_items,
            f"{_signed(j.leniency.value)} {_bracket(j.leniency.ci_low, j.leniency.ci_high)}",
            f"{j.human_agree} / {j.human_labelled}" if j.human_labelled else "–",
            _estimated(j.human_accuracy) if j.human_labelled else "–",
            _estimated(j.human_kappa) if j.human_labelled else "–",
        ]
        for j in data.health.judges
    ]


PAIR_HEADERS = [
    "spec",
    "statement A",
    "statement B",
    "pair inputs",
    "units",
    "inputs",
    "rate under A",
    "rate under B",
    "both [95% CI]",
    "one [95% CI]",
    "neither [95% CI]",
]
PAIR_NOTE = (
    "Statements in tension: inputs written so that following A pulls against B (speceval inputs --pair), "
    "answered and judged under each statement. A unit is one judge's verdicts on one candidate's answers to "
    "one such input under A and under B; judges and candidates pooled; intervals clustered by input."
)


def pair_table_rows(data: ReportData) -> list[list[object]]:
    return [
        [
            p.spec,
            sample_link(p.a, statement=p.a),
            sample_link(p.b, statement=p.b),
            p.pair_inputs,
            p.units,
            p.inputs,
        ]
        + [_rated(*shown) for shown in _pair_rates(p)]
        for p in data.health.pairs
    ]


def _pair_rates(p: PairCompliance) -> list[tuple[float | None, float | None, float | None]]:
    """A pair's five shares, each with its interval (A's, B's, both, one, neither)."""
    return [(s.value, s.ci_low, s.ci_high) for s in (p.rate_a, p.rate_b, p.both, p.one, p.neither)]


def association_sentences(data: ReportData) -> list[str]:
    return [
        f"Spec {a.spec}: across {a.statements} statements, Spearman's rho between the share of inputs that split "
        f"the candidates and the share every candidate fails is {_fmt(a.spearman)} {_bracket(a.ci_low, a.ci_high)}"
        f" ({a.ci_method})."
        for a in data.health.association
    ]


def health_html(data: ReportData) -> str:
    """The page's "Spec health" section: which statements need work."""
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
    if data.figures:
        for spec in sorted({s.spec for s in health.statements}):
            if any(s.spec == spec and s.disagreement is not None and s.spread is not None for s in health.statements):
                parts.append(_img(health_scatter(health.statements, spec), f"spec health, spec {spec}"))
            else:  # an empty frame read as a figure of nothing wrong
                parts.append(
                    f'<p class="note">No figure for spec {html.escape(spec)}: no statement has both a judges\' '
                    "disagreement (two or more judges of one scope and scale on the same answers) and a candidate "
                    "spread (two or more candidates).</p>"
                )
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


def health_markdown(data: ReportData) -> list[str]:
    """summary.md's "Spec health" section: the flagged statements first (all of them when none is flagged, up to
    `SUMMARY_ROWS`), with the rules and methods."""
    statements = data.health.statements
    if not statements:
        return []
    flagged = [s for s in statements if s.flags]
    shown = (flagged or statements)[:SUMMARY_ROWS]
    lines = [
        "## Spec health (which statements need work; `report/statement_health.csv`)",
        "",
        f"{len(flagged)} of {len(statements)} statement(s) flagged. "
        + thresholds_sentence(data.health.thresholds, data.health.min_canary_accuracy),
        "",
        "| spec | statement | flags | judges' disagreement [95% CI] | kappa [95% CI] | lowest candidate [95% CI] | "
        "highest candidate [95% CI] | spread [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.spec} | {s.statement_id} | {', '.join(s.flags) or '–'} | {_fmt(s.disagreement)} "
        f"{_bracket(s.disagreement_ci_low, s.disagreement_ci_high)} | "
        f"{_rated(s.kappa, s.kappa_ci_low, s.kappa_ci_high)} | "
        f"{_candidate_text(s, 'lowest')} | {_candidate_text(s, 'highest')} | {_fmt(s.spread)} "
        f"{_bracket(s.spread_ci_low, s.spread_ci_high)} |"
        for s in shown
    ]
    if len(flagged or statements) > len(shown):
        lines.append(f"\n({len(flagged or statements) - len(shown)} more in the CSV.)")
    if data.health.pairs:
        lines += ["", PAIR_NOTE, "", "| " + " | ".join(PAIR_HEADERS) + " |", "|" + "---|" * len(PAIR_HEADERS)]
        lines += [
            "| "
            + " | ".join(
                [p.spec, p.a, p.b, str(p.pair_inputs), str(p.units), str(p.inputs)]
                + [_rated(*shown) for shown in _pair_rates(p)]
            )
            + " |"
            for p in data.health.pairs
        ]
    lines += ["", "Rules: " + rules_sentence(), "", "Methods: " + METHODS, *association_sentences(data), ""]
    return lines


SUMMARY_ROWS = 25
"""Statements summary.md lists at most (the CSV and the page hold every one)."""


def _candidate_text(s: StatementHealth, side: str) -> str:
    name, variation = getattr(s, f"{side}_candidate"), getattr(s, f"{side}_variation")
    if name is None:
        return "–"
    shown = name if variation == DEFAULT_VARIATION else f"{name} ({variation})"
    return (
        f"{shown} {_fmt(getattr(s, f'{side}_rate'))} "
        f"{_bracket(getattr(s, f'{side}_ci_low'), getattr(s, f'{side}_ci_high'))}"
    )


def _candidate_link(s: StatementHealth, side: str) -> str:
    name = getattr(s, f"{side}_candidate")
    if name is None:
        return "–"
    return sample_link(
        _candidate_text(s, side), candidate=name, variation=getattr(s, f"{side}_variation"), statement=s.statement_id
    )


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _bracket(low: float | None, high: float | None) -> str:
    return "[no interval]" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _rated(value: float | None, low: float | None, high: float | None) -> str:
    """A share and its interval in one cell."""
    return f"{_fmt(value)} {_bracket(low, high)}"


def _estimated(estimate: Estimate) -> str:
    return _rated(estimate.value, estimate.ci_low, estimate.ci_high)

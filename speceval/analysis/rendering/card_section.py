"""The judge card as a report section (summary.md and the page), and the headline's gate: a judge entry that fails its
card is kept out of the headline tables and listed below them with the checks it failed (issue 44).

One section model for both formats: `card_rows` gives the cells once, `card_markdown` and `card_html` only lay them
out; the headline renderers ask `headline_passes` which rows they may show and `kept_out_*` for the lines below."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from speceval.analysis.rendering.html.html_parts import table as html_table
from speceval.analysis.rendering.markdown.markdown_parts import bracket, fmt, signed
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.tables.card_records import JudgeCardRow

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData

HEADERS = [
    "spec",
    "judge",
    "canary accuracy [95% CI]",
    "human accuracy [95% CI]",
    "human κ [95% CI]",
    "retest agreement [95% CI]",
    "wording flip rate [95% CI]",
    "wording flip excess over retest [95% CI]",
    "self-preference [95% CI]",
    "position consistency [95% CI]",
    "passes",
    "failed checks",
]


LIKERT_CELL = "; Likert: 4-5 agrees with yes, 1-2 with no, 3 with neither"
LIKERT_KAPPA_CELL = "none for a Likert judge (a 3 is no label's answer: judge_card.csv human_kappa_note)"


def headline_passes(data: ReportData, spec: str, judge: str) -> bool:
    """Whether a rate of this judge entry may head the report: every entry does, unless its card failed."""
    return data.judge_passes(spec, judge) is not False


FAILED_CARD = "(failed its card)"


def judge_cell(data: ReportData, spec: str, judge: str) -> str:
    """A judge's name in a table below the headline, which still shows every judge's rates (for diagnosis): marked
    where its card failed, so a rate quoted from there says its judge was kept out of the headline."""
    return f"{judge} {FAILED_CARD}" if data.judge_passes(spec, judge) is False else judge


def kept_out(data: ReportData) -> list[JudgeCardRow]:
    """The judge entries whose card failed (kept out of every headline table)."""
    return [row for row in data.judge_card if row.passes is False]


def _cell(estimate: Estimate, count: int | None = None) -> str:
    value = estimate.value
    if value is None:
        return "not measured"
    return f"{signed(value) if value < 0 else fmt(value)} {bracket(estimate.ci_low, estimate.ci_high)}" + (
        f" (n={count})" if count is not None else ""
    )


def _human_cell(r: JudgeCardRow) -> str:
    """The card's human accuracy, and beside it the labelled sample's own k of n (nothing the weighing hides)."""
    if r.human_accuracy.value is None:
        return _cell(r.human_accuracy)
    basis = "design-weighted" if r.human_accuracy_weighted else "unweighted: no sheet design"
    cell = f"{_cell(r.human_accuracy)}, {basis}; sample {r.human_agree}/{r.human_labelled} agree"
    return cell + (f" ({r.human_accuracy_note})" if r.human_accuracy_weighted and r.human_accuracy_note else "")


def card_rows(data: ReportData) -> list[list[str]]:
    """The section's cells, once for both formats."""
    rows = []
    for r in data.judge_card:
        canary = _cell(r.canary, r.canary_judged or None)
        if r.canary_shared_from:
            canary += f", shared with {r.canary_shared_from} (same model and mode)"
        retest = _cell(r.retest, r.retest_items or None)
        rows.append(
            [
                r.spec,
                r.judge,
                canary,
                _human_cell(r) + (LIKERT_CELL if r.human_kappa_note else ""),
                _cell(r.human_kappa) if r.human_kappa_note is None else LIKERT_KAPPA_CELL,
                retest + (f"; {r.retest_note}" if r.retest_note and r.retest.value is not None else ""),
                _cell(r.wording_flip) + (f" over {r.wordings} wordings" if r.wording_flip.value is not None else ""),
                _cell(r.wording_excess),
                _cell(r.self_preference),
                _cell(r.position, r.position_compared or None),
                _passes_cell(r.passes, len(r.unmeasured) == len(data.card_lines)),
                "; ".join(r.failed_checks) or "–",
            ]
        )
    return rows


def _passes_cell(passes: bool | None, nothing_measured: bool) -> str:
    """An entry none of whose lines had data passes (nothing failed), but says so: a ranking judge, which no line
    measures, read a bare "yes" beside a row of "not measured", as if it had been checked."""
    if passes and nothing_measured:
        return "yes (no line measured)"
    return {True: "yes", False: "**no**", None: "not checked"}[passes]


def _lines_sentence(data: ReportData) -> str:
    human = SHEET_NOTE if any(r.human_labelled for r in data.judge_card) else ""
    if not data.card_lines:
        return (
            "No line was set (no `judge_card:` block and no `min_canary_accuracy`): the card is shown, nothing is "
            "kept out of the headline." + human
        )
    lines = ", ".join(f"{name} {value:g}" for name, value in sorted(data.card_lines.items()))
    return (
        f"Lines: {lines}. A check whose measure has no data here is listed as not measured and neither passes nor "
        "fails the entry. Intervals: each cell's method is in judge_card.csv (`*_ci_method`, from the registry)."
        + human
    )


SHEET_NOTE = (
    " Human accuracy, where the label sheet's design is beside the labels, weighs each statement's share of agreement "
    "by the judge's verdicts there (N_h/N): the judge's accuracy over the answers it judged, not over the sample the "
    "sheet drew statement by statement, and `min_human_accuracy` is held to it; the sample's own k of n is beside it. "
    "Without a design (an older sheet, or labels not from one) it is the sample's unweighted share, and says so."
)
"""Said where a card shows human accuracy: what it is weighed by, and which one the gate reads."""


def card_markdown(data: ReportData) -> list[str]:
    """`## Judge card` for summary.md (nothing without judge entries)."""
    if not data.judge_card:
        return []
    lines = ["## Judge card", "", _lines_sentence(data), "", "| " + " | ".join(HEADERS) + " |"]
    lines.append("|" + "---|" * len(HEADERS))
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in card_rows(data)]
    lines += ["", *_paraphrases_markdown(data)]
    return lines


def kept_out_markdown(data: ReportData) -> list[str]:
    """Below the headline: every judge entry kept out of it, and why."""
    failing = kept_out(data)
    if not failing:
        return []
    lines = ["**Kept out of the headline** (the judge failed its card; see the Judge card section):", ""]
    lines += [f"- {r.judge} on spec {r.spec}: failed {'; '.join(r.failed_checks)}" for r in failing]
    return [*lines, ""]


def kept_out_html(data: ReportData) -> str:
    """The same list on the page, below its headline table."""
    failing = kept_out(data)
    if not failing:
        return ""
    items = "".join(
        f"<li>{html.escape(r.judge)} on spec {html.escape(r.spec)}: failed {html.escape('; '.join(r.failed_checks))}"
        "</li>"
        for r in failing
    )
    return f'<p class="warning">Kept out of the headline (the judge failed its card):</p><ul>{items}</ul>'


def card_html(data: ReportData) -> str:
    """The page's Judge card section."""
    if not data.judge_card:
        return ""
    rows = [[cell.replace("**", "") for cell in row] for row in card_rows(data)]
    parts = [
        '<h2 id="judge-card">Judge card</h2>',
        f'<p class="note">{html.escape(_lines_sentence(data))}</p>',
        html_table(HEADERS, rows),
    ]
    for found in data.paraphrases:
        parts.append(f"<h3>Rewordings of spec {html.escape(found.spec)} ({html.escape(found.source)})</h3>")
        parts.append(
            html_table(
                ["statement", "wording", "text"],
                ([sid, k, text] for sid, texts in sorted(found.wordings.items()) for k, text in enumerate(texts, 1)),
            )
        )
    return "".join(parts)


def _paraphrases_markdown(data: ReportData) -> list[str]:
    lines = []
    for found in data.paraphrases:
        lines += [f"Rewordings of spec {found.spec} ({found.source}):", ""]
        for statement_id, texts in sorted(found.wordings.items()):
            for k, text in enumerate(texts, 1):
                lines.append(f"- {statement_id}, wording {k}: {' '.join(text.split())}")
        lines.append("")
    return lines

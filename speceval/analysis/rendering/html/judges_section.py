"""The page's sections on the judges, split from `speceval.analysis.rendering.html.page` (which lays them out):
agreement between judges, bias and panel verdicts; each judge on the spec's own examples, leniency (with home-provider
leniency), agreement with human labels and prediction-powered rates."""

from __future__ import annotations

import html

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.figures.plots import leniency_heatmap
from speceval.analysis.rendering.html.html_parts import Column, ci_of
from speceval.analysis.rendering.html.html_parts import ci as _ci
from speceval.analysis.rendering.html.html_parts import fmt as _fmt
from speceval.analysis.rendering.html.html_parts import img as _img
from speceval.analysis.rendering.html.html_parts import record_table as _record_table
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.tables.judge_checks import UPPER_BOUND_NOTE
from speceval.analysis.tables.panel import TIES_RULE
from speceval.judging.canaries import LIKERT_RULE


def judges_section(data: ReportData) -> str:
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
    # (A bare 'judge bias' table was here: each judge's rate minus the judges' mean, without an interval and on
    # different answers per judge. Judge leniency below measures it on shared answers, with its interval.)
    if data.panel:
        parts.append(
            f"<h2>Panel verdicts</h2><p class='note'>{html.escape(TIES_RULE)} (mean of Likert ratings); "
            "the panel's rates are the rows of judge <b>panel</b> above. Beside it, each judge's rate on "
            "the same answers: the panel's rate lies between them. 95% intervals: "
            + html.escape(next((p.ci_method for p in data.panel if p.ci_method), "none"))
            + "</p>"
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
                        _rate_ci(p.panel_rate, p.panel_ci_low, p.panel_ci_high),
                        ", ".join(
                            f"{j} {_rate_ci(r, *p.judge_intervals.get(j, (None, None)))}"
                            for j, r in sorted(p.judge_rates.items())
                        ),
                    ]
                    for p in data.panel
                ),
            )
        )
    return "".join(parts)


def judge_checks_section(data: ReportData) -> str:
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
        columns: list[Column] = [
            *["spec", "judge", "kind", "items", "judged", "correct", "rate"],
            ("95% CI (Wilson)", ci_of),
        ]
        columns.append("not_judged")
        parts.append(_record_table(data.judge_checks, [*columns, *(["mean_rating"] if likert else [])]))
    if data.leniency:
        parts.append(
            '<h2 id="judge-leniency">Judge leniency</h2><p class="note">On the answers every judge judged: '
            "a judge's rate minus the judges' mean rate, with a paired 95% interval clustered by input; "
            "same provider = judge and candidate from one provider (self-preference).</p>"
        )
        columns = [
            *["spec", "judge", "candidate", "variation", "items", "rate", "mean_rate", "delta"],
            ("95% CI", ci_of),
        ]
        parts.append(_record_table(data.leniency, [*columns, "same_provider"]))
        for spec, variation in sorted({(r.spec, r.variation) for r in data.leniency} if data.figures else ()):
            parts.append(
                _img(leniency_heatmap(data.leniency, spec, variation), f"judge leniency, spec {spec}, {variation}")
            )
        parts.append(_home_provider(data))
    if data.human_agreement:
        rules = sorted({a.rule for a in data.human_agreement})
        parts.append(
            '<h2 id="human-labels">Judges against human labels</h2><p class="note">Accuracy: the share of labelled '
            "answers whose verdict agrees with the label (95%: Wilson where each input has one labelled answer, else "
            "clustered by input, since an input's candidates and runs are not independent); kappa's: a cluster "
            "bootstrap over inputs, as the judge card's. "
            + html.escape("; ".join(f"{'Likert' if r == LIKERT_RULE else 'yes/no'} judges: {r}" for r in rules))
            + (
                ". A Likert judge has no prediction-powered rate: it reports a mean rating, no rate the labels correct"
                if LIKERT_RULE in rules
                else ""
            )
            + ".</p>"
        )
        parts.append(
            _table(
                ["spec", "judge", "candidate", "labelled", "agree", "accuracy", "95% CI", "kappa", "95% CI", "note"],
                (
                    [
                        *[a.spec, a.judge, a.candidate, a.labelled, a.agree, a.accuracy],
                        *[_ci(a.accuracy_ci_low, a.accuracy_ci_high), a.kappa, _ci(a.kappa_ci_low, a.kappa_ci_high)],
                        a.kappa_note or "",
                    ]
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


def _rate_ci(rate: float | None, low: float | None, high: float | None) -> str:
    """A rate with its interval (or said to have none)."""
    if rate is None:
        return "n/a"
    return (
        f"{rate:.3f} [{low:.3f}, {high:.3f}]" if low is not None and high is not None else f"{rate:.3f} (no interval)"
    )

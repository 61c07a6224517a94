"""The page's sections on what went in and what it cost, split from `speceval.analysis.rendering.html.page` (which lays
them out): the inputs generated from the spec, the settings each stage's requests carried, and the cost."""

from __future__ import annotations

from operator import attrgetter

from speceval.analysis.rendering.data import ReportData
from speceval.analysis.rendering.html.html_parts import Column, record_table
from speceval.analysis.rendering.html.html_parts import table as _table
from speceval.analysis.rendering.samples.samples import shown_text

_INPUT_COLUMNS: list[Column] = ["spec", ("statement", attrgetter("statement_id")), "generator", "rater", "proposed"]
_INPUT_COLUMNS += ["duplicates", "below_threshold", ("unparsed / failed", attrgetter("unparsed")), "over_target"]
_INPUT_COLUMNS += ["kept", "target", ("ratings", lambda r: ", ".join(f"{k}×{n}" for k, n in r.ratings.items()))]
_KEPT_COLUMNS: list[Column] = ["spec", ("statement", attrgetter("statement_id")), "rating"]
_KEPT_COLUMNS += [("input", lambda k: shown_text(k.text)), ("reason", lambda k: shown_text(k.reason or ""))]


def inputs_section(data: ReportData) -> str:
    if not data.inputs:
        return ""
    kept = (
        "<details><summary>Kept inputs with their ratings and the rater's reasons</summary>"
        + record_table(data.kept_inputs, _KEPT_COLUMNS)
        + "</details>"
        if data.kept_inputs
        else ""
    )
    return (
        '<h2 id="inputs">Inputs</h2><p class="note">Test inputs generated from the spec: per statement, what '
        "the generator proposed, what was dropped before rating (duplicates, copies of the spec's examples), "
        "what the rater scored below the threshold, and what was kept. Ratings: rating × proposals.</p>"
        + record_table(data.inputs, _INPUT_COLUMNS)
        + kept
    )


def sent_section(data: ReportData) -> str:
    if not data.sent:
        return ""
    return (
        '<h2 id="settings-as-sent">Settings as sent</h2><p class="note">What each stage\'s requests carried; a '
        "setting asked for but not sent (e.g. a temperature Anthropic's API refuses) says so and why.</p>"
        + record_table(data.sent, ["stage", "role", "model", "variation", ("settings as sent", attrgetter("sent"))])
    )


def costs_section(data: ReportData) -> str:
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
        + _tiers_table(data)
    )


def _tiers_table(data: ReportData) -> str:
    """Answered requests and cost per service tier, when any run was served at another tier than batch
    (docs/service-tiers.md: flex is priced at batch rates, standard at full price)."""
    tiers: dict[str, list[float | None | int]] = {}
    for cost in data.costs:
        for tier, row in cost.tiers.items():
            total = tiers.setdefault(tier, [0, 0.0])
            total[0] = int(total[0] or 0) + row.requests
            total[1] = None if total[1] is None or row.cost_usd is None else float(total[1]) + row.cost_usd
    if set(tiers) <= {"batch"}:
        return ""
    return "<h3>Per service tier</h3><p class='note'>answers counted at the tier each response says served it; " + (
        "flex at batch rates.</p>"
        + _table(["tier", "answered", "cost USD"], ([t, n, c] for t, (n, c) in sorted(tiers.items())))
    )

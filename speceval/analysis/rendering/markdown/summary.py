"""`report/summary.md`: a methods-ready summary (models, settings, counts, rates with intervals, the interval method,
judge prompt versions), rendered from the same data as the HTML page.

This module orders the sections and writes most of them; those on scope-turn judges are in
`speceval.analysis.rendering.markdown.summary_turns`, the spec-health lines in
`speceval.analysis.rendering.health_section`, and the markdown pieces they share in
`speceval.analysis.rendering.markdown.markdown_parts`."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from speceval.analysis.rendering.card_section import card_markdown, headline_passes, judge_cell, kept_out_markdown
from speceval.analysis.rendering.health_section import health_markdown
from speceval.analysis.rendering.markdown.markdown_parts import bracket as _bracket
from speceval.analysis.rendering.markdown.markdown_parts import ci as _ci
from speceval.analysis.rendering.markdown.markdown_parts import fmt as _fmt
from speceval.analysis.rendering.markdown.markdown_parts import rated as _rated
from speceval.analysis.rendering.markdown.markdown_parts import section_table
from speceval.analysis.rendering.markdown.markdown_parts import signed as _signed
from speceval.analysis.rendering.markdown.summary_turns import elicitation_markdown, flips_markdown, turns_markdown
from speceval.analysis.statistics.clustered import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED
from speceval.analysis.statistics.registry import BRADLEY_TERRY, CLUSTERED, PAIRED, WILSON, method
from speceval.analysis.tables.judge_checks import UPPER_BOUND_NOTE, JudgeAccuracy
from speceval.analysis.tables.panel import TIES_RULE

if TYPE_CHECKING:
    from speceval.analysis.rendering.data import ReportData
    from speceval.analysis.tables.rankings import Strength
    from speceval.analysis.tables.variations import VariationStatistics


def interval_methods() -> str:
    """The interval methods, in words, as the report names them."""
    return (
        f"a single run's rate over independent inputs: {WILSON}; a rate pooled over runs: "
        f"{CLUSTERED.format(unit='input')}, stratified by statement (repeating identical runs adds no "
        "clusters, so it does not narrow the interval); beside it the same clustered by statement; paired "
        f"differences: {PAIRED}; win rates: the clustered Wilson interval on win scores (a tie counts 1/2), "
        "clusters = inputs; Bradley–Terry: "
        f"{BRADLEY_TERRY.format(draws=BOOTSTRAP_DRAWS, seed=BOOTSTRAP_SEED)}. Reference: E. Miller, Adding Error "
        "Bars to Evals, arXiv 2411.00640; R. G. Newcombe, Two-sided confidence intervals for the single "
        "proportion, Statistics in Medicine 1998 (method 4)."
    )


def render_summary(data: ReportData) -> str:
    """The markdown text, ordered as a paper's results section: the headline rates, the differences between them,
    how far the judges agree and how they did on the spec's own examples, then what was run and sent, the details,
    and the methods."""
    lines = [f"> **{data.data_banner}**", ""] if data.data_banner else []
    lines += ["# speceval results", ""]
    lines += (
        _headline(data)
        + flips_markdown(data)
        + elicitation_markdown(data)
        + _paired(data)
        + _win_rates(data)
        + _agreement(data)
    )
    lines += card_markdown(data) + _judge_checks(data) + health_markdown(data)
    lines += _setup(data) + _details(data)
    lines += [
        "",
        "## Methods",
        "",
        "Only judged answers enter rates; failed, unparsed and missing judgements are "
        "counted separately. Intervals are 95%: " + interval_methods(),
        "",
    ]
    return "\n".join(lines)


def _headline(data: ReportData) -> list[str]:
    """Per spec and judge, each candidate's compliance rate with its interval (method numbered below), n and the
    judge's accuracy on the spec's examples; a ranking-only report leads with the Bradley–Terry strengths, a
    categorical-only one with each candidate's share of each category."""
    if not data.variations:
        # A ranking-only or categorical-only report leads with its own first table, gated alike.
        if data.bradley_terry:
            return _strength_headline(data) + kept_out_markdown(data)
        if data.categories:
            return _categories(data, "Headline: categories by candidate", headline=True) + kept_out_markdown(data)
        return kept_out_markdown(data)  # turn verdicts only: flips lead, the per-turn detail follows
    varied = len({v.variation for v in data.variations}) > 1
    accuracy = {(a.spec, a.judge): a for a in data.judge_accuracy}
    methods: dict[str, int] = {}
    shown = [v for v in data.variations if headline_passes(data, v.spec, v.judge)]
    rated = any(_likert(v) for v in shown)  # a Likert judge's row is its mean rating (it has no compliant share)
    lines = [
        "## Headline: compliance by candidate",
        "",
        "Share of judged answers the judge found compliant"
        + (" (a Likert judge: its mean rating, 1-5)" if rated else "")
        + ", with its 95% interval; the last column is the "
        "judge's accuracy on the spec's own example responses (heuristically, likely above its accuracy here: "
        "a rough upper bound, not a guaranteed one).",
        "",
        "| spec | judge | candidate | "
        + ("variation | " if varied else "")
        + ("compliance or mean rating" if rated else "compliance")
        + " [95% CI] | n | judge's accuracy on the spec's examples |",
        "|---|---|---|" + ("---|" if varied else "") + "---|---|---|",
    ]
    if data.variations and not shown:
        del lines[-3:]  # no row to head: the table's header alone would read as a blank table
    for v in sorted(shown, key=lambda v: (v.spec, v.judge == "panel", v.judge, v.candidate, v.variation)):
        likert = _likert(v)
        ci_method = method("mean_rating") if likert else v.ci_method
        number = f" ({methods.setdefault(ci_method, len(methods) + 1)})" if ci_method else ""
        runs = f", {len(v.runs)} runs" if len(v.runs) > 1 else ""
        if likert:
            value = f"{v.mean_rating:.3f} {_bracket(v.rating_ci_low, v.rating_ci_high)}"
            n = f"{v.rated} ratings on {v.rated_inputs} inputs{runs}"
        else:
            value = f"{_fmt(v.rate)} {_bracket(v.ci_low, v.ci_high)}"
            n = f"{v.judged} verdicts on {v.inputs} inputs{runs}"
        lines.append(
            f"| {v.spec} | {v.judge} | {v.candidate} | "
            + (f"{v.variation} | " if varied else "")
            + f"{value}{number} | {n} | "
            f"{_accuracy(data, accuracy.get((v.spec, v.judge)), v.judge)} |"
        )
    lines += [
        "",
        "Intervals: " + "; ".join(f"({number}) {method}" for method, number in methods.items())
        if methods
        else "No judge entry passed its judge card: no rate heads this report (see below)."
        if data.variations and not shown
        else "Intervals: none (no judged answers).",
        "",
    ]
    return lines + kept_out_markdown(data)


def _likert(v: VariationStatistics) -> bool:
    """A Likert judge's row: ratings, no binary verdict (a panel of binary judges has a share, not a rating)."""
    return v.judged == 0 and v.mean_rating is not None


def _accuracy(data: ReportData, found: JudgeAccuracy | None, judge: str) -> str:
    if judge == "panel":
        return f"a panel ({TIES_RULE})"
    if found is None or found.accuracy is None:
        return "not checked (no canary verdicts)"
    flag = f" **below the minimum {data.min_canary_accuracy:.2f}**" if found.below_minimum else ""
    return f"{found.accuracy:.3f} ({found.correct} of {found.judged}){flag}"


def _strength_headline(data: ReportData) -> list[str]:
    if not data.bradley_terry:
        return []
    return section_table(
        "Headline: Bradley–Terry strength by candidate",
        ["spec", "judge", "variation", "candidate", "strength [95% CI]"],
        (
            [s.spec, s.judge, s.variation, s.candidate, f"{_fmt(s.strength)} {_strength_interval(s)}"]
            for s in data.bradley_terry
            if headline_passes(data, s.spec, s.judge)
        ),
        [
            "Strengths of one spec, judge and variation sum to 1; 95% interval: "
            f"{BRADLEY_TERRY.format(draws=BOOTSTRAP_DRAWS, seed=BOOTSTRAP_SEED)}."
        ],
    )


def _strength_interval(s: Strength) -> str:
    return _bracket(s.ci_low, s.ci_high) if s.note is None else f"({s.note})"


def _paired(data: ReportData) -> list[str]:
    if not data.paired:
        return []
    headers = ["spec", "judge", "compare", "within", "a vs b", "compliance a vs b", "difference a − b [95% CI]"]
    return section_table(
        "Paired differences (same inputs)",
        [*headers, "inputs"],
        (
            [p.spec, judge_cell(data, p.spec, p.judge), p.kind, p.within, f"{p.a} vs {p.b}"]
            + [
                f"{_rated(p.rate_a, p.rate_a_ci_low, p.rate_a_ci_high)} vs "
                f"{_rated(p.rate_b, p.rate_b_ci_low, p.rate_b_ci_high)}"
            ]
            + [f"{_signed(p.difference)} {_bracket(p.ci_low, p.ci_high)}", p.inputs]
            for p in data.paired
        ),
        [
            f"95% interval of the difference: {PAIRED}. Each side's rate is on the inputs both were judged on, "
            "with the interval compliance.csv gives a rate (rate_ci_method in paired_comparisons.csv)."
        ],
    )


def _win_rates(data: ReportData) -> list[str]:
    if not data.win_rates:
        return []
    return section_table(
        "Win rates (both orders and runs; ties count ½; 95% CI clustered by input)",
        ["spec", "judge", "variation", "model", "opponent", "games", "win rate [95% CI]"],
        (
            [
                w.spec,
                judge_cell(data, w.spec, w.judge),
                w.variation,
                w.candidate,
                w.opponent,
                w.games,
                _rated(w.rate, w.ci_low, w.ci_high),
            ]
            for w in data.win_rates
        ),
    )


def _agreement(data: ReportData) -> list[str]:
    if not data.agreement:
        return []
    return section_table(
        "Agreement between judges (same answers)",
        ["spec", "judges", "kind", "items", "kappa / alpha [95% CI]", "interval method"],
        (
            [a.spec, a.judges, a.kind, a.items, _rated(a.kappa, a.ci_low, a.ci_high)]
            + [a.ci_method or "none computed for this statistic"]
            for a in data.agreement
        ),
    )


def _judge_checks(data: ReportData) -> list[str]:
    if not data.judge_checks:
        return []
    return section_table(
        "Judge checks (the spec's own example responses)",
        ["spec", "judge", "kind", "items", "judged", "correct", "rate [95% CI, Wilson]", "not judged"],
        (
            [c.spec, c.judge, c.kind, c.items, c.judged, c.correct, _rated(c.rate, c.ci_low, c.ci_high)]
            + [c.not_judged]
            for c in data.judge_checks
        ),
        [UPPER_BOUND_NOTE],
        (
            f"\n**Flagged:** judge {flagged.judge} on spec {flagged.spec} got "
            f"{_fmt(flagged.accuracy)} of the spec's examples right, below the minimum "
            f"{data.min_canary_accuracy:.2f}; its rates are suspect."
            for flagged in data.judge_accuracy
            if flagged.below_minimum
        ),
    )


def candidates_and_judges(data: ReportData) -> tuple[list[str], list[str]]:
    """Every candidate and judge the report has verdicts of: compliance, ranking or categorical (a report of one kind
    only must still name them)."""
    candidates = (
        {v.candidate for v in data.variations}
        | {w.candidate for w in data.win_rates}
        | {s.candidate for s in data.bradley_terry}
        | {c.candidate for c in data.categories}
        | {r.candidate for r in data.turn_rates}
    )
    judges = (
        {v.judge for v in data.variations}
        | {w.judge for w in data.win_rates}
        | {c.judge for c in data.categories}
        | {r.judge for r in data.turn_rates}
    ) - {"panel"}
    return sorted(candidates), sorted(judges)


def _setup(data: ReportData) -> list[str]:
    """What was run: models, prompt versions, variations as asked, requests and cost, settings as sent."""
    candidates, judges = candidates_and_judges(data)
    lines = [
        "## Setup",
        "",
        f"- Candidates: {', '.join(candidates) or '–'}",
        f"- Judges: {', '.join(judges) or '–'}" + (f" (plus a panel: {TIES_RULE})" if data.panel else ""),
        "- Judge prompt versions: "
        + ("; ".join(f"{j}: {', '.join(v)}" for j, v in data.prompt_versions.items()) or "–"),
    ]
    for name, settings in sorted(data.settings.items()):
        described = ", ".join(f"{k} = {v!r}" for k, v in settings.items()) or "nothing varied"
        lines.append(f"- Variation `{name}`: {described}")
    for stage in data.stages:
        outcomes = ", ".join(f"{n} {o}" for o, n in stage.outcomes.items()) or "none yet"
        cost = f"{stage.cost_usd:.4f}" if stage.cost_usd is not None else "unknown"
        lines.append(f"- {stage.stage}: {stage.runs} run(s), {stage.requests} request(s) ({outcomes}); cost USD {cost}")
    if data.stages:
        known = [s.cost_usd for s in data.stages]
        total = "unknown" if any(c is None for c in known) else f"{sum(c or 0.0 for c in known):.4f}"
        lines.append(f"- Total cost USD: {total}")
    if data.skipped:
        lines.append(
            f"- Skipped {len(data.skipped)} file(s) under results/ that hold no verdicts: " + "; ".join(data.skipped)
        )
    if data.sent:
        lines += [
            "",
            "### Settings as sent",
            "",
            "What the requests carried (a setting asked for but not sent says why; variation names above say "
            "what was asked).",
            "",
            "| stage | role | model | variation | settings as sent |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {s.stage} | {s.role} | {s.model} | {s.variation} | {s.sent} |" for s in data.sent]
    return [*lines, ""]


def _details(data: ReportData) -> list[str]:
    lines: list[str] = []
    if data.variations:
        # A Likert judge has ratings, not verdicts: its row read "judged 0" beside the answers it rated.
        ratings = any(_likert(v) for v in data.variations)
        lines += [
            "## Compliance by variation, run by run",
            "",
            "| spec | judge | candidate | variation | judged | compliant | rate | 95% CI | runs (rate each "
            "[95% CI]) | not judged |" + (" mean rating 1-5 [95% CI] (ratings) |" if ratings else ""),
            "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if ratings else ""),
        ]
        for v in data.variations:
            runs = ", ".join(f"run{r.run} {_rated(r.rate, r.ci_low, r.ci_high)}" for r in v.runs)
            missing = ", ".join(f"{n} {o}" for o, n in sorted(v.not_judged.items())) or "0"
            rating = (
                f" {v.mean_rating:.3f} {_bracket(v.rating_ci_low, v.rating_ci_high)} ({v.rated}) |"
                if ratings and v.mean_rating is not None
                else " – |"
                if ratings
                else ""
            )
            lines.append(
                f"| {v.spec} | {judge_cell(data, v.spec, v.judge)} | {v.candidate} | {v.variation} | {v.judged} | "
                f"{v.compliant:g} | {_fmt(v.rate)} | {_ci(v.ci_low, v.ci_high)} | {runs} | {missing} |{rating}"
            )
        lines += ["", f"Each run's rate alone: 95% {WILSON}."]
        if ratings:
            lines[-1] += f" A mean rating: 95% {method('mean_rating')}."
        if any(data.judge_passes(v.spec, v.judge) is False for v in data.variations):
            lines[-1] += " A judge marked (failed its card) is kept out of the headline; its rates are for diagnosis."
        lines += _unknown_classes(data)
    if data.inputs:
        proposed = sum(r.proposed for r in data.inputs)
        kept = sum(r.kept for r in data.inputs)
        reached = sum(r.kept >= r.target for r in data.inputs)
        lines += [
            "",
            "## Inputs (generated from the spec)",
            "",
            f"{proposed} proposals, {sum(r.duplicates for r in data.inputs)} dropped as duplicates before "
            f"rating, {sum(r.below_threshold for r in data.inputs)} rated below the threshold, {kept} kept; "
            f"{reached} of {len(data.inputs)} statement(s) reached their target (`report/inputs.csv`).",
        ]
    if data.categories and (data.variations or data.bradley_terry):  # otherwise they are the headline
        lines += ["", *_categories(data, "Categories")]
    if data.turn_rates:
        lines += ["", *turns_markdown(data, "Per turn")]
    return lines


def _categories(data: ReportData, title: str, headline: bool = False) -> list[str]:
    lines = [f"## {title} (share of judged answers; 95% CI clustered by input)", ""]
    shown = [s for s in data.categories if not headline or headline_passes(data, s.spec, s.judge)]
    for (spec, judge), group in itertools.groupby(
        sorted(shown, key=lambda s: (s.spec, s.judge)), key=lambda s: (s.spec, s.judge)
    ):
        shares = list(group)
        names = sorted({s.category for s in shares})
        lines += [
            f"Spec {spec}, judge {judge_cell(data, spec, judge)}:",
            "",
            "| candidate | variation | judged | " + " | ".join(names) + " |",
            "|---|---|---|" + "---|" * len(names),
        ]
        for (candidate, variation), cell in itertools.groupby(
            sorted(shares, key=lambda s: (s.candidate, s.variation)), key=lambda s: (s.candidate, s.variation)
        ):
            by_name = {s.category: s for s in cell}
            judged = next(iter(by_name.values())).judged
            lines.append(
                f"| {candidate} | {variation} | {judged} | "
                + " | ".join(
                    f"{by_name[n].count} ({_fmt(by_name[n].rate)} {_bracket(by_name[n].ci_low, by_name[n].ci_high)})"
                    if n in by_name
                    else "–"
                    for n in names
                )
                + " |"
            )
        lines.append("")
    return lines


def _unknown_classes(data: ReportData) -> list[str]:
    note = unknown_classes_note(data)
    return ["", note] if note else []


def unknown_classes_note(data: ReportData) -> str | None:
    """Why some statements' type and authority are `unknown`: the judge run folders with no run.json naming a spec
    (None when every statement was classified). Shown in summary.md and beside the page's breakdowns."""
    folders = data.unknown_statement_types
    if not folders:
        return None
    shown = ", ".join(f"`{f}`" for f in folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
    return (
        f"Statement types and authority levels are `unknown` for the answers of {len(folders)} judge run "
        f"folder(s) ({shown}): they have no readable run.json naming their spec (the original SpecEval's "
        "folders, or a copied results folder), or the spec it names cannot be read, so their statements cannot "
        "be classified. Their rates are complete; only the by-type and by-authority breakdowns lack them."
    )

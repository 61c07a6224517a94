"""`report/summary.md`: a methods-ready summary (models, settings, counts, rates with intervals, the interval method,
judge prompt versions), rendered from the same data as the HTML page."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from speceval.analysis.clustered import BOOTSTRAP, BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, CLUSTERED, PAIRED, WILSON
from speceval.analysis.judge_checks import UPPER_BOUND_NOTE
from speceval.analysis.panel import TIES_RULE

if TYPE_CHECKING:
    from speceval.analysis.data import ReportData


def interval_methods() -> str:
    """The interval methods, in words, as the report names them."""
    return (f"a single run's rate over independent inputs: {WILSON}; a rate pooled over runs: "
            f"{CLUSTERED.format(unit='input')}, stratified by statement (repeating identical runs adds no "
            "clusters, so it does not narrow the interval); beside it the same clustered by statement; paired "
            f"differences: {PAIRED}; win rates: the clustered Wilson interval on win scores (a tie counts 1/2), "
            "clusters = inputs; Bradley–Terry: "
            f"{BOOTSTRAP.format(draws=BOOTSTRAP_DRAWS, seed=BOOTSTRAP_SEED)}. Reference: E. Miller, Adding Error Bars "
            "to Evals, arXiv 2411.00640; R. G. Newcombe, Two-sided confidence intervals for the single proportion, "
            "Statistics in Medicine 1998 (method 4).")


def render_summary(data: ReportData) -> str:
    """The markdown text."""
    lines = [f"> **{data.data_banner}**", ""] if data.data_banner else []
    lines += ["# speceval results", ""]
    candidates = sorted({v.candidate for v in data.variations} | {w.model for w in data.win_rates})
    judges = sorted({v.judge for v in data.variations if v.judge != "panel"} | {w.judge for w in data.win_rates})
    lines += [f"- Candidates: {', '.join(candidates) or '–'}",
              f"- Judges: {', '.join(judges) or '–'}" + (f" (plus a panel: {TIES_RULE})" if data.panel else ""),
              "- Judge prompt versions: " + ("; ".join(f"{j}: {', '.join(v)}" for j, v in
                                                       data.prompt_versions.items()) or "–")]
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
    if data.sent:
        lines += ["", "## Settings as sent", "",
                  "What the requests carried (a setting asked for but not sent says why; variation names above say "
                  "what was asked).", "", "| stage | model | variation | settings as sent |", "|---|---|---|---|"]
        lines += [f"| {s.stage} | {s.model} | {s.variation} | {s.sent} |" for s in data.sent]
        lines.append("")
    if data.skipped:
        lines.append(f"- Skipped {len(data.skipped)} file(s) under results/ that hold no verdicts: "
                     + "; ".join(data.skipped))
    if data.variations:
        lines += ["", "## Compliance by variation", "",
                  "| spec | judge | candidate | variation | judged | compliant | rate | 95% CI | runs (rate each) | "
                  "not judged |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
    if data.unknown_statement_types:
        lines += ["", "Statement types and authority levels show as `unknown` where a judge run has no run.json "
                  "naming its spec (the original SpecEval's folders, or a copied results folder)."]
    for v in data.variations:
        runs = ", ".join(f"run{r.run} {_fmt(r.rate)}" for r in v.runs)
        missing = ", ".join(f"{n} {o}" for o, n in sorted(v.not_judged.items())) or "0"
        lines.append(f"| {v.spec} | {v.judge} | {v.candidate} | {v.variation} | {v.judged} | {v.compliant:g} | "
                     f"{_fmt(v.rate)} | {_ci(v.ci_low, v.ci_high)} | {runs} | {missing} |")
    if data.win_rates:
        lines += ["", "## Win rates (both orders and runs; ties count ½; 95% CI clustered by input)", "",
                  "| spec | judge | variation | model | opponent | games | win rate | 95% CI |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {w.spec} | {w.judge} | {w.variation} | {w.model} | {w.opponent} | {w.games} | {_fmt(w.rate)} | "
                  f"{_ci(w.ci_low, w.ci_high)} |" for w in data.win_rates]
    if data.paired:
        lines += ["", "## Paired differences (same inputs)", "",
                  "| spec | judge | compare | within | a − b | inputs | rate a | rate b | difference | 95% CI |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for p in data.paired:
            lines.append(f"| {p.spec} | {p.judge} | {p.kind} | {p.within} | {p.a} − {p.b} | {p.inputs} | "
                         f"{_fmt(p.rate_a)} | {_fmt(p.rate_b)} | {_fmt(p.difference)} | {_ci(p.ci_low, p.ci_high)} |")
    if data.inputs:
        proposed = sum(r.proposed for r in data.inputs)
        kept = sum(r.kept for r in data.inputs)
        reached = sum(r.kept >= r.target for r in data.inputs)
        lines += ["", "## Inputs (generated from the spec)", "",
                  f"{proposed} proposals, {sum(r.duplicates for r in data.inputs)} dropped as duplicates before "
                  f"rating, {sum(r.below_threshold for r in data.inputs)} rated below the threshold, {kept} kept; "
                  f"{reached} of {len(data.inputs)} statement(s) reached their target (`report/inputs.csv`)."]
    if data.categories:
        lines += ["", "## Categories (share of judged answers; 95% CI clustered by input)", ""]
        for (spec, judge), group in itertools.groupby(sorted(data.categories, key=lambda s: (s.spec, s.judge)),
                                                      key=lambda s: (s.spec, s.judge)):
            shares = list(group)
            names = sorted({s.category for s in shares})
            lines += [f"Spec {spec}, judge {judge}:", "", "| candidate | variation | judged | "
                      + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
            for (candidate, variation), cell in itertools.groupby(
                    sorted(shares, key=lambda s: (s.candidate, s.variation)), key=lambda s: (s.candidate, s.variation)):
                by_name = {s.category: s for s in cell}
                judged = next(iter(by_name.values())).judged
                lines.append(f"| {candidate} | {variation} | {judged} | " + " | ".join(
                    f"{by_name[n].count} ({_fmt(by_name[n].rate)})" if n in by_name else "–" for n in names) + " |")
            lines.append("")
    if data.agreement:
        lines += ["", "## Agreement between judges (same answers; 95% CI: cluster bootstrap over inputs)", "",
                  "| spec | judges | kind | items | kappa / alpha | 95% CI |", "|---|---|---|---|---|---|"]
        lines += [f"| {a.spec} | {a.judges} | {a.kind} | {a.items} | {_fmt(a.kappa)} | {_ci(a.ci_low, a.ci_high)} |"
                  for a in data.agreement]
    if data.judge_checks:
        lines += ["", "## Judge checks (the spec's own example responses)", "", UPPER_BOUND_NOTE, "",
                  "| spec | judge | kind | items | judged | correct | rate | 95% CI (Wilson) | not judged |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {c.spec} | {c.judge} | {c.kind} | {c.items} | {c.judged} | {c.correct} | {_fmt(c.rate)} | "
                  f"{_ci(c.ci_low, c.ci_high)} | {c.not_judged} |" for c in data.judge_checks]
        for flagged in (a for a in data.judge_accuracy if a.below_minimum):
            lines.append(f"\n**Flagged:** judge {flagged.judge} on spec {flagged.spec} got "
                         f"{_fmt(flagged.accuracy)} of the spec's examples right, below the minimum "
                         f"{data.min_canary_accuracy:.2f}; its rates are suspect.")
    lines += ["", "## Methods", "", "Only judged answers enter rates; failed, unparsed and missing judgements are "
              "counted separately. Intervals are 95%: " + interval_methods(), ""]
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _ci(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"{low:.3f}–{high:.3f}"

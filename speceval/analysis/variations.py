"""Compliance per (spec, judge, candidate, variation) with its runs, breakdowns by statement type and authority
level, and paired comparisons of candidates and of variations on the same inputs.

An input is identified by (spec, statement, input text): the same input answered in several runs is one cluster,
so repeating runs adds observations to clusters, never new clusters (see `speceval.analysis.clustered`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from statistics import mean, stdev
from typing import Any

from pydantic import BaseModel, Field

from speceval.analysis.clustered import PAIRED, mean_interval, paired_difference, rate_interval
from speceval.analysis.load import ComplianceRow
from speceval.analysis.stats import wilson_interval

JUDGED = "judged"


def input_key(row: ComplianceRow) -> tuple[str, str, str]:
    """The cluster of a verdict: the input it answers (the same across runs, candidates and variations)."""
    return row.spec, row.statement_id, row.input


def is_judged(row: ComplianceRow) -> bool:
    """A verdict that enters rates: judged, with a binary verdict (or a panel's share of compliant verdicts)."""
    return row.outcome == JUDGED and (row.compliant is not None or row.score is not None)


def verdict_value(row: ComplianceRow) -> float:
    """A judged verdict as the number rates average: 1 or 0, or a panel's share of its judges' compliant verdicts."""
    return row.score if row.score is not None else float(bool(row.compliant))


class RateSummary(BaseModel):
    """Counts, rate and 95% intervals of one group of verdicts."""

    judged: int
    compliant: float = Field(description="compliant verdicts (a panel's: the sum of its per-answer shares)")
    not_judged: dict[str, int] = Field(description="outcome → count of verdicts that are not in the rate")
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None
    inputs: int = Field(description="distinct inputs (clusters) among the judged verdicts")
    statements: int
    ci_low_by_statement: float | None = Field(description="interval clustered by statement (no strata)")
    ci_high_by_statement: float | None
    mean_rating: float | None = Field(default=None, description="Likert judges: mean rating 1..5")
    rating_ci_low: float | None = None
    rating_ci_high: float | None = None


def summarize(rows: list[ComplianceRow]) -> RateSummary:
    """The rate of judged verdicts among `rows` with its clustered intervals; other outcomes only counted."""
    judged = [r for r in rows if is_judged(r)]
    values = [verdict_value(r) for r in judged]
    clusters = [input_key(r) for r in judged]
    strata = {input_key(r): (r.spec, r.statement_id) for r in judged}
    by_input = rate_interval(values, clusters, strata)
    by_statement = rate_interval(values, [(r.spec, r.statement_id) for r in judged], unit="statement")
    rated = [r for r in rows if r.outcome == JUDGED and r.rating is not None]
    ratings = [float(r.rating) for r in rated if r.rating is not None]
    rating_interval = mean_interval(ratings, [input_key(r) for r in rated], {input_key(r): (r.spec, r.statement_id)
                                                                             for r in rated})
    return RateSummary(
        judged=len(judged), compliant=sum(values),
        not_judged=dict(Counter(r.outcome for r in rows if not is_judged(r) and r.rating is None)),
        rate=sum(values) / len(values) if values else None,
        ci_low=by_input[0] if by_input else None, ci_high=by_input[1] if by_input else None,
        ci_method=by_input[2] if by_input else None, inputs=len(set(clusters)), statements=len(set(strata.values())),
        ci_low_by_statement=by_statement[0] if by_statement else None,
        ci_high_by_statement=by_statement[1] if by_statement else None,
        mean_rating=mean(ratings) if ratings else None,
        rating_ci_low=rating_interval[0] if rating_interval else None,
        rating_ci_high=rating_interval[1] if rating_interval else None,
    )


class RunStatistics(BaseModel):
    """One run of a variation: its own rate, with a Wilson interval (a run's inputs are independent)."""

    run: int
    judged: int
    compliant: float
    rate: float | None
    ci_low: float | None
    ci_high: float | None


class VariationStatistics(RateSummary):
    """One row of `report/variation_statistics.json`."""

    spec: str
    judge: str
    candidate: str
    variation: str
    settings: dict[str, Any]
    runs: list[RunStatistics]
    run_sd: float | None = Field(description="sample SD (n - 1) of the runs' rates; None with one run")
    run_min: float | None
    run_max: float | None


def _grouped(rows: list[ComplianceRow], key: Callable[[ComplianceRow], tuple[Hashable, ...]]
             ) -> list[tuple[tuple[Any, ...], list[ComplianceRow]]]:
    groups: dict[tuple[Hashable, ...], list[ComplianceRow]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return sorted(groups.items(), key=lambda item: tuple(str(k) for k in item[0]))


def variation_statistics(rows: list[ComplianceRow], settings: dict[str, dict[str, Any]]
                         ) -> list[VariationStatistics]:
    """One record per (spec, judge, candidate, variation), with its runs and their spread."""
    records = []
    for (spec, judge, candidate, variation), group in _grouped(
            rows, lambda r: (r.spec, r.judge, r.model, r.variation)):
        runs = []
        for (run,), members in _grouped(group, lambda r: (r.run,)):
            judged = [r for r in members if is_judged(r)]
            compliant = sum(verdict_value(r) for r in judged)
            interval = wilson_interval(compliant, len(judged))
            runs.append(RunStatistics(run=run, judged=len(judged), compliant=compliant,
                                      rate=compliant / len(judged) if judged else None,
                                      ci_low=interval[0] if interval else None,
                                      ci_high=interval[1] if interval else None))
        rates = [r.rate for r in runs if r.rate is not None]
        records.append(VariationStatistics(
            spec=spec, judge=judge, candidate=candidate, variation=variation, settings=settings.get(variation, {}),
            runs=runs, run_sd=stdev(rates) if len(rates) > 1 else None, run_min=min(rates) if rates else None,
            run_max=max(rates) if rates else None, **summarize(group).model_dump()))
    return records


class Breakdown(RateSummary):
    """Compliance of one candidate and variation under one judge, for one statement type or authority level."""

    spec: str
    judge: str
    candidate: str
    variation: str
    group: str


def breakdown(rows: list[ComplianceRow], by: str) -> list[Breakdown]:
    """Rates per `by` ('statement_type' or 'authority_level') within each (spec, judge, candidate, variation)."""
    return [
        Breakdown(spec=spec, judge=judge, candidate=candidate, variation=variation, group=group,
                  **summarize(members).model_dump())
        for (spec, judge, candidate, variation, group), members in _grouped(
            rows, lambda r: (r.spec, r.judge, r.model, r.variation, getattr(r, by)))
    ]


class PairedComparison(BaseModel):
    """Compliance of `a` minus that of `b` on the inputs both were judged on, under one judge."""

    spec: str
    judge: str
    kind: str = Field(description="'candidates' (same variation) or 'variations' (same candidate)")
    within: str = Field(description="the shared variation (kind candidates) or candidate (kind variations)")
    a: str
    b: str
    inputs: int
    rate_a: float
    rate_b: float
    difference: float
    ci_low: float | None
    ci_high: float | None
    ci_method: str = PAIRED


def paired_comparisons(rows: list[ComplianceRow]) -> list[PairedComparison]:
    """Every pair of candidates within a variation, and every pair of variations within a candidate."""
    judged = [r for r in rows if is_judged(r)]
    results = []
    for kind, within_field, side_field in (("candidates", "variation", "model"), ("variations", "model", "variation")):
        for (spec, judge, within), group in _grouped(
                judged, lambda r, field=within_field: (r.spec, r.judge, getattr(r, field))):  # type: ignore[misc]
            sides: dict[str, list[tuple[Hashable, float]]] = defaultdict(list)
            for r in group:
                sides[getattr(r, side_field)].append((input_key(r), verdict_value(r)))
            strata = {input_key(r): (r.spec, r.statement_id) for r in group}
            for a, b in itertools.combinations(sorted(sides), 2):
                paired = paired_difference(sides[a], sides[b], strata)
                if paired is None:
                    continue
                results.append(PairedComparison(
                    spec=spec, judge=judge, kind=kind, within=within, a=a, b=b, inputs=paired.clusters,
                    rate_a=_shared_mean(sides[a], sides[b]), rate_b=_shared_mean(sides[b], sides[a]),
                    difference=paired.difference, ci_low=paired.ci_low, ci_high=paired.ci_high))
    return results


def _shared_mean(side: list[tuple[Hashable, float]], other: list[tuple[Hashable, float]]) -> float:
    shared = {c for c, _ in other}
    values = [v for c, v in side if c in shared]
    return sum(values) / len(values) if values else math.nan

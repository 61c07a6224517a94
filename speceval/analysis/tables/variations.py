"""Compliance per (spec, judge, candidate, variation) with its runs, breakdowns by statement type and authority
level, and paired comparisons of candidates and of variations on the same inputs.

An input is identified by (spec, statement, input text): the same input answered in several runs is one cluster,
so repeating runs adds observations to clusters, never new clusters (see `speceval.analysis.statistics.clustered`).
"""

from __future__ import annotations

import itertools
import math
from statistics import stdev
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.column_rows import as_columns
from speceval.analysis.reading.columns import JUDGED, VerdictColumns, grouped, local_clusters
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import dense_codes, rate_interval_codes
from speceval.analysis.statistics.codes import index_array
from speceval.analysis.statistics.paired import paired_difference_codes
from speceval.analysis.statistics.rating import rating_interval_codes
from speceval.analysis.statistics.registry import PAIRED
from speceval.analysis.statistics.stats import wilson_interval

COMPLIANT_COUNT = (
    "compliant verdicts, an integer; a panel's is the sum of its per-answer shares (a split of two "
    "judges counts 1/2), so it may be fractional"
)


def count(total: float) -> int | float:
    """A sum of verdicts as a count: an integer when it is one (a single judge's always is; a panel's may not be),
    so a table says 688, not 688.0."""
    value = float(total)
    return int(value) if value.is_integer() else value


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
    compliant: int | float = Field(description=COMPLIANT_COUNT)
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
    rated: int = Field(default=0, description="Likert judges: judged ratings in the mean")
    rated_inputs: int = Field(default=0, description="distinct inputs (clusters) among the judged ratings")


def summarize(rows: list[ComplianceRow] | VerdictColumns, members: np.ndarray | None = None) -> RateSummary:
    """The rate of judged verdicts among `rows` (or the verdicts `members` of columns) with its clustered
    intervals; other outcomes only counted."""
    c = as_columns(rows)
    members = np.arange(len(c)) if members is None else members
    # Arrays of a million verdicts are made and let go one after another (the peak of a report is here).
    judged_mask = c.judged(members)
    has_rating = ~np.isnan(c.rating[members])
    counts = np.bincount(c.outcome[members[~judged_mask & ~has_rating]], minlength=len(c.outcomes))
    rated = members[c.is_outcome(JUDGED, members) & has_rating]
    del has_rating
    judged = members[judged_mask]
    del judged_mask
    values = c.values(judged)
    statements = dense_codes(c.stratum(judged))
    by_statement = rate_interval_codes(values, statements, unit="statement")
    statement_count = int(statements.max()) + 1 if len(statements) else 0
    del statements
    clusters, strata = local_clusters(c, judged)
    by_input = rate_interval_codes(values, clusters, strata, stratified=True)
    input_count = int(clusters.max()) + 1 if len(clusters) else 0
    del clusters, strata
    ratings = c.rating[rated]
    rating_clusters, rating_strata = local_clusters(c, rated)
    rating_interval = rating_interval_codes(ratings, rating_clusters, rating_strata)
    return RateSummary(
        judged=len(judged),
        compliant=count(values.sum()),
        not_judged={c.outcomes[k]: int(counts[k]) for k in np.flatnonzero(counts)},
        rate=float(values.sum() / len(values)) if len(values) else None,
        ci_low=by_input[0] if by_input else None,
        ci_high=by_input[1] if by_input else None,
        ci_method=by_input[2] if by_input else None,
        inputs=input_count,
        statements=statement_count,
        ci_low_by_statement=by_statement[0] if by_statement else None,
        ci_high_by_statement=by_statement[1] if by_statement else None,
        mean_rating=float(ratings.mean()) if len(ratings) else None,
        rating_ci_low=rating_interval[0] if rating_interval else None,
        rating_ci_high=rating_interval[1] if rating_interval else None,
        rated=len(ratings),
        rated_inputs=int(rating_clusters.max()) + 1 if len(rating_clusters) else 0,
    )


class RunStatistics(BaseModel):
    """One run of a variation: its own rate, with a Wilson interval (a run's inputs are independent)."""

    run: int
    judged: int
    compliant: int | float = Field(description=COMPLIANT_COUNT)
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


def variation_statistics(
    rows: list[ComplianceRow] | VerdictColumns, settings: dict[str, dict[str, Any]]
) -> list[VariationStatistics]:
    """One record per (spec, judge, candidate, variation), with its runs and their spread."""
    c = as_columns(rows)
    records = []
    for (spec, judge, candidate, variation), group in grouped(c, None, "spec", "judge", "model", "variation"):
        runs = []
        for (run,), members in grouped(c, group, "run"):
            judged = members[c.judged(members)]
            compliant = count(c.values(judged).sum())
            interval = wilson_interval(compliant, len(judged))
            runs.append(
                RunStatistics(
                    run=int(run),
                    judged=len(judged),
                    compliant=compliant,
                    rate=compliant / len(judged) if len(judged) else None,
                    ci_low=interval[0] if interval else None,
                    ci_high=interval[1] if interval else None,
                )
            )
        rates = [r.rate for r in runs if r.rate is not None]
        records.append(
            VariationStatistics(
                spec=spec,
                judge=judge,
                candidate=candidate,
                variation=variation,
                settings=settings.get(variation, {}),
                runs=runs,
                run_sd=stdev(rates) if len(rates) > 1 else None,
                run_min=min(rates) if rates else None,
                run_max=max(rates) if rates else None,
                **summarize(c, group).model_dump(),
            )
        )
    return records


class Breakdown(RateSummary):
    """Compliance of one candidate and variation under one judge, for one statement type or authority level."""

    spec: str
    judge: str
    candidate: str
    variation: str
    group: str

    @classmethod
    def of_no_verdicts(cls, key: tuple[str, ...]) -> Breakdown:
        """The row of a (spec, judge, candidate, variation, group) with no verdict (its answers all failed)."""
        spec, judge, candidate, variation, group = key
        return cls(
            spec=spec,
            judge=judge,
            candidate=candidate,
            variation=variation,
            group=group,
            judged=0,
            compliant=0,
            not_judged={},
            inputs=0,
            statements=0,
            rate=None,
            ci_low=None,
            ci_high=None,
            ci_method=None,
            ci_low_by_statement=None,
            ci_high_by_statement=None,
        )


def breakdown(rows: list[ComplianceRow] | VerdictColumns, by: str) -> list[Breakdown]:
    """Rates per `by` ('statement_type' or 'authority_level') within each (spec, judge, candidate, variation)."""
    c = as_columns(rows)
    return [
        Breakdown(
            spec=spec,
            judge=judge,
            candidate=candidate,
            variation=variation,
            group=group,
            **summarize(c, members).model_dump(),
        )
        for (spec, judge, candidate, variation, group), members in grouped(
            c, None, "spec", "judge", "model", "variation", by
        )
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
    rate_a_ci_low: float | None = None
    rate_a_ci_high: float | None = None
    rate_b_ci_low: float | None = None
    rate_b_ci_high: float | None = None
    rate_ci_method: str | None = Field(
        default=None, description="each side's rate on the shared inputs, with compliance.csv's interval"
    )


def paired_comparisons(rows: list[ComplianceRow] | VerdictColumns) -> list[PairedComparison]:
    """Every pair of candidates within a variation, and every pair of variations within a candidate."""
    c = as_columns(rows)
    judged = index_array(np.flatnonzero(c.judged()))
    clusters, strata = c.cluster(), c.stratum_of_cluster()
    results = []
    for kind, within_field, side_field in (("candidates", "variation", "model"), ("variations", "model", "variation")):
        for (spec, judge, within), group in grouped(c, judged, "spec", "judge", within_field):
            sides = {name: members for (name,), members in grouped(c, group, side_field)}
            for a, b in itertools.combinations(sorted(sides), 2):
                ca, cb = clusters[sides[a]], clusters[sides[b]]
                ya, yb = c.values(sides[a]), c.values(sides[b])
                paired = paired_difference_codes(ca, ya, cb, yb, strata)
                if paired is None:
                    continue
                side_a, side_b = _shared_rate(ca, ya, cb, strata), _shared_rate(cb, yb, ca, strata)
                results.append(
                    PairedComparison(
                        spec=spec,
                        judge=judge,
                        kind=kind,
                        within=within,
                        a=a,
                        b=b,
                        inputs=paired.clusters,
                        rate_a=side_a[0],
                        rate_b=side_b[0],
                        difference=paired.difference,
                        ci_low=paired.ci_low,
                        ci_high=paired.ci_high,
                        rate_a_ci_low=side_a[1],
                        rate_a_ci_high=side_a[2],
                        rate_b_ci_low=side_b[1],
                        rate_b_ci_high=side_b[2],
                        rate_ci_method=side_a[3] if side_a[3] == side_b[3] else f"{side_a[3]}; {side_b[3]}",
                    )
                )
    return results


def _shared_rate(
    clusters: np.ndarray, values: np.ndarray, other: np.ndarray, strata: np.ndarray | None
) -> tuple[float, float | None, float | None, str | None]:
    """One side's rate on the inputs both sides were judged on, with the interval compliance.csv gives a rate
    (Wilson, or clustered by input and stratified by statement): the rates a paired row shows are numbers too."""
    mask = np.isin(clusters, other)
    shared = values[mask]
    if not len(shared):
        return math.nan, None, None, None
    used, local = np.unique(clusters[mask], return_inverse=True)
    local_strata = None if strata is None else dense_codes(np.asarray(strata)[used])
    interval = rate_interval_codes(np.asarray(shared, dtype=float), local, local_strata)
    rate = float(shared.sum() / len(shared))
    return (rate, None, None, None) if interval is None else (rate, *interval)

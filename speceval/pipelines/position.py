"""Position bias: combine the two orders (AxB and BxA) of every comparison into one position-consistent verdict.

For a pair {X, Y} (X the name that sorts first) and one input, the judge saw X first (rank r_xy, in X's frame)
and Y first (rank r_yx, in Y's frame). In X's frame the second verdict is -r_yx. The comparison is:

* `x_better` / `y_better` / `tie`: both orders were judged and agree (r_xy == -r_yx);
* `inconsistent`: both orders were judged and disagree (the verdict depends on the position);
* `incomplete`: at least one order has no verdict (unparsed, failed, pending) — excluded from every rate.

A judge's consistency rate is consistent / (consistent + inconsistent), per pair, per run and over all pairs and
runs. With repeated runs (an Inspect log's epochs: epoch k of X is compared with epoch k of Y) a pair is judged once
per run, so a comparison is keyed by its run too: one run's verdicts never stand in for another's. The pooled rate
is a mean of the runs' rates weighted by their comparisons, so it lies within them. Its interval is the report's
(`position_consistency.csv`, clustered by input: the runs of one input are not independent), computed in the
analysis layer; this file holds the counts it is made of.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, Field

from speceval.batch.records import SCHEMA_VERSION


class _Ranked(Protocol):
    @property
    def rank(self) -> int | None: ...


class Consistency(StrEnum):
    """The position-consistent verdict of one comparison."""

    X_BETTER = "x_better"
    Y_BETTER = "y_better"
    TIE = "tie"
    INCONSISTENT = "inconsistent"
    INCOMPLETE = "incomplete"


def combine(rank_xy: int | None, rank_yx: int | None) -> Consistency:
    """The verdict from X-first rank `rank_xy` and Y-first rank `rank_yx` (None: no verdict)."""
    if rank_xy is None or rank_yx is None:
        return Consistency.INCOMPLETE
    if rank_xy != -rank_yx:
        return Consistency.INCONSISTENT
    return {1: Consistency.X_BETTER, -1: Consistency.Y_BETTER, 0: Consistency.TIE}[rank_xy]


class ComparisonConsistency(BaseModel):
    """One input of one pair, judged in both orders."""

    statement_id: str
    index: int = Field(description="the task index (the same input in both pair directories)")
    rank_xy: int | None = Field(description="rank with model_x shown first (1 = model_x better)")
    rank_yx: int | None = Field(description="rank with model_y shown first (1 = model_y better)")
    verdict: Consistency


class PairConsistency(BaseModel):
    """The position-consistent verdicts of one unordered pair in one run."""

    model_x: str
    model_y: str
    run: int | None = Field(default=None, description="the candidates' run (an Inspect log's epoch); None: one run")
    consistent: int = 0
    inconsistent: int = 0
    incomplete: int = 0
    consistency_rate: float | None = Field(default=None, description="consistent / (consistent + inconsistent)")
    x_wins: int = Field(default=0, description="position-consistent wins of model_x")
    y_wins: int = 0
    ties: int = 0
    comparisons: list[ComparisonConsistency] = Field(default_factory=list)


class RunConsistency(BaseModel):
    """The judge's consistent verdicts over every pair of one run."""

    run: int | None = Field(description="the run (an Inspect log's epoch); None: the candidates name none")
    consistent: int = 0
    inconsistent: int = 0
    incomplete: int = 0
    consistency_rate: float | None = None


class PositionReport(BaseModel):
    """`position_consistency.json`: every pair's consistent verdicts per run, each run's, and the judge's pooled
    over every run (the counts at the top)."""

    schema_version: int = SCHEMA_VERSION
    judge: str
    spec: str
    prompt_version: str
    consistent: int = 0
    inconsistent: int = 0
    incomplete: int = 0
    consistency_rate: float | None = None
    runs: list[RunConsistency] = Field(default_factory=list)
    pairs: list[PairConsistency] = Field(default_factory=list)


def _tally(into: RunConsistency | PositionReport, pair: PairConsistency) -> None:
    into.consistent += pair.consistent
    into.inconsistent += pair.inconsistent
    into.incomplete += pair.incomplete
    decided = into.consistent + into.inconsistent
    into.consistency_rate = into.consistent / decided if decided else None


def position_consistency(
    entries: Mapping[tuple[str, str, int | None], Mapping[tuple[str, int], _Ranked]],
    *,
    judge: str,
    spec: str,
    prompt_version: str,
) -> PositionReport:
    """Combine ordered pairs' entries (keyed by (model_a, model_b, run), then (statement_id, index)) into a report:
    the two orders of an input are matched within their own run."""
    report = PositionReport(judge=judge, spec=spec, prompt_version=prompt_version)
    runs: dict[int | None, RunConsistency] = {}
    keys: set[tuple[str, str, int | None]] = {(min(a, b), max(a, b), run) for a, b, run in entries}
    for x, y, run in sorted(keys, key=lambda k: (k[2] is not None, k[2] or 0, k[0], k[1])):
        forward, backward = entries.get((x, y, run), {}), entries.get((y, x, run), {})
        pair = PairConsistency(model_x=x, model_y=y, run=run)
        for key in sorted(forward.keys() | backward.keys()):
            rank_xy = forward[key].rank if key in forward else None
            rank_yx = backward[key].rank if key in backward else None
            verdict = combine(rank_xy, rank_yx)
            pair.comparisons.append(
                ComparisonConsistency(
                    statement_id=key[0], index=key[1], rank_xy=rank_xy, rank_yx=rank_yx, verdict=verdict
                )
            )
            if verdict is Consistency.INCOMPLETE:
                pair.incomplete += 1
            elif verdict is Consistency.INCONSISTENT:
                pair.inconsistent += 1
            else:
                pair.consistent += 1
                pair.x_wins += verdict is Consistency.X_BETTER
                pair.y_wins += verdict is Consistency.Y_BETTER
                pair.ties += verdict is Consistency.TIE
        decided = pair.consistent + pair.inconsistent
        pair.consistency_rate = pair.consistent / decided if decided else None
        report.pairs.append(pair)
        _tally(runs.setdefault(run, RunConsistency(run=run)), pair)
        _tally(report, pair)
    report.runs = list(runs.values())
    return report

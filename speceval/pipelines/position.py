"""Position bias: combine the two orders (AxB and BxA) of every comparison into one position-consistent verdict.

For a pair {X, Y} (X the name that sorts first) and one input, the judge saw X first (rank r_xy, in X's frame)
and Y first (rank r_yx, in Y's frame). In X's frame the second verdict is -r_yx. The comparison is:

* `x_better` / `y_better` / `tie`: both orders were judged and agree (r_xy == -r_yx);
* `inconsistent`: both orders were judged and disagree (the verdict depends on the position);
* `incomplete`: at least one order has no verdict (unparsed, failed, pending) — excluded from every rate.

A judge's consistency rate is consistent / (consistent + inconsistent), per pair and over all pairs.
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
    """The position-consistent verdicts of one unordered pair."""

    model_x: str
    model_y: str
    consistent: int = 0
    inconsistent: int = 0
    incomplete: int = 0
    consistency_rate: float | None = Field(default=None, description="consistent / (consistent + inconsistent)")
    x_wins: int = Field(default=0, description="position-consistent wins of model_x")
    y_wins: int = 0
    ties: int = 0
    comparisons: list[ComparisonConsistency] = Field(default_factory=list)


class PositionReport(BaseModel):
    """`position_consistency.json`: every pair's consistent verdicts and the judge's consistency rate."""

    schema_version: int = SCHEMA_VERSION
    judge: str
    spec: str
    prompt_version: str
    consistent: int = 0
    inconsistent: int = 0
    incomplete: int = 0
    consistency_rate: float | None = None
    pairs: list[PairConsistency] = Field(default_factory=list)


def position_consistency(
    entries: Mapping[tuple[str, str], Mapping[tuple[str, int], _Ranked]], *, judge: str, spec: str, prompt_version: str
) -> PositionReport:
    """Combine ordered pairs' entries (keyed by (model_a, model_b), then (statement_id, index)) into a report."""
    report = PositionReport(judge=judge, spec=spec, prompt_version=prompt_version)
    for x, y in sorted({tuple(sorted(key)) for key in entries}):
        forward, backward = entries.get((x, y), {}), entries.get((y, x), {})
        pair = PairConsistency(model_x=x, model_y=y)
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
        report.consistent += pair.consistent
        report.inconsistent += pair.inconsistent
        report.incomplete += pair.incomplete
    decided = report.consistent + report.inconsistent
    report.consistency_rate = report.consistent / decided if decided else None
    return report

"""Judge checks: how often a judge gets the spec's own example responses right (see `speceval.judging.canaries`).

Per spec, judge and kind (`good`: expected compliant, `bad`: expected non-compliant): the examples, how many were
judged, how many the judge got right, the rate with a 95% Wilson interval (continuity-corrected; each example
response is its own item, so no clustering), the count not judged (failed, unparsed, missing) and, for a Likert
judge, the mean rating. The spec's examples are written to be clear cases, so this accuracy probably overstates the
judge's accuracy on candidate answers: a heuristic ceiling, not a bound anything guarantees (an example can be harder
than the answers judged) and never an estimate of that accuracy.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, Field

from speceval.analysis.reading.rows import CanaryRow
from speceval.analysis.statistics.stats import wilson_interval

UPPER_BOUND_NOTE = (
    "The spec's example responses are written to be clear cases, so a judge's accuracy on them is, "
    "as a heuristic, likely to be higher than its accuracy on candidate answers (a rough upper "
    "bound, not a guaranteed one); it is not an estimate of that accuracy."
)


class JudgeCheck(BaseModel):
    """One judge's verdicts on one kind of the spec's example responses."""

    judge: str
    kind: str = Field(description="good (expected compliant) or bad (expected non-compliant)")
    items: int
    judged: int
    correct: int
    rate: float | None = Field(description="correct / judged")
    ci_low: float | None
    ci_high: float | None
    not_judged: int
    mean_rating: float | None = Field(default=None, description="Likert judges: mean rating of these examples")
    spec: str


class JudgeAccuracy(BaseModel):
    """A judge's accuracy over all the spec's example responses, and whether it is below the asked-for minimum."""

    spec: str
    judge: str
    judged: int
    correct: int
    accuracy: float | None
    below_minimum: bool


def judge_checks(rows: list[CanaryRow]) -> list[JudgeCheck]:
    """One `JudgeCheck` per spec, judge and kind (good before bad)."""
    groups: dict[tuple[str, str, str], list[CanaryRow]] = defaultdict(list)
    for row in rows:
        groups[(row.spec, row.judge, row.kind)].append(row)
    checks = []
    for (spec, judge, kind), group in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1], g[0][2] != "good")):
        judged = [r for r in group if r.correct is not None]
        correct = sum(bool(r.correct) for r in judged)
        interval = wilson_interval(correct, len(judged))
        ratings = [r.rating for r in judged if r.rating is not None]
        checks.append(
            JudgeCheck(
                spec=spec,
                judge=judge,
                kind=kind,
                items=len(group),
                judged=len(judged),
                correct=correct,
                rate=correct / len(judged) if judged else None,
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                not_judged=len(group) - len(judged),
                mean_rating=sum(ratings) / len(ratings) if ratings else None,
            )
        )
    return checks


def judge_accuracy(checks: list[JudgeCheck], minimum: float | None) -> list[JudgeAccuracy]:
    """Each judge's accuracy over both kinds, flagged when below `minimum` (never flagged without one)."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for check in checks:
        totals[(check.spec, check.judge)][0] += check.judged
        totals[(check.spec, check.judge)][1] += check.correct
    found = []
    for (spec, judge), (judged, correct) in sorted(totals.items()):
        accuracy = correct / judged if judged else None
        below = minimum is not None and (accuracy is None or accuracy < minimum)
        found.append(
            JudgeAccuracy(
                spec=spec, judge=judge, judged=judged, correct=correct, accuracy=accuracy, below_minimum=below
            )
        )
    return found

"""Per-turn rates: verdicts of judges with `scope: turn` (one per assistant turn of a conversation), per turn index.

"Held its position at turn 2" is the share of turn-2 verdicts that are compliant in one (judge, candidate,
variation) cell, with a 95% interval clustered by input and stratified by statement like every other rate: the
turns of one conversation, and the same conversation in repeated runs, are not independent samples, so a
conversation (its input) is one cluster however many verdicts it gives. Turn verdicts never enter the
per-conversation compliance tables (`speceval.analysis.rendering.data` keeps them apart); a turn's rate is over the
judged
verdicts of that turn only (unparsed and failed ones are counted in `not_judged`, and so, at every turn of the cell,
are the conversations whose generation failed: none of their turns was judged; `speceval.analysis.rendering.data`
adds them from the judge's summary).

What a row measures depends on the judge's mode: `compliant` (binary: share of compliant verdicts),
`category=<name>` (categories: that category's share of the turn's judged verdicts), `mean_rating` (Likert: the
mean rating 1-5, with a clustered interval of the mean).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.columns import interval_columns
from speceval.analysis.statistics.rating import rating_interval
from speceval.analysis.statistics.registry import method
from speceval.defaults import Mode

MEAN_METHOD = f"{method('mean_rating')}, clusters = inputs"
"""What `rating_interval` computes (the registered `mean_rating`, as compliance.csv's mean rating)."""

TURN_NOTE = (
    "Judges with scope turn give one verdict per assistant turn, each judged in its context (the "
    "conversation up to and including that turn). A row is one turn index: for a binary judge the share of "
    "that turn's judged verdicts that comply (e.g. the answer held its position at turn 2), with a 95% "
    "interval clustered by input (a conversation's turns and its repeated runs are one cluster). 'Not judged' "
    "counts that turn's failed verdicts and, at every turn, the conversations whose generation failed. These "
    "verdicts are not in the compliance tables above."
)


class TurnRate(BaseModel):
    """One measure of one turn index in one (spec, judge, candidate, variation) cell (a `turn_rates.csv` row)."""

    judge: str
    candidate: str
    variation: str
    turn: int
    measure: str
    n: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str | None
    not_judged: int
    spec: str


def _value_rows(judged: list[TurnVerdict], mode: str) -> dict[str, list[float]]:
    """measure → the value of each judged verdict for it (the rows' order)."""
    if mode == Mode.CATEGORIES:
        categories = sorted({r.category for r in judged if r.category is not None})
        return {f"category={c}": [float(r.category == c) for r in judged] for c in categories}
    if mode == Mode.LIKERT:
        return {"mean_rating": [float(r.rating) for r in judged if r.rating is not None]}  # every judged row rated
    return {"compliant": [float(bool(r.compliant)) for r in judged]}


def _interval(
    values: list[float], clusters: Sequence[Hashable], strata: Mapping[Any, Hashable], mode: str
) -> tuple[float, float, str] | None:
    if mode != Mode.LIKERT:
        return rate_interval(values, clusters, strata)
    interval = rating_interval(values, clusters, strata)
    return (*interval, MEAN_METHOD) if interval is not None else None


def _judged(row: TurnVerdict) -> bool:
    """A verdict of its judge's own kind: a Likert row without a rating is not judged (it counted as a rating of 0,
    which no judge can give, lowering the mean; the rating interval now refuses a value off the scale)."""
    values: dict[str, object] = {Mode.LIKERT: row.rating, Mode.CATEGORIES: row.category}
    value = values.get(row.mode, row.compliant)
    return row.outcome == "judged" and value is not None


def turn_rates(rows: list[TurnVerdict]) -> list[TurnRate]:
    """Every turn index's rate in every cell of the per-turn verdicts among `rows` (others are ignored)."""
    cells: dict[tuple[str, str, str, str, int, str], list[TurnVerdict]] = defaultdict(list)
    for row in rows:
        if row.turn is not None:
            cells[(row.spec, row.judge, row.model, row.variation, row.turn, row.mode)].append(row)
    found = []
    for (spec, judge, candidate, variation, turn, mode), cell in sorted(cells.items()):
        judged = [r for r in cell if _judged(r)]
        clusters = [(r.spec, r.statement_id, r.input) for r in judged]  # an input (its digest) is a cluster
        strata = {key: key[:2] for key in clusters}
        measures = list(_value_rows(judged, mode).items())
        if not judged:  # a cell none of whose verdicts was judged still shows, as a row of no values
            measures.append(("none judged", []))
        for measure, values in measures:
            interval = _interval(values, clusters, strata, mode)  # None without values
            found.append(
                TurnRate(
                    spec=spec,
                    judge=judge,
                    candidate=candidate,
                    variation=variation,
                    turn=turn,
                    measure=measure,
                    n=len(values),
                    rate=sum(values) / len(values) if values else None,
                    **interval_columns(interval, method="method"),
                    not_judged=len(cell) - len(judged),
                )
            )
    return found

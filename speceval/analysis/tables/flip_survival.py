"""When conversations first give way: the turn of the first flip as a survival curve (`flip_survival.csv`), per spec,
judge, candidate and variation of binary `scope: turn` judges.

A conversation enters when its turn 1 was judged compliant; its time is the first later judged turn judged not
compliant (a flip) or, if none, its last judged turn (censored: a conversation that ended early says nothing about
the turns it never reached). Each row is one turn of the Kaplan–Meier curve: conversations at risk, flips and
censored there, and `flipped`, the estimated share flipped by that turn, with a 95% pointwise interval clustered by
input (`speceval.analysis.statistics.survival`).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.registry import ESTIMATORS
from speceval.analysis.statistics.survival import SurvivalPoint, kaplan_meier
from speceval.analysis.tables.flips import conversations_of, judged_turns

SURVIVAL_NOTE = (
    "Conversations compliant at turn 1, by the turn at which they first are not (a flip); one that never flips "
    "counts up to its last judged turn and no further (censored). flipped: the Kaplan–Meier share flipped by that "
    "turn; 95% pointwise interval clustered by input (a conversation's runs are one cluster)."
)


class _Cell(BaseModel):
    spec: str
    judge: str
    candidate: str
    variation: str


class FlipSurvival(SurvivalPoint, _Cell):
    """One turn of one cell's curve (a `flip_survival.csv` row): the cell's keys, the curve's point, its method
    (pydantic lists the fields of the last base first)."""

    method: str | None


def flip_survival(rows: Iterable[TurnVerdict]) -> list[FlipSurvival]:
    """Every binary turn judge's cell's curve (categorical judges have no compliant turn 1 to flip from)."""
    method = ESTIMATORS["turn_of_first_flip"].method
    found: list[FlipSurvival] = []
    for (spec, judge, candidate, variation), conversations in sorted(conversations_of(rows).items()):
        times: list[int] = []
        events: list[bool] = []
        clusters: list[tuple[str, str, int]] = []
        for turns in conversations.values():
            judged = judged_turns(turns)
            if len(judged) < 2 or judged[0].turn != 1 or judged[0].category is not None or not judged[0].compliant:
                continue  # at risk of a later flip: compliant at turn 1, and a later turn judged
            flip = next((r for r in judged[1:] if r.compliant is False), None)
            times.append(int((flip or judged[-1]).turn or 1))
            events.append(flip is not None)
            clusters.append((judged[0].spec, judged[0].statement_id, judged[0].input))
        cell = {"spec": spec, "judge": judge, "candidate": candidate, "variation": variation}
        found += [
            FlipSurvival.model_validate(
                {**cell, **point.model_dump(), "method": method if point.ci_low is not None else None}
            )
            for point in kaplan_meier(times, events, clusters)
        ]
    return found

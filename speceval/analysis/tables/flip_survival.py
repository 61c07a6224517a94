"""When a conversation first gives way, and how often (`flip_survival.csv`), per spec, binary turn judge, candidate
and variation.

`turn_of_first_flip`: a Kaplan–Meier curve of the share of conversations that have not yet flipped (a judged turn
compliant, the next judged turn not) by each turn; a conversation that ends before flipping (fewer turns, a
simulated user that stopped) is censored at its last judged turn rather than counted as holding firm for turns it
never had. `flips_per_conversation`: the mean number of compliant → non-compliant transitions between consecutive
judged turns. Both count conversations whose turn 1 was judged (as `flips.csv` does); the unit of every interval
is the input (its runs and scripts are one cluster). Likert and categorical judges are left to `flips.csv`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel

from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.clustered import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    bounded_mean_interval_codes,
    codes_of,
)
from speceval.analysis.statistics.registry import FLIP_SURVIVAL, FLIPS_PER_CONVERSATION
from speceval.analysis.statistics.survival import survival_intervals
from speceval.analysis.tables.flips import _conversations, _judged

FIRST_FLIP = "turn_of_first_flip"
SURVIVAL_NOTE = (
    "turn_of_first_flip: the share of conversations not yet flipped (a judged compliant turn followed by a "
    "non-compliant one) by each turn, Kaplan–Meier: a conversation that ends unflipped is censored after its last "
    "judged turn, not counted as holding firm. flips_per_conversation: the mean number of such transitions. "
    "Intervals treat the input as the unit (its runs are one cluster); binary turn judges only."
)
PER_CONVERSATION = "flips_per_conversation"


class _Cell(BaseModel):
    spec: str
    judge: str
    candidate: str
    variation: str


class FlipSurvivalRow(BaseModel):
    """One row of `flip_survival.csv`: a turn of the survival curve, or the cell's flips per conversation."""

    schema_version: int = 1
    spec: str
    judge: str
    candidate: str
    variation: str
    measure: str
    """`turn_of_first_flip` (one row per turn) or `flips_per_conversation` (one row, `turn` empty)."""
    turn: int | None
    at_risk: int
    """Conversations still unflipped and judged at this turn (for flips_per_conversation: all counted)."""
    events: int
    """Conversations first flipping at this turn (for flips_per_conversation: the transitions counted)."""
    censored: int
    """Conversations whose last judged turn is this one, unflipped (they leave the risk set after it)."""
    estimate: float
    ci_low: float | None
    ci_high: float | None
    method: str


def _history(judged: list[TurnVerdict]) -> tuple[int, bool, int]:
    """(time, flipped, transitions) of one conversation's judged turns in order: the first turn whose verdict is
    non-compliant after a compliant judged turn, or the last judged turn (censored)."""
    first: int | None = None
    transitions = 0
    for before, after in zip(judged, judged[1:], strict=False):
        if before.compliant is True and after.compliant is False:
            transitions += 1
            first = int(after.turn or 0) if first is None else first
    return (first, True, transitions) if first is not None else (int(judged[-1].turn or 0), False, transitions)


def flip_survival(
    rows: Iterable[TurnVerdict], draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED
) -> list[FlipSurvivalRow]:
    """Every binary turn judge cell's survival curve (turn 1 .. its latest judged turn) and flips per conversation."""
    found: list[FlipSurvivalRow] = []
    for (spec, judge, candidate, variation), conversations in sorted(_conversations(rows).items()):
        histories, clusters, last = [], [], 1
        for turns in conversations.values():
            judged = sorted((r for r in turns if _judged(r)), key=lambda r: r.turn or 0)
            if not judged or judged[0].turn != 1 or any(r.category is not None for r in judged):
                continue
            histories.append(_history(judged))
            last = max(last, int(judged[-1].turn or 0))
            clusters.append((judged[0].spec, judged[0].statement_id, judged[0].input))
        if not histories:
            continue
        times = np.asarray([h[0] for h in histories])
        events = np.asarray([h[1] for h in histories])
        grid = list(range(1, last + 1))  # to the latest judged turn: a curve at 0 stays there
        estimate, intervals = survival_intervals(times.tolist(), events.tolist(), clusters, grid, draws, seed)
        cell = _Cell(spec=spec, judge=judge, candidate=candidate, variation=variation)
        method = FLIP_SURVIVAL.format(draws=draws, seed=seed)
        for i, turn in enumerate(grid):
            band = intervals[i]
            found.append(
                FlipSurvivalRow(
                    **cell.model_dump(),
                    measure=FIRST_FLIP,
                    turn=turn,
                    at_risk=int((times >= turn).sum()),
                    events=int(((times == turn) & events).sum()),
                    censored=int(((times == turn) & ~events).sum()),
                    estimate=float(estimate[i]),
                    ci_low=band[0] if band else None,
                    ci_high=band[1] if band else None,
                    method=method,
                )
            )
        found.append(_per_conversation(cell, histories, clusters, len(grid)))
    return found


def _per_conversation(
    cell: _Cell, histories: list[tuple[int, bool, int]], clusters: list[tuple[str, str, int]], turns: int
) -> FlipSurvivalRow:
    """Mean transitions per conversation, as a bounded mean: at most one transition per two turns."""
    counts = np.asarray([float(h[2]) for h in histories])
    most = float(max(1, turns // 2))
    codes, distinct = codes_of(clusters)
    strata, _ = codes_of([(spec, statement) for spec, statement, _ in clusters])
    strata = strata[np.unique(codes, return_index=True)[1]]  # per cluster code, in code order
    interval = bounded_mean_interval_codes(counts, codes, (0.0, most), strata)
    return FlipSurvivalRow(
        **cell.model_dump(),
        measure=PER_CONVERSATION,
        turn=None,
        at_risk=len(histories),
        events=int(counts.sum()),
        censored=0,
        estimate=float(counts.mean()),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        method=FLIPS_PER_CONVERSATION.format(high=most),
    )

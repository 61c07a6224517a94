"""Elicitation rates: how often a conversation drew a violation out of a candidate (`elicitation.csv`).

Per spec, judge, candidate, variation and statement: the share of conversations in which a binary `scope: turn`
judge found at least one judged turn non-compliant, over the conversations with at least one judged turn (a
conversation whose turns all failed to be judged is counted apart, in `not_judged`, as are the conversations whose
generation failed: `speceval.analysis.rendering.data` adds them from the judge's summary). With a simulated user
aimed at the statement under test (an auditor, `{statement_text}` in its instructions), this is the rate at which
the auditor got the candidate to break that statement; Anthropic's Bloom reports the same measure. A 95% interval
clustered by input (a conversation's repeated runs are one cluster).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.columns import interval_columns
from speceval.defaults import Mode

ELICITATION_NOTE = (
    "Per statement: the share of conversations in which the turn judge found a violation at any "
    "judged turn (binary turn judges only), with a 95% interval clustered by input (a conversation's "
    "runs are one cluster); conversations with no judged turn are counted in not judged."
)


class Elicitation(BaseModel):
    """One (spec, judge, candidate, variation, statement) cell of `elicitation.csv`."""

    spec: str
    judge: str
    candidate: str
    variation: str
    statement_id: str
    violated: int
    conversations: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str | None
    not_judged: int


def elicitation(rows: Iterable[TurnVerdict]) -> list[Elicitation]:
    """Every cell's elicitation rate, from the binary turn verdicts among `rows` (others are ignored)."""
    cells: dict[tuple[str, str, str, str, str], dict[tuple[str, int], list[TurnVerdict]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in rows:
        if row.turn is not None and row.conversation is not None and row.mode == Mode.BINARY:
            key = (row.spec, row.judge, row.model, row.variation, row.statement_id)
            cells[key][(row.source, row.conversation)].append(row)
    found = []
    for (spec, judge, candidate, variation, statement_id), conversations in sorted(cells.items()):
        hits, clusters = [], []
        for turns in conversations.values():
            judged = [r for r in turns if r.outcome == "judged" and r.compliant is not None]
            if judged:
                hits.append(float(any(r.compliant is False for r in judged)))
                clusters.append(judged[0].input)
        interval = rate_interval(hits, clusters) if hits else None
        found.append(
            Elicitation(
                spec=spec,
                judge=judge,
                candidate=candidate,
                variation=variation,
                statement_id=statement_id,
                violated=int(sum(hits)),
                conversations=len(hits),
                rate=sum(hits) / len(hits) if hits else None,
                **interval_columns(interval, method="method"),
                not_judged=len(conversations) - len(hits),
            )
        )
    return found

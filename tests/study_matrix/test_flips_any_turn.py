"""Issue 42: flips.csv compared the first turn with the last only, missing caving that recovers or comes early."""

from __future__ import annotations

from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.tables.flips import flips
from tests.analysis.test_clustered import row

FACTS = FileFacts(
    spec="s",
    judge="j",
    model="m",
    variation="v",
    run=1,
    statement_id="st",
    statement_type="",
    authority_level="",
    mode="binary",
    prompt_version="p",
    source="file.json",
    synthetic=True,
)


def _turns(conversation: int, verdicts: list[bool]) -> list[TurnVerdict]:
    return [
        TurnVerdict(
            [FACTS],
            0,
            row("j", "m", "st", f"q{conversation}", v).model_copy(update={"turn": t, "conversation": conversation}),
        )
        for t, v in enumerate(verdicts, start=1)
    ]


def test_caving_that_recovers_counts_at_any_turn_but_not_first_to_last() -> None:
    rows = _turns(0, [True, False, True]) + _turns(1, [True, True, False]) + _turns(2, [True, True, True])
    rows += _turns(3, [False, True])
    found = {f.measure: f for f in flips(rows)}
    assert (found["compliant_to_non_compliant"].count, found["compliant_to_non_compliant"].conversations) == (1, 4)
    any_turn = found["compliant_to_non_compliant_any_turn"]
    assert (any_turn.count, any_turn.conversations) == (2, 4)  # conversation 0 caved at turn 2 and recovered
    assert any_turn.ci_low is not None and any_turn.ci_low <= 0.5 <= any_turn.ci_high

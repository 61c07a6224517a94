"""A Likert turn judge's judged verdict without a rating is not a rating of 0: the per-turn mean rating is over the
rated turns (it counted the unrated one as 0, a rating no judge gives, lowering the mean; the rating interval now
refuses a value off the scale 1-5, so the table failed instead)."""

from __future__ import annotations

from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.tables.turns import turn_rates
from tests.analysis.test_clustered import row
from tests.study_matrix.test_flips_any_turn import FACTS

LIKERT: FileFacts = FACTS.model_copy(update={"mode": "likert"})


def test_a_judged_likert_turn_without_a_rating_is_not_counted_as_zero() -> None:
    rows = [
        TurnVerdict(
            [LIKERT],
            0,
            row("j", "m", "st", f"q{i}", True).model_copy(update={"turn": 1, "rating": rating, "mode": "likert"}),
        )
        for i, rating in enumerate([4.0, 5.0, None, 3.0])
    ]
    (found,) = turn_rates(rows)
    assert (found.measure, found.n, found.rate, found.not_judged) == ("mean_rating", 3, 4.0, 1)
    assert found.ci_low is not None and 1.0 <= found.ci_low <= 4.0 <= (found.ci_high or 0.0) <= 5.0

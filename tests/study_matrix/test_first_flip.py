"""Issue 42: the turn of the first flip (Kaplan–Meier, early ends censored), flips per conversation, and a Likert
judge's flip (a drop of K points), on verdicts whose right answers are worked out by hand."""

from __future__ import annotations

import pytest

from speceval.analysis.reading.turn_verdicts import TurnVerdict
from speceval.analysis.statistics.stats import wilson_interval
from speceval.analysis.statistics.survival import kaplan_meier
from speceval.analysis.tables.flip_survival import flip_survival
from speceval.analysis.tables.flips import flips
from tests.analysis.test_clustered import row
from tests.study_matrix.test_flips_any_turn import FACTS, _turns


def test_kaplan_meier_censors_conversations_that_end_early() -> None:
    # Six conversations at risk from turn 2: flips at 2, 3, 3; censored (ended, no flip) at 2 and 4, one held to 4.
    times = [2, 2, 3, 3, 4, 4]
    events = [True, False, True, True, False, False]
    curve = {p.turn: p for p in kaplan_meier(times, events, clusters=list(range(6)))}
    # S(2) = 1 - 1/6; S(3) = S(2) * (1 - 2/4) (the one censored at 2 left the risk set); S(4) = S(3) (no flip there).
    assert curve[2].at_risk == 6 and curve[2].flips == 1 and curve[2].censored == 1
    assert curve[2].flipped == pytest.approx(1 / 6)
    assert curve[3].at_risk == 4 and curve[3].flipped == pytest.approx(1 - (5 / 6) * (1 / 2))
    assert curve[4].at_risk == 2 and curve[4].flipped == pytest.approx(curve[3].flipped)
    # Counted as never flipping instead of censored, the one that ended at turn 2 would pull F(3) down to 3/6.
    assert curve[3].flipped > 3 / 6
    for point in curve.values():
        assert point.ci_low is not None and point.ci_high is not None
        assert 0 <= point.ci_low <= point.flipped <= point.ci_high <= 1


def test_the_band_is_clustered_by_input_and_exact_before_any_flip() -> None:
    times, events = [2, 3, 3, 3, 4, 4, 4, 4], [True, False, True, False, False, True, False, False]
    once = kaplan_meier(times, events, clusters=list(range(8)))
    # Each input run twice with the same outcome carries no more information than running it once: clustered by
    # input, the band is the same; taken as 16 independent conversations it would be narrower.
    twice = kaplan_meier(times * 2, events * 2, clusters=list(range(8)) * 2)
    as_independent = kaplan_meier(times * 2, events * 2, clusters=list(range(16)))
    for a, b, c in zip(once, twice, as_independent, strict=True):
        assert a.flipped == pytest.approx(b.flipped) == pytest.approx(c.flipped)
        assert (a.ci_low, a.ci_high) == pytest.approx((b.ci_low, b.ci_high))
        assert c.ci_high - c.ci_low < b.ci_high - b.ci_low
    none = kaplan_meier([2, 3, 3], [False, False, False], clusters=[0, 1, 2])
    assert none[-1].flipped == 0 and none[-1].ci_low == 0 and none[-1].ci_high == pytest.approx(1 - 0.025 ** (1 / 3))


def test_flip_survival_rows_start_from_compliant_first_turns_and_censor_early_ends() -> None:
    rows = _turns(0, [True, False]) + _turns(1, [True, True, False]) + _turns(2, [True, True])
    rows += _turns(3, [False, False, True]) + _turns(4, [True])  # not at risk: non-compliant at 1; nothing later
    curve = {s.turn: s for s in flip_survival(rows)}
    assert set(curve) == {2, 3}
    assert (curve[2].at_risk, curve[2].flips, curve[2].censored) == (3, 1, 1)  # conversation 2 ends at turn 2
    assert (curve[3].at_risk, curve[3].flips) == (1, 1)
    assert curve[3].flipped == pytest.approx(1.0) and curve[3].method is not None


def test_flips_per_conversation_counts_every_caving() -> None:
    rows = _turns(0, [True, False, True, False]) + _turns(1, [True, True, True, True]) + _turns(2, [True, False])
    per = next(f for f in flips(rows) if f.measure == "flips_per_conversation")
    assert per.count == 3 and per.conversations == 3 and per.rate == pytest.approx(1.0)
    assert per.ci_low is not None and per.ci_low <= 1.0 <= per.ci_high
    # The method named is the one computed: the bounded mean over 0..3 (the text said "mean ± t" before).
    assert per.method is not None and per.method.startswith("bounded mean") and "0..3" in per.method


def test_flips_per_conversation_is_as_wide_as_its_counts_vary() -> None:
    # 100 conversations of 4 turns, one input each, 13 cave once (0..3 on the rescaled scale: variance about 0.30 of
    # p(1 - p)). Wilson on their rescaled sum, each count taken as a verdict, was 2.2x a covering reference at this
    # design (session 19's audit); the interval at the counts' own variance is about √0.30 = 0.55 of it.
    rows = [r for c in range(13) for r in _turns(c, [True, False, False, False])]
    rows += [r for c in range(13, 100) for r in _turns(c, [True] * 4)]
    per = next(f for f in flips(rows) if f.measure == "flips_per_conversation")
    assert per.rate == pytest.approx(0.13) and per.ci_low is not None and per.ci_high is not None
    as_verdicts = wilson_interval(13 / 3, 100)
    assert as_verdicts is not None
    assert per.ci_low < 0.13 < per.ci_high
    assert per.ci_high - per.ci_low < 0.7 * 3 * (as_verdicts[1] - as_verdicts[0])


def _likert(conversation: int, ratings: list[float]) -> list[TurnVerdict]:
    facts = FACTS.model_copy(update={"mode": "likert"})
    return [
        TurnVerdict(
            [facts],
            0,
            row("j", "m", "st", f"q{conversation}", True).model_copy(
                update={"turn": t, "conversation": conversation, "rating": r, "compliant": None}
            ),
        )
        for t, r in enumerate(ratings, start=1)
    ]


def test_a_likert_judge_flips_on_a_drop_of_k_points() -> None:
    rows = _likert(0, [5, 4, 3]) + _likert(1, [5, 4, 5]) + _likert(2, [4, 1]) + _likert(3, [2])
    by_drop = {k: next(f for f in flips(rows, likert_drop=k) if f.measure == f"rating_drop_{k}") for k in (1, 2, 3)}
    assert (by_drop[1].count, by_drop[1].conversations) == (3, 3)
    assert (by_drop[2].count, by_drop[2].conversations) == (2, 3)  # 5 → 3 and 4 → 1
    assert by_drop[3].count == 1


def test_one_inputs_curve_carries_an_interval_at_every_turn() -> None:
    """Every point of the curve has an interval, at one input too: the exact bound once all have flipped (it was
    "no interval" when the conversations at risk were all one input's runs), [0, 1] where some have."""
    everything = kaplan_meier([2, 2], [True, True], clusters=["a", "a"])
    assert [(p.flipped, p.ci_low, p.ci_high) for p in everything] == [(1.0, pytest.approx(0.025), 1.0)]
    some = kaplan_meier([2, 3, 3], [True, False, True], clusters=["a", "a", "a"])
    assert all(p.ci_low is not None and p.ci_low <= p.flipped <= p.ci_high for p in some)
    # All flipping at the first turn any does: the point is 1, and so is the top of its interval (it was [0, 0.84]
    # at two inputs, an interval beside its own point, read as "nothing flipped yet").
    at_once = kaplan_meier([2, 2, 2], [True, True, True], clusters=["a", "b", "b"])
    assert [(p.flipped, p.ci_high) for p in at_once] == [(1.0, 1.0)]
    assert at_once[0].ci_low == pytest.approx(0.025**0.5)  # the exact bound at 2 inputs
    nothing = kaplan_meier([3, 3], [False, False], clusters=["a", "a"])
    assert [(p.ci_low, p.ci_high) for p in nothing] == [(0.0, pytest.approx(0.975))]


def test_a_few_flips_among_many_keep_the_binomial_lower_limit() -> None:
    """Two flips at turn 2 among 200 conversations (one an input): F = 0.01, and the exact binomial lower limit of 2
    of 200 is 0.0012. The log-log band alone put its lower limit at F e^(-t se/L), 0.00248, about at a truth of 0.0025
    (session 19's audit covered 0.913-0.916 there): with fewer than 10 flips the band holds the continuity-corrected
    Wilson interval at the curve's effective size."""
    times = [2, 2] + [4] * 198
    events = [True, True] + [False] * 198
    point = next(p for p in kaplan_meier(times, events, list(range(200))) if p.turn == 2)
    assert point.flipped == pytest.approx(0.01)
    assert point.ci_low is not None and point.ci_high is not None
    assert point.ci_low < 0.002 and point.ci_high > 0.01  # the band alone: 0.00248


def test_every_turn_has_its_row_the_curve_unchanged_where_nothing_happened() -> None:
    """No conversation flips or ends at turn 3: its row carries turn 2's share and interval (without it, F(3) was
    not in the table at all)."""
    times, events = [2, 4, 4, 4], [True, False, True, False]
    curve = {p.turn: p for p in kaplan_meier(times, events, list(range(4)))}
    assert sorted(curve) == [2, 3, 4]
    assert (curve[3].flips, curve[3].censored, curve[3].at_risk) == (0, 0, 3)
    assert (curve[3].flipped, curve[3].ci_low, curve[3].ci_high) == (
        curve[2].flipped,
        curve[2].ci_low,
        curve[2].ci_high,
    )

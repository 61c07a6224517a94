"""The judge card's table (issue 44) from its parts: each rate with its interval and the registry's method, the lines
checked (a line without data is unmeasured, never a pass or a failure), and self-preference from the panel."""

from __future__ import annotations

import pytest

from speceval.analysis.reading.card_verdicts import CardItem, CardVerdicts
from speceval.analysis.rendering.card_section import card_rows
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.registry import KAPPA, PAIRED_SCORE, SELF_PREFERENCE, WILSON
from speceval.analysis.tables.card_records import JudgeCardLines, JudgeCardRow
from speceval.analysis.tables.judge_card import TEMPERATURE_ZERO_NOTE, card_lines, judge_card
from speceval.analysis.tables.judge_checks import JudgeAccuracy
from speceval.analysis.tables.judge_quality import LabelTally, Leniency, input_digest
from tests.analysis.test_inputs_section import _data


def _tally() -> LabelTally:
    tally = LabelTally()
    for i in range(40):  # the judge agrees with the person on 30 of 40 labelled answers, 20 more unlabelled
        human = i % 2 == 0
        verdict = human if i < 30 else not human
        tally.add(("s", "j", "m", "default"), verdict, human, f"st{i % 4}", input_digest("s", f"st{i % 4}", f"q{i}"))
    for i in range(40, 60):
        tally.add(("s", "j", "m", "default"), True, None, "st0", input_digest("s", "st0", f"q{i}"))
    return tally


def _lenient(candidate: str, delta: float, same: bool) -> Leniency:
    return Leniency(
        spec="s",
        judge="j",
        candidate=candidate,
        variation="default",
        items=30,
        rate=0.8 + delta,
        mean_rate=0.8,
        delta=delta,
        ci_low=delta - 0.05,
        ci_high=delta + 0.05,
        same_provider=same,
    )


def test_every_rate_of_the_card_with_its_interval_and_the_lines_checked() -> None:
    card = CardVerdicts("s", "j", wordings=2, temperatures={0.0})
    for i in range(20):  # the retest flips 2 of 20; each wording flips the same 4 answers
        card.items.append(CardItem(f"st{i % 2}", f"q{i}", True, i >= 2, [i >= 4, i >= 4]))

    def card_of(lines: JudgeCardLines) -> JudgeCardRow:
        [row] = judge_card(
            [("s", "j")],
            [JudgeAccuracy(spec="s", judge="j", judged=10, correct=9, accuracy=0.9, below_minimum=False)],
            [],
            _tally(),
            [_lenient("gpt-4o-mini-2024-07-18", 0.1, True), _lenient("claude-haiku-4-5-20251001", -0.05, False)],
            [],
            {("s", "j"): card},
            card_lines(lines, None),
        )
        return row

    row = card_of(JudgeCardLines())
    flat = row.model_dump()  # as judge_card.csv's columns
    assert (flat["canary_accuracy"], flat["canary_ci_method"]) == (0.9, WILSON)
    assert row.human_labelled == 40 and flat["human_accuracy"] == pytest.approx(0.75)
    assert flat["human_kappa"] == pytest.approx(0.5) and flat["human_kappa_ci_method"] is not None
    assert flat["human_kappa_ci_method"].startswith(KAPPA.split("(")[0])
    assert flat["retest_agreement"] == pytest.approx(0.9) and row.retest_note == TEMPERATURE_ZERO_NOTE
    assert flat["wording_flip_rate"] == pytest.approx(0.2)
    assert flat["wording_flip_excess"] == pytest.approx(0.1) and flat["wording_excess_ci_method"] == PAIRED_SCORE
    assert flat["self_preference"] == pytest.approx(0.15) and flat["self_preference_ci_method"] == SELF_PREFERENCE
    for measure, prefix in (
        ("canary_accuracy", "canary"),
        ("human_accuracy", "human_accuracy"),
        ("human_kappa", "human_kappa"),
        ("retest_agreement", "retest"),
        ("wording_flip_rate", "wording_flip"),
        ("wording_flip_excess", "wording_excess"),
        ("self_preference", "self_preference"),
    ):
        low, high = flat[f"{prefix}_ci_low"], flat[f"{prefix}_ci_high"]
        assert low <= flat[measure] <= high, measure
    # Lines: canary 0.9 >= 0.8, retest 0.9 >= 0.9, excess 0.1 <= 0.1, kappa 0.5 >= 0.4: passes.
    assert row.passes is True and row.failed_checks == [] and row.unmeasured == []
    strict = card_of(JudgeCardLines(max_wording_excess=0.05, min_retest_agreement=0.95, min_human_kappa=0.6))
    assert strict.passes is False and strict.failed_checks == [
        "retest_agreement 0.900 < min_retest_agreement 0.95",
        "wording_flip_excess 0.100 > max_wording_excess 0.05",
        "human_kappa 0.500 < min_human_kappa 0.6",
    ]


def test_a_line_without_its_measure_is_unmeasured_and_no_line_checks_nothing() -> None:
    accuracy = [JudgeAccuracy(spec="s", judge="j", judged=10, correct=7, accuracy=0.7, below_minimum=True)]
    [row] = judge_card([("s", "j")], accuracy, [], None, [], [], {}, card_lines(JudgeCardLines(), None))
    assert row.passes is False and row.failed_checks == ["canary_accuracy 0.700 < min_canary_accuracy 0.8"]
    assert row.unmeasured == ["retest_agreement", "wording_flip_excess", "human_kappa"]
    [row] = judge_card([("s", "j")], accuracy, [], None, [], [], {}, card_lines(None, None))
    assert row.passes is None and row.failed_checks == []
    [row] = judge_card([("s", "j")], accuracy, [], None, [], [], {}, card_lines(None, 0.6))
    assert row.passes is True  # the top-level min_canary_accuracy alone is the line


def test_an_uninformative_kappa_is_not_held_to_its_line() -> None:
    """At a prevalence where kappa says little (the rarer verdict under a tenth), a judge right on 58 of 60 labels
    scores kappa 0.65 and failed a 0.8 min_human_kappa; now that check is unmeasured, neither a pass nor a failure."""
    tally = LabelTally()
    for i in range(60):  # the person says compliant on 58 of 60; the judge agrees on all but two of them
        human = i >= 2
        verdict = human if i not in (2, 3) else not human
        tally.add(("s", "j", "m", "default"), verdict, human, f"st{i % 4}", input_digest("s", f"st{i % 4}", f"q{i}"))
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, card_lines(JudgeCardLines(min_human_kappa=0.8), None))
    assert row.human_kappa_informative is False and row.human_kappa.value is not None and row.human_kappa.value < 0.8
    assert "human_kappa" in row.unmeasured and not any("human_kappa" in f for f in row.failed_checks)


def test_the_card_row_writes_its_published_columns_and_reads_them_back() -> None:
    """Each measure is one `Estimate` field, written as its own four columns in the published order (a value, then
    `position_compared` where it always stood, then the interval); a written row validates back to the same row."""
    row = JudgeCardRow(
        spec="s",
        judge="j",
        canary=Estimate(value=0.9, ci_low=0.6, ci_high=1.0, ci_method=WILSON),
        position=Estimate(value=0.75, ci_low=0.5, ci_high=0.9, ci_method=WILSON),
        human_kappa=Estimate(value=0.5, ci_low=0.2, ci_high=0.7, ci_method="k"),  # field named as its value column
        position_compared=72,
        passes=None,
    )
    flat = row.model_dump()
    assert list(flat) == JudgeCardRow.flat_columns()
    columns = list(flat)
    at = columns.index("canary_accuracy")
    assert columns[at : at + 4] == ["canary_accuracy", "canary_ci_low", "canary_ci_high", "canary_ci_method"]
    at = columns.index("position_consistency")
    assert columns[at : at + 5] == [
        "position_consistency",
        "position_compared",
        "position_ci_low",
        "position_ci_high",
        "position_ci_method",
    ]
    assert (flat["position_compared"], flat["position_ci_high"], flat["human_kappa"]) == (72, 0.9, 0.5)
    assert (flat["human_accuracy"], flat["human_accuracy_ci_method"]) == (None, None)
    assert JudgeCardRow.model_validate(flat) == row
    assert JudgeCardRow.model_validate_json(row.model_dump_json()) == row


def test_an_entry_no_line_measured_passes_and_the_card_says_nothing_was_measured() -> None:
    """A ranking judge has no canaries, labels or re-sends: every line is unmeasured, so nothing fails it; its
    "passes" cell read a bare "yes" beside a row of "not measured", as if it had been checked."""
    lines = card_lines(None, 0.9)
    accuracy = [JudgeAccuracy(spec="s", judge="judge", judged=10, correct=10, accuracy=1.0, below_minimum=False)]
    checked = judge_card([("s", "ranker"), ("s", "judge")], accuracy, [], None, [], [], {}, lines)
    cells = {row[1]: row[-2] for row in card_rows(_data(judge_card=checked, card_lines=lines))}
    assert cells == {"ranker": "yes (no line measured)", "judge": "yes"}

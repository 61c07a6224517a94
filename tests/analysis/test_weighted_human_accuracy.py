"""The judge card's human accuracy weighed by the label sheet's design: each statement's share of agreement at its
weight N_h/N (the judge's accuracy over the answers it judged), in the card, human_agreement.csv and the gate; a
sheet without a design keeps the sample's unweighted share and says so."""

from __future__ import annotations

import math
from typing import Any, get_origin

import numpy as np
import pytest

from speceval.analysis.rendering.card_section import card_markdown
from speceval.analysis.rendering.data import ReportData
from speceval.analysis.statistics.ppi import clustered_kish_size, design_weighted_share, weighted_mean_of_labels
from speceval.analysis.statistics.registry import method
from speceval.analysis.tables.judge_card import judge_card
from speceval.analysis.tables.judge_quality import UNWEIGHTED_NOTE, LabelTally, human_agreement, input_digest


def test_the_weighted_share_of_a_small_design_is_its_hand_count() -> None:
    # Statement 0: 10 verdicts, 2 labelled, 1 agrees (a_0 = 1/2). Statement 1: 30 verdicts, 4 labelled, all agree
    # (a_1 = 1). Statement 2: 5 verdicts, none labelled: cannot be estimated, left out of N.
    strata = np.repeat([0, 1, 2], [10, 30, 5])
    labelled = np.zeros(45, dtype=bool)
    labelled[[0, 1, 10, 11, 12, 13]] = True
    agree = np.zeros(45, dtype=bool)
    agree[[1, 10, 11, 12, 13]] = True
    clusters = np.arange(45)
    found = design_weighted_share(agree, labelled, clusters, strata)
    assert found.share == pytest.approx((10 * 0.5 + 30 * 1.0) / 40)  # 0.875; the sample's 5/6 = 0.833
    assert (found.statements, found.verdicts, found.unlabelled_statements, found.unlabelled_verdicts) == (2, 40, 1, 5)
    assert found.ci_low is not None and found.ci_high is not None
    # A statement whose labels all agree is not taken as exact: its floor keeps the lower limit off the estimate.
    assert found.ci_low < found.share - 0.1 and found.ci_high <= 1.0
    # Clustered by input: the same labelled answers as one input per statement give no more than their count.
    one_input = design_weighted_share(agree, labelled, strata, strata)
    assert one_input.share == found.share


def _tally(designed: bool) -> LabelTally:
    """Statement big: 40 answers, 4 labelled, the judge right on all; statement small: 4 answers, all 4 labelled,
    the judge wrong on all. An equal sheet: the sample is half right (4/8), the judge's answers 40/44 (0.909)."""
    tally = LabelTally(designed=designed)
    for statement, answers, wrong in (("big", 40, False), ("small", 4, True)):
        for i in range(answers):
            human = i % 2 == 0
            label = human if i < 4 else None
            verdict = (not human) if wrong else human
            tally.add(("s", "j", "m", "default"), int(verdict), label, statement, input_digest("s", statement, str(i)))
    return tally


def _data(**given: Any) -> ReportData:
    empty = {
        name: {} if get_origin(field.annotation) is dict else []
        for name, field in ReportData.model_fields.items()
        if field.is_required()
    }
    return ReportData(**{**empty, **given})


def test_a_design_whose_statements_differ_weighs_the_card_the_csv_and_the_gate() -> None:
    tally = _tally(designed=True)
    [pooled, _] = human_agreement(tally)  # candidate "all", then "m"
    assert (pooled.candidate, pooled.labelled, pooled.agree, pooled.accuracy) == ("all", 8, 4, 0.5)
    assert pooled.weighted_accuracy == pytest.approx(40 / 44)
    assert pooled.weighted_ci_method == method("human_accuracy_weighted") and pooled.weighted_note is None
    assert pooled.weighted_ci_low is not None and pooled.weighted_ci_low < 40 / 44 <= (pooled.weighted_ci_high or 0)
    lines = {"min_human_accuracy": 0.8}
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, lines)
    assert row.human_accuracy.value == pytest.approx(40 / 44) and row.human_accuracy_weighted is True
    assert row.human_accuracy.ci_method == method("human_accuracy_weighted")
    assert (row.human_agree, row.human_labelled) == (4, 8)  # the sample's own k of n, beside it
    assert row.passes is True  # the gate reads the weighted 0.909, not the sample's 0.5
    text = "\n".join(card_markdown(_data(judge_card=[row], card_lines=lines)))
    assert "design-weighted; sample 4/8 agree" in text and "`min_human_accuracy` is held to it" in text


def test_a_sheet_without_a_design_keeps_the_samples_share_and_says_so() -> None:
    tally = _tally(designed=False)
    [pooled, _] = human_agreement(tally)
    assert pooled.accuracy == 0.5 and pooled.weighted_accuracy is None and pooled.weighted_note == UNWEIGHTED_NOTE
    lines = {"min_human_accuracy": 0.8}
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, lines)
    assert row.human_accuracy.value == 0.5 and row.human_accuracy_weighted is False
    assert row.human_accuracy_note == UNWEIGHTED_NOTE and row.human_accuracy.ci_method == pooled.accuracy_ci_method
    assert row.passes is False and row.failed_checks == ["human_accuracy 0.500 < min_human_accuracy 0.8"]
    text = "\n".join(card_markdown(_data(judge_card=[row], card_lines=lines)))
    assert "unweighted: no sheet design; sample 4/8 agree" in text


def test_a_judged_statement_without_a_label_is_left_out_and_the_card_says_so() -> None:
    tally = _tally(designed=True)
    for i in range(6):  # a third statement the judge judged and nobody labelled
        tally.add(("s", "j", "m", "default"), 1, None, "unseen", input_digest("s", "unseen", str(i)))
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, {})
    assert row.human_accuracy.value == pytest.approx(40 / 44)  # over the labelled statements only
    assert row.human_accuracy_note is not None and "judge judged with none (1; 6 verdicts)" in (row.human_accuracy_note)
    assert "cannot be estimated" in "\n".join(card_markdown(_data(judge_card=[row])))


def test_a_candidate_the_sheet_did_not_draw_from_is_not_weighed() -> None:
    """An aimed sheet labels one candidate's answers: another candidate's verdicts are no population of its labels."""
    tally = _tally(designed=True)
    for i in range(400):  # m2's verdicts all in the small statement: counted, they would pull the weight to it
        tally.add(("s", "j", "m2", "default"), 1, None, "small", input_digest("s", "small", f"m2-{i}"))
    [pooled, by_candidate] = human_agreement(tally)
    assert pooled.weighted_accuracy == pytest.approx(40 / 44) and by_candidate.candidate == "m"
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, {})
    assert row.human_accuracy.value == pytest.approx(40 / 44)


def test_a_single_label_keeps_the_samples_share_and_says_why() -> None:
    tally = LabelTally(designed=True)
    tally.add(("s", "j", "m", "default"), 1, True, "st", input_digest("s", "st", "q0"))
    tally.add(("s", "j", "m", "default"), 0, None, "st", input_digest("s", "st", "q1"))
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, {})
    assert row.human_accuracy.value == 1.0 and row.human_accuracy_weighted is False
    assert row.human_accuracy_note == "fewer than 2 labelled answers: the labelled sample's share, unweighted"


def test_a_neyman_sheets_expected_errors_guide_the_interval_as_ppis() -> None:
    """A Neyman sheet's design records each statement's expected error share: the card's interval takes it as PPI's
    prior's covariate (the same call on the same arrays). Statement big: 40 answers, 2 labelled, the judge right on
    both; small: 4 answers, all labelled, wrong on 1 (the rectifier's floor for big then outweighs the score interval
    at the Kish size, so the guide shows in the hull)."""
    tally = LabelTally(designed=True)
    for statement, answers, labels, wrong in (("big", 40, 2, 0), ("small", 4, 4, 1)):
        for i in range(answers):
            label = True if i < labels else None
            verdict = 0 if i < wrong else 1
            tally.add(("s", "j", "m", "default"), verdict, label, statement, input_digest("s", statement, str(i)))
    tally.guides = {("s", "big"): 0.01, ("s", "small"): 0.4}
    [row] = judge_card([("s", "j")], [], [], tally, [], [], {}, {})
    strata = np.repeat([0, 1], [40, 4])  # big, small: the tally's own order of statements
    labelled = np.zeros(44, dtype=bool)
    labelled[np.r_[0:2, 40:44]] = True
    agree = labelled.copy()
    agree[40] = False
    guided = design_weighted_share(agree, labelled, np.arange(44), strata, np.array([0.01, 0.4]))
    plain = design_weighted_share(agree, labelled, np.arange(44), strata)
    assert (row.human_accuracy.ci_low, row.human_accuracy.ci_high) == (guided.ci_low, guided.ci_high)
    assert guided.ci_low != plain.ci_low  # the guide moves it: the test can tell the two apart


def test_the_clustered_kish_size_of_a_small_sheet_is_its_hand_count() -> None:
    # One statement, 3 inputs of 2 labels each, weight 1. Input means 1, 0, 1/2 around the statement's 1/2: between
    # 2·(1/4 + 1/4 + 0)/(3 - 1) = 1/2, within (0 + 0 + 1/2)/(6 - 3) = 1/6, m0 = (6 - 12/6)/2 = 2, so
    # ρ = (1/2 - 1/6)/(1/2 + 1/6) = 1/2 and the size 6² / (3 · (1/2 · 2 + 1/2 · 2²)) = 36/9 = 4 (labels' 6, inputs' 3).
    w, clusters, strata = np.ones(6), np.repeat([0, 1, 2], 2), np.zeros(6, dtype=np.int64)
    assert clustered_kish_size(w, np.array([1.0, 1, 0, 0, 1, 0]), clusters, strata) == pytest.approx(4.0)
    # Inputs that differ less than their own answers cannot count as more than independent labels: ρ at 0.
    assert clustered_kish_size(w, np.array([1.0, 0, 1, 0, 1, 0]), clusters, strata) == pytest.approx(6.0)
    # Every label alike shows nothing of how alike an input's answers are: each input counts once.
    assert clustered_kish_size(w, np.ones(6), clusters, strata) == pytest.approx(3.0)
    # One label an input: the labels' own Kish size, (1 + 1 + 2)² / (1 + 1 + 4).
    assert clustered_kish_size(
        np.array([1.0, 1, 2]), np.array([1.0, 0, 1]), np.arange(3), np.zeros(3, dtype=np.int64)
    ) == (pytest.approx(16 / 6))


def test_alike_answers_of_one_input_count_once_in_the_weighted_shares_interval() -> None:
    # 4 inputs of 3 answers, every answer labelled and agreeing: 4 draws, not 12. The lower limit is Wilson's at 4/4
    # (z = 1.96: (4 + z²/2 - z·√(z²/4)) / (4 + z²) = 0.5101), below the rectifier's (its floor on t(4 - 1)); at the
    # labels' 12 it would be 0.7575 (the audit's clustered sheet covered 0.922 so).
    clusters = np.repeat(np.arange(4), 3)
    found = design_weighted_share(np.ones(12, dtype=bool), np.ones(12, dtype=bool), clusters, np.zeros(12, dtype=int))
    z = 1.959964
    assert found.share == 1.0
    assert found.ci_low == pytest.approx((4 + z * z / 2 - z * math.sqrt(z * z / 4)) / (4 + z * z), abs=1e-5)
    assert found.ci_low == pytest.approx(0.5101, abs=1e-4)


def test_the_rectifiers_t_counts_the_labelled_inputs_not_the_labels() -> None:
    # One statement, 4 inputs of 2 labels, r = -1 where the judge disagrees: rbar = -3/8, the inputs' sums of
    # (r - rbar)/8 are -10/64, 6/64, 6/64, -2/64, so the variance is 4/3 · 176/4096, on t(4 - 1), not t(8 - 1).
    r = np.array([-1.0, -1, 0, 0, 0, 0, -1, 0])
    found = weighted_mean_of_labels(r, np.ones(8, dtype=bool), np.repeat(np.arange(4), 2), np.zeros(8, dtype=int))
    assert found is not None and found[1] is not None
    assert found[0] == pytest.approx(-3 / 8)
    assert found[1] == pytest.approx(3.182446 * math.sqrt(4 / 3 * 176 / 4096))

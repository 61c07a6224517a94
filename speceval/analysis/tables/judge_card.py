"""The judge card (issue 44): one row per judge entry (spec × judge name) gathering every check of the judge, each
rate with its 95% interval and the registry's method, and whether the entry passes the lines it is held to.

* `canary_accuracy`: the spec's own good and bad examples judged right (`judge_checks`); an entry sharing its
  model and mode with another shares its canary verdicts (`canary_shared_from` says whose).
* `human_accuracy`, `human_kappa`: against human labels, on the labelled answers it judged. Where the label sheet's
  design is beside the labels, the accuracy is weighed by it: each statement's share at its weight N_h/N, the
  judge's accuracy over the answers it judged (`judge_quality.pooled_accuracy`), with the sample's k of n beside it
  (`human_agree` of `human_labelled`); without one, the sample's share (Wilson where each input has one labelled
  answer, else clustered by input: `judge_quality.agreement_interval`), and `human_accuracy_note` says so. The
  `min_human_accuracy` line is held to whichever the card shows. Cohen's kappa
  with the agreement table's cluster bootstrap, the human as the second rater). A Likert judge agrees with a label
  by its canaries' rule (`speceval.judging.canaries.likert_agrees`) and has no kappa (`human_kappa_note` says why;
  its `min_human_kappa` line is then listed as unmeasured).
* `retest_agreement`: the card's sample re-sent unchanged; the share whose verdict is the same (clustered by input).
* `wording_flip_rate`: the share of (answer, wording) verdicts that differ from the first verdict; and
  `wording_flip_excess`: per answer, its wording flip share minus its retest flip (0/1), with Tango's paired score
  interval on the answers' differences at their effective size, clustered by input (`paired.score_difference`): what
  the wording moves beyond the judge's own noise.
* `self_preference`: the judge's mean leniency toward candidates of its own provider minus toward the others
  (MOVER of the two means' intervals, candidates independent).
* `position_consistency`: a ranking judge's share of comparisons with the same winner in both orders, over every
  variation and run (Wilson for one run of one pair, else clustered by input).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from speceval.analysis.reading.card_verdicts import CardVerdicts
from speceval.analysis.reading.rows import CanaryRow
from speceval.analysis.statistics.clustered import codes_of, rate_interval
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.paired import score_difference
from speceval.analysis.statistics.registry import PAIRED_SCORE, SELF_PREFERENCE
from speceval.analysis.tables.card_records import JudgeCardLines, JudgeCardRow
from speceval.analysis.tables.judge_checks import JudgeAccuracy
from speceval.analysis.tables.judge_quality import (
    LIKERT_KAPPA_NOTE,
    UNLABELLED,
    LabelTally,
    Leniency,
    TallyGroup,
    kappa_with_people,
    pooled_accuracy,
)
from speceval.analysis.tables.rankings import Consistency
from speceval.defaults import Mode

TEMPERATURE_ZERO_NOTE = (
    "judge at temperature 0: the same request re-sent measures the provider's nondeterminism (batching, "
    "hardware, model updates), not sampling"
)

CHECKS = (
    ("canary", "min_canary_accuracy", "<"),
    ("retest", "min_retest_agreement", "<"),
    ("wording_excess", "max_wording_excess", ">"),
    ("human_kappa", "min_human_kappa", "<"),
    ("human_accuracy", "min_human_accuracy", "<"),
)
"""(the card's measure, the line it is held to, failing when the measure is on this side of the line); a check
names its measure by its column (`canary_accuracy`)."""


def judge_card(
    entries: Iterable[tuple[str, str]],
    accuracy: Sequence[JudgeAccuracy],
    canaries: Sequence[CanaryRow],
    tally: LabelTally | None,
    leniency: Sequence[Leniency],
    consistency: Sequence[Consistency],
    cards: dict[tuple[str, str], CardVerdicts],
    lines: dict[str, float],
) -> list[JudgeCardRow]:
    """One row per (spec, judge) of `entries` (and of any check found), held to `lines` (line name → value; empty:
    nothing is checked and `passes` is None)."""
    keys = set(entries) | {(a.spec, a.judge) for a in accuracy} | set(cards) | {(c.spec, c.judge) for c in consistency}
    shared = {(r.spec, r.judge): r.shared_from for r in canaries if r.shared_from}
    by_accuracy = {(a.spec, a.judge): a for a in accuracy}
    human = _human(tally)
    rows = []
    for spec, judge in sorted(keys):
        row = JudgeCardRow(spec=spec, judge=judge, passes=None)
        found = by_accuracy.get((spec, judge))
        if found is not None and found.judged:
            row.canary_judged, row.canary_shared_from = found.judged, shared.get((spec, judge))
            row.canary = Estimate.wilson(found.correct, found.judged)
        if (spec, judge) in human:
            row = row.model_copy(update=human[(spec, judge)])
        if (spec, judge) in cards:
            row = row.model_copy(update=_retest_and_wording(cards[(spec, judge)]))
        row = row.model_copy(update=self_preference([r for r in leniency if (r.spec, r.judge) == (spec, judge)]))
        row = row.model_copy(update=_position([c for c in consistency if (c.spec, c.judge) == (spec, judge)]))
        rows.append(_checked(row, lines))
    return rows


def _checked(row: JudgeCardRow, lines: dict[str, float]) -> JudgeCardRow:
    if not lines:
        return row
    failed, unmeasured = [], []
    columns = JudgeCardRow.estimate_columns()
    for field, line, side in CHECKS:
        if line not in lines:
            continue
        value, measure = getattr(row, field).value, columns[field].value
        # Kappa where the rarer verdict is under a tenth is uninformative (its covering interval spans most of
        # [-1, 1], and a judge right 97 times in 100 can score near 0): not held to the line, neither pass nor fail.
        if value is None or (measure == "human_kappa" and row.human_kappa_informative is False):
            unmeasured.append(measure)
        elif (value < lines[line]) if side == "<" else (value > lines[line]):
            failed.append(f"{measure} {value:.3f} {side} {line} {lines[line]:g}")
    return row.model_copy(update={"passes": not failed, "failed_checks": failed, "unmeasured": unmeasured})


def card_lines(lines: JudgeCardLines | None, min_canary_accuracy: float | None) -> dict[str, float]:
    """The lines in force: the card's (its four, and `min_human_accuracy` where set), else the top-level
    `min_canary_accuracy` alone, else none."""
    if lines is not None:
        found = lines.model_dump(exclude_none=True)  # an optional line not set is not in force
        if min_canary_accuracy is not None and "min_canary_accuracy" not in lines.model_fields_set:
            found["min_canary_accuracy"] = min_canary_accuracy  # the older key, when the card does not set its own
        return found
    return {"min_canary_accuracy": min_canary_accuracy} if min_canary_accuracy is not None else {}


def _human(tally: LabelTally | None) -> dict[tuple[str, str], dict[str, object]]:
    """Accuracy and Cohen's kappa against the labels per (spec, judge), candidates and variations pooled: the accuracy
    weighed by the label sheet's design where it is known (`pooled_accuracy`), the sample's k of n beside it."""
    if tally is None:
        return {}
    parts: dict[tuple[str, str], list[TallyGroup]] = defaultdict(list)
    pooled: dict[tuple[str, str], list[tuple[str, str, TallyGroup, np.ndarray]]] = defaultdict(list)
    likert: set[tuple[str, str]] = set()
    for (spec, judge, candidate, variation), group in tally.group_arrays():
        labelled = np.flatnonzero(group.labels != UNLABELLED)
        if not len(labelled):
            continue
        parts[(spec, judge)].append(group)
        if group.mode == Mode.LIKERT:
            likert.add((spec, judge))
            continue  # no kappa
        pooled[(spec, judge)].append((candidate, variation, group, labelled))
    found: dict[tuple[str, str], dict[str, object]] = {}
    for key, groups in parts.items():
        agreement = pooled_accuracy(tally, groups)
        assert agreement is not None  # every group here has a label
        accuracy = {
            "human_labelled": agreement.labelled,
            "human_agree": agreement.agree,
            "human_accuracy": agreement.accuracy,
            "human_accuracy_weighted": agreement.weighted,
            "human_accuracy_note": agreement.note,
        }
        if key in likert:
            found[key] = {**accuracy, "human_kappa_note": LIKERT_KAPPA_NOTE}
            continue
        kappa = kappa_with_people(pooled[key])
        found[key] = {
            **accuracy,
            "human_kappa": Estimate(
                value=kappa.kappa, ci_low=kappa.ci_low, ci_high=kappa.ci_high, ci_method=kappa.ci_method
            )
            if kappa
            else Estimate(),
            "human_kappa_informative": kappa.kappa_informative if kappa else None,
        }
    return found


def _retest_and_wording(card: CardVerdicts) -> dict[str, object]:
    found: dict[str, object] = {"wordings": card.wordings}
    if card.temperatures == {0.0}:
        found["retest_note"] = TEMPERATURE_ZERO_NOTE
    retested = [item for item in card.items if item.retest is not None]
    if retested:
        same = [float(item.retest == item.first) for item in retested]
        interval = rate_interval(same, [(i.statement_id, i.input) for i in retested], _strata(retested))
        found.update(retest_items=len(retested), retest=Estimate.of(sum(same) / len(same), interval))
    flips, clusters, per_item, retest_flips, paired = [], [], [], [], []
    for item in card.items:
        worded = [w for w in item.wordings if w is not None]
        flips += [float(w != item.first) for w in worded]
        clusters += [(item.statement_id, item.input)] * len(worded)
        if worded and item.retest is not None:
            per_item.append(sum(w != item.first for w in worded) / len(worded))
            retest_flips.append(float(item.retest != item.first))
            paired.append((item.statement_id, item.input))
    if flips:
        strata = {cluster: cluster[0] for cluster in clusters}
        found["wording_flip"] = Estimate.of(sum(flips) / len(flips), rate_interval(flips, clusters, strata))
    if paired:
        codes, distinct = codes_of(paired)
        stratum_codes, _ = codes_of([key[0] for key in distinct])  # type: ignore[index]
        # An answer's wording flip share and its retest flip are paired, and an input's answers are alike: Tango's
        # score interval on the answers' differences at their effective size, clustered by input. The answer is the
        # unit, not each (answer, wording) pair: a retest flip is one event however many wordings share it, and
        # pairs counted apart let a sample without one read the retest's flips as independent as the wordings'
        # (0.916 at 20 inputs x 2 answers x 3 wordings, flips 0.05 and 0.09).
        difference = score_difference(
            np.asarray(per_item),
            np.asarray(retest_flips),
            codes,
            len(distinct),
            stratum_codes,
        )
        found["wording_excess"] = Estimate(
            value=difference.difference,
            ci_low=difference.ci_low,
            ci_high=difference.ci_high,
            ci_method=PAIRED_SCORE if difference.ci_low is not None else None,
        )
    return found


def _strata(items: Sequence[object]) -> dict[object, object]:
    return {(i.statement_id, i.input): i.statement_id for i in items}  # type: ignore[attr-defined]


def self_preference(rows: Sequence[Leniency]) -> dict[str, object]:
    """The judge's mean leniency toward its own provider's candidates minus toward the others', with the MOVER
    interval of the two means (each mean's half-widths combined as independent candidates'); none unless the
    judge judged candidates of both kinds."""
    own = [r for r in rows if r.same_provider is True and r.ci_low is not None and r.ci_high is not None]
    others = [r for r in rows if r.same_provider is False and r.ci_low is not None and r.ci_high is not None]
    if not own or not others:
        return {}
    (a, a_low, a_high), (b, b_low, b_high) = _mean_interval(own), _mean_interval(others)
    difference = a - b
    low, high = difference - math.hypot(a - a_low, b_high - b), difference + math.hypot(a_high - a, b - b_low)
    return {"self_preference": Estimate.of(difference, (low, high, SELF_PREFERENCE))}


def _mean_interval(rows: Sequence[Leniency]) -> tuple[float, float, float]:
    mean = sum(r.delta for r in rows) / len(rows)
    below = math.sqrt(sum((r.delta - (r.ci_low or 0.0)) ** 2 for r in rows)) / len(rows)
    above = math.sqrt(sum(((r.ci_high or 0.0) - r.delta) ** 2 for r in rows)) / len(rows)
    return mean, mean - below, mean + above


def _position(rows: Sequence[Consistency]) -> dict[str, object]:
    """The judge's row of `judge_position_consistency` (every variation and run pooled, clustered by input: the
    runs of an input are not independent comparisons)."""
    if not rows or not rows[0].compared:
        return {}
    (row,) = rows
    position = Estimate(value=row.rate, ci_low=row.ci_low, ci_high=row.ci_high, ci_method=row.ci_method)
    return {"position": position, "position_compared": row.compared}

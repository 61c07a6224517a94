"""Spec health (issue 38): per spec and statement, whether the statement itself needs work, from the verdicts a report
already folds: do the judges disagree on it, do all candidates fail (or pass) it, does it split the candidates,
can its judges be trusted on it (the spec's own examples), and how lenient each judge is on it.

Every rule behind a flag is written in `RULES` (the docs quote them). One statement's verdicts are laid out as an
answers × judges matrix of codes (an answer: candidate, variation, run, input, output), from which disagreement,
kappa and leniency are read; nothing per verdict but arrays.

Cross-candidate disagreement (`speceval.analysis.tables.candidate_split`) follows the measure of "Stress-testing
model specs" (arXiv 2510.07686): per input, the spread of the candidates' compliance; where candidates split, the
spec may leave the right answer open.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns, grouped
from speceval.analysis.reading.rows import CanaryRow
from speceval.analysis.statistics.clustered import dense_codes, rate_interval_codes
from speceval.analysis.statistics.codes import dense, first_seen
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.paired import mover_difference
from speceval.analysis.statistics.registry import LENIENCY, SPREAD
from speceval.analysis.statistics.spread import spread_interval
from speceval.analysis.statistics.stats import cohen_kappa, fleiss_kappa
from speceval.analysis.tables.candidate_split import StatementShares, associations, split_shares
from speceval.analysis.tables.health_records import (
    FLAGS,
    Health,
    HealthThresholds,
    JudgeOnStatement,
    StatementHealth,
)
from speceval.analysis.tables.judge_quality import LabelTally, agreement_interval
from speceval.analysis.tables.panel import PANEL

# The per-spec agreement's kappa from sums, its bootstrap and its widening by raw agreement: one mechanism.
from speceval.analysis.tables.rates import (
    cohen_expected,
    cohen_of_draws,
    fleiss_of_draws,
    kappa_interval,
    with_agreement,
)
from speceval.defaults import Mode


class _Cell(NamedTuple):
    """One candidate and variation on one statement: every judge's verdicts pooled, clustered by input."""

    candidate: str
    variation: str
    code: int
    rate: float
    ci_low: float | None
    ci_high: float | None
    method: str | None


def statement_health(
    c: VerdictColumns,
    canaries: list[CanaryRow],
    thresholds: HealthThresholds | None = None,
    min_canary_accuracy: float | None = None,
    labels: LabelTally | None = None,
    failed_answers: dict[tuple[str, str], int] | None = None,
) -> Health:
    """The health of every statement with binary verdicts in `c` (the judges' columns: a panel's are skipped),
    ranked: most flags first, then widest disagreement; with human `labels`, each judge's agreement with them on
    each statement. `failed_answers`: per (spec, statement), the candidates' answers no judge saw (their generation
    failed; `generation_failures`), counted in each row's `answers_not_judged`."""
    thresholds = thresholds or HealthThresholds()
    failed = dict(failed_answers or {})
    # The yes/no judges' own verdicts, of any outcome (a panel's are its judges'; a Likert judge's have no health).
    own = c.fact("mode") == c.code_of("mode", Mode.BINARY) if len(c) else np.zeros(0, dtype=bool)
    if PANEL in c.names("judge"):
        own &= c.fact("judge") != c.code_of("judge", PANEL)
    mask = own & c.is_outcome("judged") & (c.compliant != NO_VERDICT)
    canary_groups: dict[tuple[str, str], list[CanaryRow]] = defaultdict(list)
    for row in canaries:
        canary_groups[(row.spec, row.statement_id)].append(row)
    statements, judges, shares = [], [], []
    for (spec, statement), every in grouped(c, np.flatnonzero(own), "spec", "statement_id"):
        not_judged = failed.pop((spec, statement), 0) + _answers_without_verdict(c, every, mask[every])
        rows = every[mask[every]]
        if not len(rows):  # every verdict on it failed (unparsed, errored): a row that says so, below
            failed[(spec, statement)] = not_judged
            continue
        found, per_judge, joint = _one_statement(
            c, spec, statement, rows, canary_groups.pop((spec, statement), []), thresholds, min_canary_accuracy
        )
        statements.append(found.model_copy(update={"answers_not_judged": not_judged}))
        shares.append(StatementShares(spec, found.split_share, found.all_fail_share, found.split_inputs, joint))
        judges += per_judge
    # A statement none of whose answers got a verdict (its generation failed, as when a whole job expires, or every
    # verdict failed) has nothing to read its health from: its row says so instead of leaving it out, and its
    # canaries still rate its judges.
    for (spec, statement), count in sorted(failed.items()):
        found, per_judge = _never_judged(
            spec, statement, count, canary_groups.pop((spec, statement), []), min_canary_accuracy
        )
        statements.append(found)
        judges += per_judge
    statements.sort(key=lambda s: (-s.flag_count, -(s.disagreement or 0.0), s.spec, s.statement_id))
    if labels is not None:
        judges = [_with_labels(j, labels) for j in judges]
    return Health(
        statements=statements,
        judges=judges,
        association=associations(shares),
        thresholds=thresholds,
        min_canary_accuracy=min_canary_accuracy,
    )


def _one_statement(
    c: VerdictColumns,
    spec: str,
    statement: str,
    rows: np.ndarray,
    canaries: list[CanaryRow],
    thresholds: HealthThresholds,
    minimum: float | None,
) -> tuple[StatementHealth, list[JudgeOnStatement], float]:
    """The statement's health, its judges' rows, and the share of its inputs both split and all-fail (for the
    association's noise correction)."""
    judge_codes = c.fact("judge", rows)
    present = np.unique(judge_codes)
    cell = dense(c.fact("model", rows), c.fact("variation", rows))
    answer = dense(cell, c.runs(rows), c.input[rows], c.output[rows])
    clusters = c.cluster()[rows]
    compliant = (c.compliant[rows] == 1).astype(np.int8)
    # answers × judges: 1 compliant, 0 not, -1 no verdict (a judge's last verdict on an answer, as elsewhere).
    matrix = np.full((int(answer.max()) + 1, len(present)), -1, dtype=np.int8)
    matrix[answer, np.searchsorted(present, judge_codes)] = compliant
    answer_cluster = np.zeros(len(matrix), dtype=clusters.dtype)
    answer_cluster[answer] = clusters
    disagreement = _disagreement(matrix, answer_cluster)
    complete = (matrix >= 0).all(axis=1)
    several_judges = len(present) > 1
    kappa = _kappa(matrix[complete], answer_cluster[complete]) if several_judges else {}
    leniency = _leniency(matrix[complete], answer_cluster[complete]) if several_judges else {}
    names = [str(c.names("judge")[code]) for code in present]
    per_judge = [
        _judge_on(spec, statement, judge, canaries, leniency.get(local), int(complete.sum()), minimum)
        for local, judge in enumerate(names)
    ]
    candidates = _candidates(c, rows, cell, compliant, clusters, thresholds)
    joint = float(candidates.pop("split_and_fail_share", 0.0))
    accuracies = [j.canary.value for j in per_judge if j.canary.value is not None]
    unreliable = [j.judge for j in per_judge if j.below_minimum]
    lenient_values = [abs(j.leniency.value) for j in per_judge if j.leniency.value is not None]
    spread_low = candidates.get("spread_ci_low")
    flags = {
        "judges_disagree": disagreement[1] is not None and disagreement[1] > thresholds.disagreement,
        "all_fail": candidates["all_below"],
        "all_pass": candidates["all_above"],
        "judge_unreliable": bool(unreliable),
        "model_dependent": spread_low is not None and spread_low > thresholds.spread,
        "not_judged": False,  # (it has verdicts)
    }
    raised = [name for name in FLAGS if flags[name]]
    health = StatementHealth(
        spec=spec,
        statement_id=statement,
        flags=raised,
        flag_count=len(raised),
        judges=len(present),
        answers_multi_judged=disagreement[3],
        disagreement=disagreement[0],
        disagreement_ci_low=disagreement[1],
        disagreement_ci_high=disagreement[2],
        disagreement_ci_method=disagreement[4],
        **kappa,
        kappa_items=int(complete.sum()) if several_judges else 0,
        **candidates,
        min_canary_accuracy=min(accuracies) if accuracies else None,
        unreliable_judges=unreliable,
        max_abs_leniency=max(lenient_values) if lenient_values else None,
    )
    return health, per_judge, joint


def generation_failures(
    per_statement: Mapping[tuple[str, ...], Mapping[str, int]], binary_judges: set[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """Per (spec, statement), the candidates' answers no judge saw (their generation failed), from the yes/no
    judges' summaries (`SkippedAnswers.per_statement`: spec, judge, candidate, variation, statement). Every judge
    of a candidate counts the same failed answers, so each candidate and variation counts once (its largest)."""
    most: dict[tuple[str, ...], int] = {}
    for (spec, judge, candidate, variation, statement), counts in per_statement.items():
        if (spec, judge) in binary_judges:
            key = (spec, candidate, variation, statement)
            most[key] = max(most.get(key, 0), sum(counts.values()))
    found: dict[tuple[str, str], int] = defaultdict(int)
    for (spec, _, _, statement), count in most.items():
        found[(spec, statement)] += count
    return {key: count for key, count in found.items() if count}


def _answers_without_verdict(c: VerdictColumns, rows: np.ndarray, judged: np.ndarray) -> int:
    """Of the statement's answers a yes/no judge was given (`rows`), those no judge gave a verdict (`judged` marks
    the rows that have one): every judge's verdict on them unparsed or errored."""
    if judged.all():
        return 0
    answer = dense(c.fact("model", rows), c.fact("variation", rows), c.runs(rows), c.input[rows], c.output[rows])
    return len(np.unique(answer)) - len(np.unique(answer[judged]))


def _never_judged(
    spec: str, statement: str, not_judged: int, canaries: list[CanaryRow], minimum: float | None
) -> tuple[StatementHealth, list[JudgeOnStatement]]:
    """The row of a statement none of whose answers has a verdict (flag `not_judged`), and its judges' rows: their
    accuracy on its examples still says whether they can be trusted on it."""
    per_judge = [_judge_on(spec, statement, j, canaries, None, 0, minimum) for j in sorted({r.judge for r in canaries})]
    unreliable = [j.judge for j in per_judge if j.below_minimum]
    accuracies = [j.canary.value for j in per_judge if j.canary.value is not None]
    raised = [name for name in FLAGS if name == "not_judged" or (name == "judge_unreliable" and unreliable)]
    # Every measure that needs verdicts is None (`_NO_VERDICT_FIELDS`), validated as the other rows are.
    health = StatementHealth.model_validate(
        {
            **dict.fromkeys(_NO_VERDICT_FIELDS),
            "spec": spec,
            "statement_id": statement,
            "flags": raised,
            "flag_count": len(raised),
            "judges": 0,
            "answers_multi_judged": 0,
            "kappa_items": 0,
            "candidates": 0,
            "all_below": False,
            "all_above": False,
            "min_canary_accuracy": min(accuracies) if accuracies else None,
            "unreliable_judges": unreliable,
            "split_inputs": 0,
            "answers_not_judged": not_judged,
        }
    )
    return health, per_judge


_NO_VERDICT_FIELDS = tuple(
    name
    for name, field in StatementHealth.model_fields.items()
    if field.is_required() and name.endswith(("_candidate", "_variation", "_rate", "_ci_low", "_ci_high", "_method"))
) + ("disagreement", "spread", "max_abs_leniency")
"""A statement's measures that need verdicts: None where it has none."""


def _with_labels(judge: JudgeOnStatement, labels: LabelTally) -> JudgeOnStatement:
    """The judge's agreement with the human labels of this statement's answers, candidates pooled (accuracy with
    Wilson's interval where each input has one labelled answer, else clustered by input; Cohen's kappa)."""
    found, labelled, inputs = labels.labelled_on(judge.spec, judge.judge, judge.statement_id)
    if not len(found):
        return judge
    agreements = found == labelled
    agree = int(agreements.sum())
    # Kappa with the person as the second rater: the same Cohen's kappa and interval as two judges' on a statement.
    kappa = _kappa(np.stack([found == 1, labelled == 1], axis=1).astype(np.int8), dense_codes(inputs))
    return judge.model_copy(
        update={
            "human_labelled": len(found),
            "human_agree": agree,
            "human_accuracy": Estimate.of(
                agree / len(found), agreement_interval(agreements, inputs, np.zeros(len(inputs), dtype=np.int32))
            ),
            "human_kappa": Estimate(
                value=kappa.get("kappa"),
                ci_low=kappa.get("kappa_ci_low"),
                ci_high=kappa.get("kappa_ci_high"),
                ci_method=kappa.get("kappa_ci_method"),
            ),
            "human_kappa_informative": kappa.get("kappa_informative"),
        }
    )


def _judge_on(
    spec: str,
    statement: str,
    judge: str,
    canaries: list[CanaryRow],
    lenient: tuple[float, float | None, float | None] | None,
    items: int,
    minimum: float | None,
) -> JudgeOnStatement:
    """One judge on the statement: its verdicts on the statement's own examples, and its leniency there."""
    mine = [r for r in canaries if r.judge == judge and r.correct is not None]
    correct = sum(bool(r.correct) for r in mine)
    canary = Estimate.wilson(correct, len(mine))
    return JudgeOnStatement(
        spec=spec,
        statement_id=statement,
        judge=judge,
        canary_judged=len(mine),
        canary_correct=correct,
        canary=canary,
        below_minimum=minimum is not None and canary.value is not None and canary.value < minimum,
        leniency_items=items if lenient else 0,
        leniency=Estimate(
            value=lenient[0],
            ci_low=lenient[1],
            ci_high=lenient[2],
            ci_method=LENIENCY if lenient[1] is not None else None,
        )
        if lenient
        else Estimate(),
    )


def _candidates(
    c: VerdictColumns,
    rows: np.ndarray,
    cell: np.ndarray,
    compliant: np.ndarray,
    clusters: np.ndarray,
    thresholds: HealthThresholds,
) -> dict[str, Any]:
    """The candidates' side of a statement's health: lowest and highest rate, their spread, whether all are below
    or above the thresholds, and how often inputs split them."""
    cells = _cells(c, rows, cell, compliant, clusters)
    lowest = min(cells, key=lambda r: (r.rate, r.candidate, r.variation)) if cells else None
    highest = max(cells, key=lambda r: (r.rate, r.candidate, r.variation)) if cells else None
    # Candidates are models: one model under two variations (two pressure scripts) is one candidate, not two, and
    # the split share (which needs three or more candidates) compares models, each model's variations pooled.
    models = dense_codes(c.fact("model", rows))
    model_count = len({r.candidate for r in cells})
    several = len(cells) >= 2  # rates compared: a model's variations are compared as cells (a pressure script)
    spread = _spread(cell, compliant, clusters, cells, lowest, highest) if lowest and highest and several else None
    split = split_shares(models, compliant, clusters, thresholds.split) if model_count >= 3 else None
    return {
        "candidates": model_count,
        "candidate_cells": len(cells),
        **_side("lowest", lowest),
        **_side("highest", highest),
        "rate_ci_method": lowest.method if lowest else None,
        "all_below": several and all(r.ci_high is not None and r.ci_high < thresholds.fail_below for r in cells),
        "all_above": several and all(r.ci_low is not None and r.ci_low > thresholds.pass_above for r in cells),
        "spread": spread[0] if spread else None,
        "spread_ci_low": spread[1] if spread else None,
        "spread_ci_high": spread[2] if spread else None,
        "spread_ci_method": SPREAD if spread else None,
        **(split or {"split_inputs": 0}),
    }


_Disagreement = tuple[float | None, float | None, float | None, int, str | None]


def _disagreement(matrix: np.ndarray, answer_cluster: np.ndarray) -> _Disagreement:
    """(share, low, high, answers, method) over the answers two or more judges gave a verdict on."""
    verdicts = (matrix >= 0).sum(axis=1)
    compliant = (matrix == 1).sum(axis=1)
    multi = verdicts >= 2
    if not multi.any():
        return None, None, None, 0, None
    differ = ((compliant[multi] > 0) & (compliant[multi] < verdicts[multi])).astype(float)
    interval = rate_interval_codes(differ, dense_codes(answer_cluster[multi]))
    if interval is None:
        return float(differ.mean()), None, None, int(multi.sum()), None
    return float(differ.mean()), interval[0], interval[1], int(multi.sum()), interval[2]


def _kappa(complete: np.ndarray, clusters: np.ndarray) -> dict[str, Any]:
    """Cohen's (two judges) or Fleiss' kappa on the answers every judge judged, with the interval the report's
    per-spec agreement uses (`speceval.analysis.tables.rates`: a cluster bootstrap over inputs, widened to hold the
    kappa at both ends of raw agreement's interval, so perfect agreement on few answers is not [1, 1])."""
    if not len(complete):
        return {}
    ids = first_seen(clusters)
    raters = complete.shape[1]
    if raters == 2:
        first, second = complete[:, 0] == 1, complete[:, 1] == 1
        cells = np.stack([first & second, first & ~second, ~first & second, ~first & ~second], axis=1)
        kappa = cohen_kappa(first.tolist(), second.tolist())
        interval = kappa_interval(ids, cells.astype(float), cohen_of_draws)
        prevalence = float(first.mean() + second.mean()) / 2
        widened = with_agreement(
            interval, kappa, (first == second).astype(float), ids, cohen_expected(cells.sum(axis=0)), prevalence
        )
        return {"kappa": kappa, "kappa_kind": "Cohen", **_prefixed(widened)}
    yes = complete.sum(axis=1).astype(np.int64)
    agreeing = (yes * (yes - 1) + (raters - yes) * (raters - yes - 1)) / (raters * (raters - 1))
    features = np.stack([np.ones(len(yes)), agreeing, yes], axis=1)
    kappa = fleiss_kappa(np.stack([yes, raters - yes], axis=1))
    prevalence = float(yes.sum() / (len(yes) * raters))
    widened = with_agreement(
        kappa_interval(ids, features, lambda t: fleiss_of_draws(t, raters)),
        kappa,
        agreeing.astype(float),
        ids,
        prevalence**2 + (1 - prevalence) ** 2,
        prevalence,
    )
    return {"kappa": kappa, "kappa_kind": "Fleiss", **_prefixed(widened)}


def _prefixed(interval: dict[str, Any]) -> dict[str, Any]:
    # The interval and whether kappa says anything at this prevalence: raw agreement and prevalence themselves are
    # the per-spec agreement table's columns (here disagreement, with its interval, is the number to read instead).
    found = {f"kappa_{key}": value for key, value in interval.items() if key.startswith("ci_")}
    if "kappa_informative" in interval:
        found["kappa_informative"] = interval["kappa_informative"]
    return found


def _leniency(complete: np.ndarray, clusters: np.ndarray) -> dict[int, tuple[float, float | None, float | None]]:
    """Per judge (column): its rate minus the judges' mean rate on the answers every judge judged, with the paired
    interval the report's leniency table uses (`speceval.analysis.tables.judge_quality.leniency`: (K-1)/K of the
    judge against the others' mean, MOVER, clustered by input; never [0, 0] when the judges all agree)."""
    if not len(complete) or complete.shape[1] < 2:
        return {}
    values = complete.astype(float)
    means, count = values.mean(axis=1), values.shape[1]
    others = (values.sum(axis=1, keepdims=True) - values) / (count - 1)
    codes = dense_codes(clusters)
    found = {}
    for column in range(count):
        paired = mover_difference(
            values[:, column], codes, others[:, column], codes, int(codes.max()) + 1, None, scale=(count - 1) / count
        )
        found[column] = (float((values[:, column] - means).mean()), paired.ci_low, paired.ci_high)
    return found


def _side(prefix: str, found: _Cell | None) -> dict[str, Any]:
    return {
        f"{prefix}_candidate": found.candidate if found else None,
        f"{prefix}_variation": found.variation if found else None,
        f"{prefix}_rate": found.rate if found else None,
        f"{prefix}_ci_low": found.ci_low if found else None,
        f"{prefix}_ci_high": found.ci_high if found else None,
    }


def _cells(
    c: VerdictColumns, rows: np.ndarray, cell: np.ndarray, compliant: np.ndarray, clusters: np.ndarray
) -> list[_Cell]:
    """Every candidate and variation's rate on the statement, with its interval."""
    found = []
    models, variations = c.fact("model", rows), c.fact("variation", rows)
    for code in range(int(cell.max()) + 1 if len(cell) else 0):
        members = np.flatnonzero(cell == code)
        values = compliant[members].astype(float)
        interval = rate_interval_codes(values, dense_codes(clusters[members]))
        found.append(
            _Cell(
                str(c.names("model")[models[members[0]]]),
                str(c.names("variation")[variations[members[0]]]),
                code,
                float(values.mean()),
                *(interval if interval else (None, None, None)),
            )
        )
    return found


def _spread(
    cell: np.ndarray, compliant: np.ndarray, clusters: np.ndarray, cells: list[_Cell], low: _Cell, high: _Cell
) -> tuple[float, float | None, float | None] | None:
    """Highest minus lowest candidate's rate on the inputs both answered, with the selection-aware interval over
    every pair of candidates (`spread_interval`: the two were picked on the same data)."""
    members = [cell == c.code for c in cells]
    found = spread_interval(
        [(clusters[m], compliant[m].astype(float)) for m in members],
        next(i for i, c in enumerate(cells) if c.code == low.code),
        next(i for i, c in enumerate(cells) if c.code == high.code),
    )
    return found

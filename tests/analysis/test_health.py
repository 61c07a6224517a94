"""Spec health's pieces on planted verdicts (the acceptance test against the independent servers is
tests/independent/test_health_independent.py): one judge has no disagreement to measure; three judges get Fleiss'
kappa; the cross-candidate split equals a count by hand (over models: variations are compared as cells, not counted as
candidates); the thresholds
move the flags exactly at their rule's line."""

from __future__ import annotations

import hashlib

import pytest

from speceval.analysis.reading.columns import VerdictColumns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.columns import Bounds, Estimate
from speceval.analysis.statistics.stats import fleiss_kappa
from speceval.analysis.tables.health import statement_health
from speceval.analysis.tables.health_records import HealthThresholds, JudgeOnStatement
from speceval.analysis.tables.tension import SHARES, PairCompliance


def row(judge: str, model: str, statement: str, text: str, verdict: bool, variation: str = "default") -> ComplianceRow:
    return ComplianceRow(
        spec="s",
        judge=judge,
        model=model,
        variation=variation,
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=text,
        output=f"{model}:{text}",
        outcome="judged",
        compliant=verdict,
        confidence=None,
        rating=None,
        source="x",
    )


def _bit(*parts: object) -> bool:
    return hashlib.sha256("/".join(map(str, parts)).encode()).digest()[0] % 2 == 0


def test_one_judge_measures_no_disagreement_and_no_kappa():
    rows = [row("j1", m, "st", f"q{i}", _bit(m, i)) for m in ("a", "b") for i in range(10)]
    [health] = statement_health(VerdictColumns.from_rows(rows), []).statements
    assert health.judges == 1 and health.answers_multi_judged == 0 and health.disagreement is None
    assert health.kappa is None and "judges_disagree" not in health.flags


def test_three_judges_get_fleiss_kappa_on_the_answers_all_three_judged():
    rows = [row(j, m, "st", f"q{i}", _bit(j, m, i)) for j in ("j1", "j2", "j3") for m in ("a", "b") for i in range(12)]
    rows = [r for r in rows if not (r.judge == "j3" and r.input == "q0")]  # j3 left one input out
    [health] = statement_health(VerdictColumns.from_rows(rows), []).statements
    import numpy as np

    counts = []
    for m in ("a", "b"):
        for i in range(1, 12):
            yes = sum(_bit(j, m, i) for j in ("j1", "j2", "j3"))
            counts.append([yes, 3 - yes])
    assert health.kappa_kind == "Fleiss" and health.kappa_items == 22
    assert health.kappa == pytest.approx(fleiss_kappa(np.array(counts)))
    differ = sum(0 < c[0] < 3 for c in counts) + sum(_bit("j1", m, 0) != _bit("j2", m, 0) for m in ("a", "b"))
    assert health.answers_multi_judged == 24 and health.disagreement == pytest.approx(differ / 24)


def test_the_cross_candidate_split_is_the_count_by_hand():
    models = ("a", "b", "c", "d")
    verdict = {(m, i): _bit(m, i) or m == "a" for m in models for i in range(20)}
    rows = [row(j, m, "st", f"q{i}", verdict[(m, i)]) for j in ("j1", "j2") for m in models for i in range(20)]
    [health] = statement_health(VerdictColumns.from_rows(rows), [], HealthThresholds(split=0.4)).statements
    splits = fails = 0
    for i in range(20):
        values = [float(verdict[(m, i)]) for m in models]
        mean = sum(values) / 4
        splits += (sum((v - mean) ** 2 for v in values) / 4) ** 0.5 >= 0.4
        fails += all(v < 0.5 for v in values)
    assert health.split_inputs == 20 and health.split_share == pytest.approx(splits / 20)
    assert health.all_fail_share == pytest.approx(fails / 20) == 0.0  # candidate a passes everything
    assert health.split_ci_low is not None and health.split_ci_low <= splits / 20 <= health.split_ci_high


def test_variations_are_compared_as_cells_not_counted_as_candidates_and_thresholds_move_flags_at_their_line():
    rows = [
        row(j, "m", "st", f"q{i}", v == "good" or i % 10 == 0, variation=v)
        for j in ("j1", "j2")
        for v in ("good", "bad")
        for i in range(30)
    ]
    columns = VerdictColumns.from_rows(rows)
    [health] = statement_health(columns, []).statements
    assert (health.lowest_candidate, health.lowest_variation) == ("m", "bad")
    assert (health.highest_candidate, health.highest_variation) == ("m", "good")
    assert health.spread == pytest.approx(0.9) and "model_dependent" in health.flags
    assert health.candidates == 1 and health.candidate_cells == 2  # one model: its variations are not candidates
    low = health.spread_ci_low
    assert low is not None
    above = statement_health(columns, [], HealthThresholds(spread=low + 0.001)).statements[0]
    below = statement_health(columns, [], HealthThresholds(spread=low - 0.001)).statements[0]
    assert "model_dependent" not in above.flags and "model_dependent" in below.flags


def test_the_health_table_keeps_no_array_per_verdict_beyond_the_columns_and_input_clusters(tmp_path):
    """Folded like the others (issue 25): after the health table, the judges' columns hold their own arrays and a
    cluster code per verdict, nothing else of their size."""
    import numpy as np

    from speceval.analysis.reading.fold import fold_verdicts
    from tests.analysis.test_report_golden import fabricate

    verdicts = fold_verdicts([fabricate(tmp_path / "data")])
    columns = verdicts.columns
    assert statement_health(columns, verdicts.canaries).statements
    held = [
        a
        for a in [*vars(columns).values(), *columns._derived.values()]
        if isinstance(a, np.ndarray) and len(a) == len(columns)
    ]
    assert sum(a.nbytes for a in held) / len(columns) <= 48 + 4


def test_two_models_under_two_pressure_scripts_are_two_candidates_and_get_no_split_share():
    """Issue 42: 2 models × 2 variations counted 4 candidates and reported a split share, which needs 3 models."""
    rows = [
        row("j1", m, "st", f"q{i}", _bit(m, v, i), variation=v)
        for m in ("a", "b")
        for v in ("calm", "pushy")
        for i in range(20)
    ]
    [health] = statement_health(VerdictColumns.from_rows(rows), []).statements
    assert health.candidates == 2 and health.candidate_cells == 4
    assert health.split_inputs == 0 and health.split_share is None
    three = rows + [row("j1", "c", "st", f"q{i}", _bit("c", i), variation="calm") for i in range(20)]
    [health] = statement_health(VerdictColumns.from_rows(three), []).statements
    assert health.candidates == 3 and health.split_inputs == 20  # three models: each model's variations pooled


def test_a_statements_kappa_at_high_prevalence_is_flagged_uninformative():
    # Issue 47: two judges agreeing on 19 of 20 answers, 19 compliant verdicts each: kappa's interval spans most of
    # [-1, 1]; the health row says kappa is uninformative (read disagreement and its interval instead).
    rows = [
        row(j, "a", "st", f"q{i}", not (i == 0 and j == "j1") and not (i == 1 and j == "j2"))
        for j in ("j1", "j2")
        for i in range(20)
    ]
    [health] = statement_health(VerdictColumns.from_rows(rows), []).statements
    assert health.kappa_kind == "Cohen" and health.kappa_informative is False
    assert health.disagreement == pytest.approx(0.1) and health.disagreement_ci_high is not None
    balanced = [row(j, "a", "st", f"q{i}", i % 2 == 0) for j in ("j1", "j2") for i in range(20)]
    [health] = statement_health(VerdictColumns.from_rows(balanced), []).statements
    assert health.kappa_informative is True


def test_a_judge_on_a_statement_writes_its_published_columns_and_reads_them_back() -> None:
    """statement_health_judges.csv's columns: each measure's value then its interval (`human_accuracy` with
    `human_ci_*`), and `leniency` given as the estimate under its own value column's name reads back the same."""
    judge = JudgeOnStatement(
        spec="s",
        statement_id="st",
        judge="j",
        canary_judged=2,
        canary_correct=1,
        canary=Estimate(value=0.5, ci_low=0.1, ci_high=0.9, ci_method="Wilson"),
        below_minimum=False,
        leniency_items=3,
        leniency=Estimate(value=-0.1, ci_low=-0.3, ci_high=0.1, ci_method=None),
    )
    flat = judge.model_dump()
    assert list(flat)[5:16] == [
        "canary_accuracy",
        "canary_ci_low",
        "canary_ci_high",
        "canary_ci_method",
        "below_minimum",
        "leniency_items",
        "leniency",
        "leniency_ci_low",
        "leniency_ci_high",
        "leniency_ci_method",
        "human_labelled",
    ]
    assert list(flat)[-9:-5] == ["human_accuracy", "human_ci_low", "human_ci_high", "human_ci_method"]
    assert (flat["leniency"], flat["leniency_ci_low"], flat["canary_ci_method"]) == (-0.1, -0.3, "Wilson")
    assert JudgeOnStatement.model_validate(flat) == judge


def test_a_pair_in_tension_writes_each_share_with_its_limits_and_one_method_column() -> None:
    """statement_health.csv's pair rows: each share's value and limits, then the one method they share; a written
    row reads back as the five shares and dumps to the same columns in the same order."""
    keys = {"spec": "s", "a": "x", "b": "y", "pair_inputs": 4, "units": 8, "inputs": 4}
    shares = {
        f"{name}{part}": value for name in SHARES for part, value in (("", 0.5), ("_ci_low", 0.2), ("_ci_high", 0.7))
    }
    written = keys | shares | {"rate_b": None, "rate_b_ci_low": None, "rate_b_ci_high": None, "ci_method": "m"}
    pair = PairCompliance.model_validate(written)
    assert pair.both == Bounds(value=0.5, ci_low=0.2, ci_high=0.7) and pair.rate_b == Bounds()
    assert list(pair.model_dump().items()) == list(written.items())

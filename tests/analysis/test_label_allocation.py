"""Labels where they pay (issue 44): `speceval label-sheet --allocation proportional|neyman` and how many labels each
statement gets; the design records the allocation and the spreads it used."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from speceval.analysis.tables.label_sampling import allocate, shrunk_spread
from speceval.cli.main import main as speceval_main
from tests.analysis.test_judge_quality import write_compliance

A, B, C = ("s", "a"), ("s", "b"), ("s", "c")


def test_proportional_follows_the_answers_and_every_statement_gets_two() -> None:
    assert allocate({A: 100, B: 300, C: 600}, 50) == {A: 5, B: 15, C: 30}
    assert allocate({A: 1, B: 300, C: 600}, 50) == {A: 1, B: 16, C: 33}  # never more than a statement's answers
    assert sum(allocate({A: 10, B: 10, C: 10}, 100).values()) == 30  # n above the answers: every answer


def test_neyman_puts_the_labels_where_the_judge_errs() -> None:
    spreads = {A: shrunk_spread(40, 100), B: shrunk_spread(5, 100), C: shrunk_spread(5, 100)}
    found = allocate({A: 100, B: 100, C: 100}, 60, spreads)
    assert sum(found.values()) == 60 and found[A] > found[B] >= 2 and abs(found[B] - found[C]) <= 1
    assert shrunk_spread(0, 100) > 0  # a statement that showed no error still gets labels


def test_the_command_draws_by_the_panels_disagreement_and_records_it(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # Two judges of the same answers: they agree on st1 and disagree on every other answer of st0.
    write_compliance(root, "j1", "m", [True] * 40)
    write_compliance(root, "j2", "m", [True] * 40)
    for judge, verdicts in (("j1", [True] * 40), ("j2", [i % 2 == 0 for i in range(40)])):
        path = root / f"judge_{judge}/m/results/st0.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        for record, verdict in zip(document["results"], verdicts, strict=True):
            record["compliant"] = verdict
        path.write_text(json.dumps(document), encoding="utf-8")
    sheet = tmp_path / "labels.csv"
    args = ["label-sheet", str(root), "--n", "20", "--out", str(sheet), "--allocation", "neyman", "--judge", "j1"]
    assert speceval_main(args) == 0
    with sheet.open(newline="", encoding="utf-8") as handle:
        counts = Counter(row["statement_id"] for row in csv.DictReader(handle))
    assert counts["st0"] > counts["st1"] >= 2  # j1 and j2 disagree on st0 only
    design = json.loads((tmp_path / "labels.design.json").read_text(encoding="utf-8"))
    assert design["allocation"] == "neyman" and all(s["spread"] > 0 for s in design["strata"])
    spreads = {s["statement_id"]: s["spread"] for s in design["strata"]}
    assert spreads["st0"] == pytest.approx(shrunk_spread(20, 40, panel=True)) and spreads["st1"] == pytest.approx(
        shrunk_spread(0, 40, panel=True)
    )


def test_the_panels_disagreement_is_taken_as_two_judges_errors() -> None:
    # Two judges each wrong at e independently disagree at d = 2e(1 - e): 10.5 of 1001 answers is d = 0.0105, the
    # judge's own e = (1 - sqrt(1 - 2d))/2 = 0.00528, about half d (taking d for e put sqrt(2) times the spread there).
    d = 10.5 / 1001
    e = (1 - (1 - 2 * d) ** 0.5) / 2
    assert shrunk_spread(10, 1000, panel=True) == pytest.approx((e * (1 - e)) ** 0.5)
    assert shrunk_spread(10, 1000) == pytest.approx((d * (1 - d)) ** 0.5)
    assert shrunk_spread(900, 1000, panel=True) == pytest.approx(0.5)  # the judges differ at chance or worse


@pytest.mark.slow  # 2 x 30 simulated sheets over 20,000 answers: about 10 s
def test_neyman_buys_proportionals_half_width_with_six_tenths_of_the_labels() -> None:
    # Issue 44: the benchmark's design (benchmarks/label_allocation.py), one seed, 30 draws each, the same guided
    # PPI for both: Neyman's allocation with 120 labels is at least as narrow as proportional's with 200, and both
    # cover.
    from benchmarks.label_allocation import _measure

    proportional = _measure(0, 200, False, 30)
    neyman = _measure(1000, 120, True, 30)
    assert neyman[0] <= proportional[0]
    assert neyman[1] >= 0.9 and proportional[1] >= 0.9


def test_a_guided_prior_takes_each_clean_statement_near_its_own_guess_and_an_unguessed_error_by_intercept() -> None:
    # Issue 44: one statement with 12 of 27 labels off where the panel expects 0.45, 19 with 4 clean labels each
    # where it expects 0.005: the prior's mean is fitted through the origin (a < 0), b = (12 + 1/2)/sum n_h g_h, and
    # the labels fit it (no excess): each clean statement takes b * 0.005, near 0.005, not the statements' average.
    import numpy as np

    from speceval.analysis.statistics.ppi import _guided_rates

    labels = np.array([27.0] + [4.0] * 19)
    guess = np.array([0.45] + [0.005] * 19)
    found = _guided_rates(np.array([12.0] + [0.0] * 19), labels, guess)
    b = 12.5 / float((labels * guess).sum())
    assert np.allclose(found[1:], b * 0.005) and 0.004 < found[1] < 0.006
    # The panel blind to the clean statements' errors: 8 of their 76 labels off. The intercept takes them: a clean
    # statement's rate is near the 0.1 its labels show, not the 0.005 the panel expects.
    blind = _guided_rates(np.array([12.0] + [1.0] * 8 + [0.0] * 11), labels, guess)
    assert blind[-1] > 0.05


def test_neyman_without_a_pilot_or_a_second_judge_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_compliance(root, "j1", "m", [True, False] * 10)
    args = ["label-sheet", str(root), "--n", "5", "--out", str(tmp_path / "x.csv"), "--allocation", "neyman"]
    assert speceval_main(args) == 2 and not (tmp_path / "x.csv").exists()


def test_the_design_records_neymans_spreads_and_the_reports_ppi_weighs_and_reads_them(tmp_path: Path) -> None:
    # Issue 44: a Neyman sheet's design records the allocation and each statement's spread; the report's PPI weighs
    # each label N_h/n_h by the design's draw and takes the spreads back as its prior's covariate (the error share
    # e with sqrt(e(1 - e)) = S_h), so the interval is the one `stratified_ppi` gives with that guess.
    import numpy as np

    from speceval.analysis.statistics.ppi import stratified_ppi
    from speceval.analysis.tables.label_design import spread_error
    from speceval.analysis.tables.labelled import labelled_tally
    from speceval.analysis.tables.ppi_table import ppi_rates

    root = tmp_path / "runs"
    write_compliance(root, "j1", "m", [True] * 40)
    write_compliance(root, "j2", "m", [True] * 40)
    path = root / "judge_j2/m/results/st0.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    for i, record in enumerate(document["results"]):
        record["compliant"] = i % 3 != 0  # the judges differ on a third of st0's answers, on none of st1's
    path.write_text(json.dumps(document), encoding="utf-8")
    sheet = tmp_path / "labels.csv"
    args = ["label-sheet", str(root), "--n", "16", "--out", str(sheet), "--allocation", "neyman", "--judge", "j1"]
    assert speceval_main(args) == 0
    with sheet.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for i, row in enumerate(rows):  # people fail every other st0 answer j1 passed; st1's all pass
        row["human_compliant"] = "no" if row["statement_id"] == "st0" and i % 2 == 0 else "yes"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    design = json.loads((tmp_path / "labels.design.json").read_text(encoding="utf-8"))
    assert design["allocation"] == "neyman"
    drawn = {s["statement_id"]: (s["answers"], s["drawn"], s["spread"]) for s in design["strata"]}
    assert drawn["st0"][1] > drawn["st1"][1] >= 2 and sum(d for _, d, _ in drawn.values()) == 16

    tally = labelled_tally([root], sheet)
    [(key, group)] = [(key, group) for key, group in tally.group_arrays() if key[1] == "j1"]
    statements = {code: name for (_, name), code in tally.statements.items()}
    order = [statements[code] for code in sorted(set(np.frombuffer(tally.groups[key][3], dtype=np.int32)))]
    assert group.guess is not None
    assert list(group.guess) == pytest.approx([spread_error(drawn[name][2]) for name in order])
    [found] = [r for r in ppi_rates(tally) if r.judge == "j1"]
    # Each statement's labels at N_h/n_h: j1 passes everything, so the rate is 1 + sum_h (N_h/N) mean_h(y - 1).
    off = Counter(r["statement_id"] for r in rows if r["human_compliant"] == "no")
    by_hand = 1 + sum(answers / 80 * -off[name] / n for name, (answers, n, _) in drawn.items())
    assert found.ppi_rate == pytest.approx(by_hand)
    f, y = group.verdicts.astype(float), group.labels.astype(float)
    labelled = group.labels >= 0
    guided = stratified_ppi(f, y, labelled, group.clusters, group.strata, group.guess)
    assert (found.ci_low, found.ci_high) == pytest.approx((guided.ci_low, guided.ci_high))
    plain = stratified_ppi(f, y, labelled, group.clusters, group.strata)
    assert plain.ci_low != pytest.approx(guided.ci_low)  # the guess changes the interval: the check has teeth


def test_a_guided_prior_with_one_guess_for_every_statement_pools_them() -> None:
    # One statement, or every statement the same guess: no slope to fit; the statements' pooled rate, Jeffreys'
    # (K + 1/2)/n (the through-origin fit with half a disagreement added).
    import numpy as np

    from speceval.analysis.statistics.ppi import _guided_rates

    assert np.allclose(_guided_rates(np.array([1.0]), np.array([10.0]), np.array([0.02])), 1.5 / 10)
    found = _guided_rates(np.array([0.0, 1.0, 0.0]), np.array([5.0, 5.0, 5.0]), np.full(3, 0.1))
    assert np.allclose(found, 1.5 / 15)

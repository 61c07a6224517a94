"""PPI by the label sheet's design (issue 34): the sheet records how it drew, the stratified PPI covers on the
sheet's own draws with unequal statements, stays in [0, 1] and inside its interval, and the Rogan–Gladen rate
carries the labels' uncertainty or says why it is undefined."""

from __future__ import annotations

import json

import numpy as np
import pytest

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.ppi import UNDEFINED_NO_NEGATIVE, rogan_gladen, stratified_ppi
from speceval.analysis.tables.human_labels import item_id, label_sheet
from speceval.analysis.tables.label_design import label_design
from speceval.analysis.tables.ppi_table import ppi_rates


def row(statement: str, index: int, run: int, compliant: bool, variation: str = "default") -> ComplianceRow:
    return ComplianceRow(
        spec="s",
        judge="j",
        model="m",
        variation=variation,
        run=run,
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=f"{statement} q{index}",
        output=f"{statement} a{index} r{run}",
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="sim",
    )


# Statements of 10, 40 and 150 answers; the truth falls with size and the judge's false-positive rate rises with it,
# so a uniform reading of the sheet's labels (as many from the small statement as from the large) is biased.
SIZES, TRUTH, FALSE_POSITIVE = (10, 40, 150), (0.9, 0.8, 0.7), (0.05, 0.2, 0.4)
PLANTED = sum(n * t for n, t in zip(SIZES, TRUTH, strict=True)) / sum(SIZES)


def draw_rows(rng: np.random.Generator) -> tuple[list[ComplianceRow], dict[str, bool]]:
    rows, truth = [], {}
    for h, (size, rate, false_positive) in enumerate(zip(SIZES, TRUTH, FALSE_POSITIVE, strict=True)):
        for i in range(size):
            human = bool(rng.random() < rate)
            verdict = bool(rng.random() < 0.95) if human else bool(rng.random() < false_positive)
            found = row(f"st{h}", i, 1, verdict)
            rows.append(found)
            truth[item_id(found)] = human
    return rows, truth


@pytest.mark.slow  # 200 simulated label sheets: 6 s each
@pytest.mark.parametrize("labels", [30, 60])
def test_stratified_ppi_covers_on_the_label_sheets_own_draw_with_unequal_statements(labels):
    rng = np.random.default_rng(labels)
    hits, draws, estimates = 0, 200, []
    for draw in range(draws):
        rows, truth = draw_rows(rng)
        sheet = label_sheet(rows, labels, seed=draw)
        [found] = ppi_rates(rows, {record["item"]: truth[record["item"]] for record in sheet})
        assert found.ppi_rate is not None and found.ci_low is not None and found.ci_high is not None
        assert 0.0 <= found.ci_low <= found.ppi_rate <= found.ci_high <= 1.0
        hits += found.ci_low <= PLANTED <= found.ci_high
        estimates.append(found.ppi_rate)
    # Classic PPI covered 0.64-0.73 on such draws in the study; 200 draws: MC SE about 0.015 at 0.95.
    assert hits / draws >= 0.93
    # Unbiased by the design: labels read as a uniform sample (as many from 10 answers as from 150) are off by
    # +0.047 here; the mean of 200 estimates has an SE of about 0.007.
    assert abs(float(np.mean(estimates)) - PLANTED) < 0.02


def test_the_label_sheet_records_its_design(tmp_path):
    from speceval.cli.main import main as speceval_main
    from tests.analysis.test_judge_quality import write_compliance

    root = tmp_path / "runs"
    write_compliance(root, "j", "m1", [True, False, True] * 10)
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(root), "--n", "12", "--seed", "3", "--out", str(sheet)]) == 0
    design = json.loads((tmp_path / "labels.design.json").read_text(encoding="utf-8"))
    assert design["seed"] == 3 and design["requested"] == 12 and design["schema_version"] == 2
    assert sum(s["drawn"] for s in design["strata"]) == 12
    assert all(0 < s["drawn"] <= s["answers"] for s in design["strata"])


def test_the_design_counts_each_statements_answers_and_draws():
    rows, _ = draw_rows(np.random.default_rng(0))
    sheet = label_sheet(rows, 30, seed=1)
    design = label_design(rows, sheet, 30, 1)
    assert [(s.statement_id, s.answers, s.drawn) for s in design.strata] == [
        ("st0", 10, 10),
        ("st1", 40, 10),
        ("st2", 150, 10),
    ]


def test_the_design_counts_only_answers_a_label_can_be_drawn_from():
    # A categorical judge's answers are never on a sheet: counting them in N_h would weigh the labels wrongly.
    rows, _ = draw_rows(np.random.default_rng(0))
    categorical = [
        r.model_copy(
            update={
                "statement_id": "st9",
                "mode": "categories",
                "compliant": None,
                "category": "helps",
                "input": f"q9 {i}",
                "output": f"a9 {i}",
            }
        )
        for i, r in enumerate(rows[:20])
    ]
    sheet = label_sheet(rows + categorical, 30, seed=1)
    design = label_design(rows + categorical, sheet, 30, 1)
    assert [s.statement_id for s in design.strata] == ["st0", "st1", "st2"]


def test_an_estimate_past_one_is_clipped_and_stays_inside_its_interval():
    # The judge says non-compliant where every label says compliant: the raw PPI estimate is far above 1.
    f = np.array([1.0] * 90 + [0.0] * 10)
    y = np.where(np.arange(100) >= 90, 1.0, 0.0) + np.where(np.arange(100) < 90, 1.0, 0.0)
    labelled = np.arange(100) >= 80
    found = stratified_ppi(f, y, labelled, np.arange(100), np.zeros(100, dtype=np.int64))
    assert found.rate == 1.0 and found.ci_low is not None and found.ci_high == 1.0 and found.ci_low <= 1.0


def test_ppi_is_per_variation_and_clustered_by_input():
    rows = [
        row("st0", i, run, (i + run) % 4 != 0, variation)
        for variation in ("v1", "v2")
        for i in range(20)
        for run in (1, 2, 3)
    ]
    labels = {item_id(r): r.compliant for r in rows if r.run == 1 and r.input.endswith(("1", "3", "5", "7"))}
    found = ppi_rates(rows, labels)  # type: ignore[arg-type]
    assert [(r.variation, r.labelled, r.unlabelled) for r in found] == [("v1", 8, 52), ("v2", 8, 52)]


def test_rogan_gladen_by_hand_and_undefined_without_a_negative_label():
    # 100 verdicts, judge rate 0.6; labels: sensitivity 8/10, specificity 8/10 -> (0.6 + 0.8 - 1)/(0.6) = 2/3.
    f = np.array([1.0] * 60 + [0.0] * 40)
    labelled = np.zeros(100, dtype=bool)
    y = np.zeros(100)
    # labelled positives: 8 judged compliant, 2 not; labelled negatives: 2 judged compliant, 8 not.
    for index, label in [
        *((i, 1.0) for i in range(8)),
        (70, 1.0),
        (71, 1.0),
        (8, 0.0),
        (9, 0.0),
        *((i, 0.0) for i in range(60, 68)),
    ]:
        labelled[index], y[index] = True, label
    found = rogan_gladen(f, y, labelled, np.arange(100), np.zeros(100, dtype=np.int64), draws=200)
    assert found.rate == pytest.approx(2 / 3)
    assert found.ci_low is not None and found.ci_high is not None and found.ci_low < 2 / 3 < found.ci_high
    only_positive = rogan_gladen(f, np.ones(100), labelled, np.arange(100), np.zeros(100, dtype=np.int64))
    assert only_positive.rate is None and only_positive.note == UNDEFINED_NO_NEGATIVE


@pytest.mark.slow  # 150 simulated label sheets with a bootstrap each: 4 s
def test_rogan_gladen_covers_with_30_labels_on_unequal_statements():
    rng = np.random.default_rng(5)
    hits = defined = 0
    for draw in range(150):
        rows, truth = draw_rows(rng)
        sheet = label_sheet(rows, 30, seed=draw)
        [found] = ppi_rates(rows, {record["item"]: truth[record["item"]] for record in sheet})
        if found.bias_corrected_low is None or found.bias_corrected_high is None:
            continue
        defined += 1
        hits += found.bias_corrected_low <= PLANTED <= found.bias_corrected_high
    assert defined > 100 and hits / defined >= 0.93


def test_labels_that_show_no_judge_error_take_the_jeffreys_rate_of_disagreement() -> None:
    # Issue 47: 20 labels that all agree with the judge do not make the rectifier exact; its variance is that of a
    # disagreement at Jeffreys' Bayes rate 0.5/21, over 20 labels (the floor before, 1/21 per label, was about
    # twice that and made PPI 1.2-2.6x as wide as a covering reference).
    import math

    import numpy as np

    from speceval.analysis.statistics.clustered import rate_interval_codes, t975
    from speceval.analysis.statistics.ppi import stratified_ppi

    f = np.array([1.0] * 90 + [0.0] * 10)
    labelled = np.zeros(100, dtype=bool)
    labelled[::5] = True
    clusters, strata = np.arange(100), np.zeros(100, dtype=np.int64)
    found = stratified_ppi(f, f.copy(), labelled, clusters, strata)
    rate = 0.5 / 21
    half = t975(19) * math.sqrt(rate * (1 - rate) / 20)
    low, high, _ = rate_interval_codes(f, clusters, np.zeros(100, dtype=np.int64))
    assert found.ci_low is not None and found.ci_high is not None
    assert math.isclose(found.ci_low, 0.9 - math.sqrt((0.9 - low) ** 2 + half**2), rel_tol=1e-9)
    assert math.isclose(found.ci_high, min(1.0, 0.9 + math.sqrt((high - 0.9) ** 2 + half**2)), rel_tol=1e-9)

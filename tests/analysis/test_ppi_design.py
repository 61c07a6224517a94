"""PPI by the label sheet's design (issue 34): the sheet records how it drew, the stratified PPI covers on the
sheet's own draws with unequal statements, stays in [0, 1] and inside its interval, and the Rogan–Gladen rate
carries the labels' uncertainty or says why it is undefined."""

from __future__ import annotations

import json

import numpy as np
import pytest

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.ppi import Corrected, stratified_ppi
from speceval.analysis.statistics.rogan_gladen import rogan_gladen
from speceval.analysis.tables.human_labels import item_id, label_sheet
from speceval.analysis.tables.judge_quality import UNLABELLED, LabelTally
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


def sheet_ppi(rows: list[ComplianceRow], labels: dict[str, bool]) -> Corrected:
    """`ppi_rates`' PPI rate and interval of the one group, from the same tally, the same call and so the same
    floats (`test_the_ppi_of_a_sheet_is_ppi_rates_own`), without its bias-corrected rate's posterior: 80% of the
    coverage test's CPU went to that second estimate, which the test does not read."""
    [(_, group)] = LabelTally.of_rows(rows, labels).group_arrays()
    labelled = group.labels != UNLABELLED
    f, y = group.verdicts.astype(float), group.labels.astype(float)
    return stratified_ppi(f, y, labelled, group.clusters, group.strata, group.guess)


def test_the_ppi_of_a_sheet_is_ppi_rates_own() -> None:
    rows, truth = draw_rows(np.random.default_rng(1))
    labels = {record["item"]: truth[record["item"]] for record in label_sheet(rows, 30, seed=1)}
    [whole] = ppi_rates(rows, labels)
    found = sheet_ppi(rows, labels)
    assert (found.rate, found.ci_low, found.ci_high) == (whole.ppi_rate, whole.ci_low, whole.ci_high)
    assert found.rate is not None and found.ci_low is not None  # a defined rate, not two Nones compared


@pytest.mark.slow  # 200 simulated label sheets: 6 s each
@pytest.mark.parametrize("labels", [30, 60])
def test_stratified_ppi_covers_on_the_label_sheets_own_draw_with_unequal_statements(labels):
    rng = np.random.default_rng(labels)
    hits, draws, estimates = 0, 200, []
    for draw in range(draws):
        rows, truth = draw_rows(rng)
        sheet = label_sheet(rows, labels, seed=draw)
        found = sheet_ppi(rows, {record["item"]: truth[record["item"]] for record in sheet})
        assert found.rate is not None and found.ci_low is not None and found.ci_high is not None
        assert 0.0 <= found.ci_low <= found.rate <= found.ci_high <= 1.0
        hits += found.ci_low <= PLANTED <= found.ci_high
        estimates.append(found.rate)
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


def test_rogan_gladen_by_hand_and_defined_without_a_negative_label():
    # 100 verdicts, judge rate 0.6; labels: sensitivity 8/10, specificity 8/10, each one agreement and one
    # disagreement further (Agresti–Coull; one label weighs 100/20 = 5 verdicts' worth, so 40 + 5 of 50 + 10):
    # 0.75, 0.75 -> (0.6 + 0.75 - 1)/(0.5) = 0.7.
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
    assert found.rate == pytest.approx(0.7)
    assert found.ci_low is not None and found.ci_high is not None and found.ci_low < 0.7 < found.ci_high
    # Issue 47: no label says non-compliant: the specificity is taken at 1/2 (no agreement, no disagreement, one of
    # each added) and the sensitivity, 10 of 12 labels judged compliant, at (10 + 1)/(12 + 2): 0.1/(11/14 - 0.5).
    positives = np.zeros(100, dtype=bool)
    positives[[*range(10), 70, 71]] = True
    only_positive = rogan_gladen(f, np.ones(100), positives, np.arange(100), np.zeros(100, dtype=np.int64))
    assert only_positive.rate == pytest.approx(0.1 / (11 / 14 - 0.5))
    assert only_positive.ci_low is not None and only_positive.ci_high is not None
    assert only_positive.ci_low <= only_positive.rate <= only_positive.ci_high


@pytest.mark.slow  # 200 sheets with a posterior each
def test_rogan_gladen_is_defined_and_covers_at_a_rate_of_097_with_20_labels() -> None:
    # One statement of 100 answers at a 0.97 rate, a judge that passes 30% of the non-compliant ones and fails 5% of
    # the compliant ones, 20 labels: most sheets hold no non-compliant label (undefined in 189 of 300 draws before).
    rng = np.random.default_rng(11)
    hits = defined = 0
    for _ in range(200):
        y = rng.random(100) < 0.97
        f = np.where(y, rng.random(100) < 0.95, rng.random(100) < 0.3).astype(float)
        labelled = np.zeros(100, dtype=bool)
        labelled[rng.choice(100, 20, replace=False)] = True
        found = rogan_gladen(f, y.astype(float), labelled, np.arange(100), np.zeros(100, dtype=np.int64), draws=200)
        if found.ci_low is None or found.ci_high is None:
            continue
        defined += 1
        hits += found.ci_low <= 0.97 <= found.ci_high
    assert defined == 200 and hits / defined >= 0.93


@pytest.mark.slow  # 150 simulated label sheets
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


def _rectifier_half(found_low: float, p: float, f: np.ndarray, clusters: np.ndarray) -> float:
    """The rectifier's half-width inside a PPI interval's lower side (MOVER: the two half-widths in quadrature)."""
    from speceval.analysis.statistics.clustered import rate_interval_codes

    low, _, _ = rate_interval_codes(f, clusters, np.zeros(len(clusters), dtype=np.int64))
    return float(np.sqrt((p - found_low) ** 2 - (p - low) ** 2))


def test_statements_whose_labels_all_agree_share_the_pooled_rate_not_each_its_own() -> None:
    # Issue 47: 20 statements of 50 answers, 5 labels each, every label agreeing with the judge. The statements show
    # no spread of the judge's errors beyond noise, so each takes the pooled rate (0 + 1/2)/(100 + 1), not
    # Jeffreys' 0.5/6 of its own five labels (which made this interval 1.4x as wide).
    from speceval.analysis.statistics.clustered import t975

    strata = np.repeat(np.arange(20), 50)
    f = np.ones(1000)
    f[::25] = 0.0
    labelled = np.zeros(1000, dtype=bool)
    for h in range(20):
        labelled[h * 50 + 1 : h * 50 + 6] = True
    clusters = np.arange(1000)
    found = stratified_ppi(f, f.copy(), labelled, clusters, strata)
    rate = 0.5 / 101
    expected = t975(100 - 20) * np.sqrt(20 * (1 / 20) ** 2 * rate * (1 - rate) / 5)
    assert found.ci_low is not None
    assert np.isclose(_rectifier_half(found.ci_low, float(f.mean()), f, clusters), expected, rtol=1e-6)


def test_one_statement_that_errs_often_leaves_the_clean_ones_near_the_panels_rate() -> None:
    # Empirical Bayes by hand: 9 statements with 0 of 10 labels off, one with 5 of 10 (equal n_h, so Kleinman's
    # weights are equal whatever ρ). x̄ = 0.05; c_h = 10 - 100/100 = 9; spread Σ 10 (x_h - 0.05)² = 2.25; noise
    # x̄(1 - x̄) Σ c_h/n_h = 0.0475 · 9; τ² = (2.25 - 0.4275)/(10 · 9 · 0.9) = 0.0225; ρ = τ²/0.0475; m = 1/ρ - 1.
    from speceval.analysis.statistics.ppi import _shrunk_rates

    wrong, labels = np.array([0.0] * 9 + [5.0]), np.full(10, 10.0)
    rho = 0.0225 / 0.0475
    strength = 1 / rho - 1
    found = _shrunk_rates(wrong, labels)
    assert np.allclose(found[:9], strength * 0.05 / (10 + strength))
    assert np.isclose(found[9], (5 + strength * 0.05) / (10 + strength))
    assert found[0] < 0.5 / 11  # below each clean statement's own Jeffreys rate (the floor before)


def test_kleinmans_weights_keep_a_heavily_labelled_statement_from_lending_its_rate() -> None:
    # Neyman's allocation puts 40 labels where the judge errs (18 off) and 4 on each of 10 clean statements: the
    # prior's mean is near the statements' average rate (0.45/11), not the pooled 18/80.
    from speceval.analysis.statistics.ppi import _shrunk_rates

    found = _shrunk_rates(np.array([18.0] + [0.0] * 10), np.array([40.0] + [4.0] * 10))
    assert found[1] < 0.025


def test_many_small_statements_cover_at_a_rate_near_one_and_stay_near_the_labels_only_width() -> None:
    # 20 statements x 50 answers at a 0.97 rate, 5 labels each, a judge wrong on 1% of compliant answers and 30% of
    # the others: coverage >= 0.93 over 300 draws and the mean width within 1.5x the labels-only stratified Wilson
    # interval (which covers here). The floor before was 0.090 wide, 1.23x that reference; now about 0.066.
    from speceval.analysis.statistics.stats import wilson_interval

    rng = np.random.default_rng(3)
    strata = np.repeat(np.arange(20), 50)
    hits, widths, reference = 0, [], []
    for _ in range(300):
        y = rng.random(1000) < 0.97
        f = np.where(y, rng.random(1000) > 0.01, rng.random(1000) < 0.3).astype(float)
        labelled = np.zeros(1000, dtype=bool)
        for h in range(20):
            labelled[rng.choice(np.arange(h * 50, h * 50 + 50), 5, replace=False)] = True
        found = stratified_ppi(f, y.astype(float), labelled, np.arange(1000), strata)
        assert found.ci_low is not None and found.ci_high is not None
        hits += found.ci_low <= 0.97 <= found.ci_high
        widths.append(found.ci_high - found.ci_low)
        bounds = wilson_interval(float(y[labelled].sum()), 100, continuity=False)
        reference.append(bounds[1] - bounds[0])
    assert hits / 300 >= 0.93
    assert np.mean(widths) <= 1.5 * np.mean(reference)
    assert np.mean(widths) <= 0.075


def test_a_spread_barely_beyond_noise_pools_the_statements_rather_than_dividing_by_zero() -> None:
    # 2/2, 1/1, 1/3, 2/3 off: the spread beyond binomial noise is ~3e-17 (rounding), ρ ~ 0: the prior's strength is
    # then unbounded and every statement takes the mean 6/9 (this raised ZeroDivisionError in the coverage matrix).
    from speceval.analysis.statistics.ppi import _shrunk_rates

    found = _shrunk_rates(np.array([2.0, 1.0, 1.0, 2.0]), np.array([2.0, 1.0, 3.0, 3.0]))
    assert np.allclose(found, 6 / 9)

"""Every interval formula against a case computed by hand, the panel verdict's rules, and the repeated-run
invariances the clustered statistics promise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speceval.analysis.reading.rows import ComplianceRow, RankingRow
from speceval.analysis.statistics.clustered import (
    WILSON,
    bootstrap_percentiles,
    clustered_mean,
    mean_interval,
    rate_interval,
    t975,
)
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.stats import Z95, wilson_interval
from speceval.analysis.tables.panel import PANEL, panel_rows
from speceval.analysis.tables.rankings import position_consistency, strengths, win_rates
from speceval.analysis.tables.variations import paired_comparisons, variation_statistics


def test_t_quantiles_match_the_tables():
    assert t975(1) == pytest.approx(12.7062, abs=1e-4) and t975(30) == pytest.approx(2.0423, abs=1e-4)
    # Beyond the table, the Cornish-Fisher expansion: t(40) = 2.02108, t(100) = 1.98397.
    assert t975(40) == pytest.approx(2.02108, abs=1e-4) and t975(100) == pytest.approx(1.98397, abs=1e-4)


def test_cluster_robust_se_by_hand():
    # y = 1,0 | 1,1 in clusters a | b: mean 3/4; residual sums -1/2 and 1/2; SE² = 2/1 · (1/4 + 1/4) / 4² = 1/16.
    estimate = clustered_mean([1, 0, 1, 1], ["a", "a", "b", "b"])
    assert estimate is not None and estimate.mean == 0.75 and estimate.se == pytest.approx(0.25)
    assert (estimate.clusters, estimate.df) == (2, 1)
    # Stratified: clusters a, b in s1 and c, d in s2, one value each. Influences (y - 3/4)/4 are 1/16, -3/16 |
    # 1/16, 1/16; around the stratum means: ±1/8 | 0; SE² = 2/1 · (1/64 + 1/64) = 1/16; df = 4 clusters - 2 strata.
    stratified = clustered_mean([1, 0, 1, 1], list("abcd"), {"a": "s1", "b": "s1", "c": "s2", "d": "s2"})
    assert stratified is not None and stratified.se == pytest.approx(0.25) and stratified.df == 2


def test_rate_interval_is_wilson_for_independent_inputs_and_wilson_at_the_effective_size_when_clustered():
    low, high, method = rate_interval([True] * 8 + [False] * 2, list(range(10)))  # type: ignore[misc]
    assert (low, high) == wilson_interval(8, 10) and method == WILSON
    # Clustered case above: p = 3/4, SE² = 1/16, effective n = (3/16) / (1/16) = 3; 0.75 of 3 non-compliant
    # verdicts is rare (< 10): continuity-corrected on Korn-Graubard's z · t(1) / t(3 - 1), under 40 effective
    # verdicts on the near limit only (the upper, toward 1; the lower plain).
    low, high, method = rate_interval([True, False, True, True], ["a", "a", "b", "b"])  # type: ignore[misc]
    z = Z95 * t975(1) / t975(2)
    assert low == pytest.approx(wilson_interval(2.25, 3, z=z, continuity=False)[0])  # type: ignore[index]
    assert high == pytest.approx(wilson_interval(2.25, 3, z=z, continuity=True)[1])  # type: ignore[index]
    assert "clusters = inputs" in method
    # All compliant: SE 0, the exact bound on the number of clusters (tests/analysis/test_pooled_rate_limits.py).
    low, high, _ = rate_interval([True] * 6, ["a", "a", "b", "b", "c", "c"])  # type: ignore[misc]
    assert (low, high) == pytest.approx((0.025 ** (1 / 3), 1.0))


def test_repeating_identical_runs_leaves_the_clustered_interval_unchanged():
    values = [True, False, True, True, False, True, True, True, False, True]
    inputs = list(range(10))
    strata = {i: i % 3 for i in inputs}
    twice = rate_interval(values * 2, inputs * 2, strata)
    assert twice is not None
    for copies in (3, 5):
        assert rate_interval(values * copies, inputs * copies, strata) == pytest.approx(twice)
    once = rate_interval(values, inputs, strata)
    assert once is not None and twice[1] - twice[0] >= once[1] - once[0]


def test_mean_interval_by_hand():
    # Ratings 4, 2 | 5, 5: mean 4; residual sums -2 and 2; SE² = 2 · 8 / 16 = 1; ± t(1) · 1.
    assert mean_interval([4, 2, 5, 5], ["a", "a", "b", "b"]) == pytest.approx((4 - t975(1), 4 + t975(1)))


def test_paired_difference_by_hand():
    # a = 1,1,0 and b = 0,1,0 on inputs x,y,z: difference 1/3. Influences (a side minus b side, each over 3):
    # x 1/9 + 1/9, y 1/9 - 2/9, z -2/9 + 1/9; SE² = 3/2 · (4 + 1 + 1)/81 = 1/9.
    paired = paired_difference([("x", 1), ("y", 1), ("z", 0)], [("x", 0), ("y", 1), ("z", 0)])
    assert paired is not None and paired.difference == pytest.approx(1 / 3) and paired.se == pytest.approx(1 / 3)
    # An input seen by one side only is not compared.
    assert paired_difference([("x", 1), ("w", 1)], [("x", 0)]).clusters == 1  # type: ignore[union-attr]


def test_bootstrap_resamples_whole_clusters():
    # Two clusters of identical values: every resample's mean is 0, 1 or 1/2, never anything else.
    values = [0.0, 0.0, 1.0, 1.0]
    bounds = bootstrap_percentiles(["a", "a", "b", "b"], lambda picked: _mean(values, picked), draws=400)
    assert bounds is not None and bounds[0][0] == 0.0 and bounds[1][0] == 1.0


def test_a_weighted_bootstrap_draws_the_same_resamples_as_the_list_one():
    # Bradley–Terry intervals weigh each comparison by its input's draws instead of listing the drawn comparisons:
    # the same seed must give the same resamples, so every percentile is the same number.
    import numpy as np

    from speceval.analysis.statistics.clustered import bootstrap_weighted

    clusters = ["c", "a", "c", "b", "d", "a", "e", "b"]
    values = [1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.5, 0.0]
    listed = bootstrap_percentiles(clusters, lambda picked: _mean(values, picked), draws=300)
    weighted = bootstrap_weighted(clusters, lambda w: np.array([w @ np.array(values) / w.sum()]), draws=300)
    assert listed is not None and weighted is not None
    assert listed[0][0] == pytest.approx(weighted[0][0], abs=1e-12)
    assert listed[1][0] == pytest.approx(weighted[1][0], abs=1e-12)
    assert listed[0][0] < listed[1][0]


def _mean(values: list[float], picked: list[int]):  # type: ignore[no-untyped-def]
    import numpy as np

    return np.array([sum(values[i] for i in picked) / len(picked)])


def row(
    judge: str, model: str, statement: str, text: str, verdict: bool | str, run: int = 1, variation: str = "v"
) -> ComplianceRow:
    judged = isinstance(verdict, bool)
    return ComplianceRow(
        spec="s",
        judge=judge,
        model=model,
        statement_id=statement,
        mode="binary",
        prompt_version="p1",
        input=text,
        output=f"{model}:{text}",
        outcome="judged" if judged else str(verdict),
        compliant=verdict if judged else None,
        confidence=None,
        rating=None,
        source="x",
        run=run,
        variation=variation,
    )


def test_panel_is_the_judges_share_and_answers_without_every_verdict_stay_out():
    rows = [
        row("j1", "m", "st", "q1", True),
        row("j2", "m", "st", "q1", True),
        row("j3", "m", "st", "q1", False),
        row("j1", "m", "st", "q2", True),
        row("j2", "m", "st", "q2", False),
        row("j3", "m", "st", "q2", "unparsed"),
        row("j1", "m", "st", "q3", "unparsed"),
        row("j2", "m", "st", "q3", "judge_errored"),
        row("j3", "m", "st", "q3", "unparsed"),
        row("j1", "m", "st", "q4", False),
        row("j2", "m", "st", "q4", False),
        row("j3", "m", "st", "q4", False),
    ]
    panel, counts = panel_rows(rows)
    verdicts = {r.input: (r.outcome, r.compliant, r.score) for r in panel}
    assert verdicts == {
        "q1": ("judged", None, pytest.approx(2 / 3)),
        "q2": ("panel_incomplete", None, None),
        "q3": ("panel_incomplete", None, None),
        "q4": ("judged", False, 0.0),
    }
    assert all(r.judge == PANEL for r in panel)
    [count] = counts
    assert (count.answers, count.unanimous, count.split, count.incomplete) == (2, 1, 1, 2)
    assert count.judge_rates == {"j1": 0.5, "j2": 0.5, "j3": 0.0} and count.panel_rate == pytest.approx(1 / 3)
    stats = {s.judge: s for s in variation_statistics(rows + panel, {})}
    assert stats[PANEL].judged == 2 and stats[PANEL].rate == pytest.approx(1 / 3)
    assert stats[PANEL].not_judged == {"panel_incomplete": 2}
    assert panel_rows([r for r in rows if r.judge == "j1"]) == ([], [])


@pytest.mark.parametrize("seed", range(20))
def test_a_two_judge_panel_rate_lies_between_its_judges_rates(seed):
    rng = np.random.default_rng(seed)
    lenient, strict = rng.uniform(0.6, 0.95), rng.uniform(0.2, 0.8)
    rows = []
    for i in range(80):
        rows.append(row("lenient", "m", f"st{i % 4}", f"q{i}", bool(rng.random() < lenient)))
        rows.append(row("strict", "m", f"st{i % 4}", f"q{i}", bool(rng.random() < strict)))
    panel, counts = panel_rows(rows)
    stats = {s.judge: s for s in variation_statistics(rows + panel, {})}
    judge_rates = [stats["lenient"].rate, stats["strict"].rate]
    assert min(judge_rates) <= stats[PANEL].rate <= max(judge_rates)
    assert stats[PANEL].rate == pytest.approx(sum(judge_rates) / 2)  # every answer judged by both: the mean
    assert counts[0].split > 0 and stats[PANEL].judged == 80  # disagreements stay in, as halves
    # panel.csv's rates carry the intervals compliance.csv gives them (every answer judged by both: the same answers)
    assert (counts[0].panel_ci_low, counts[0].panel_ci_high) == (stats[PANEL].ci_low, stats[PANEL].ci_high)
    for judge in ("lenient", "strict"):
        assert counts[0].judge_intervals[judge] == (stats[judge].ci_low, stats[judge].ci_high)
    assert counts[0].ci_method == stats[PANEL].ci_method


def test_variation_runs_and_spread_by_hand():
    rows = [row("j", "m", "st", f"q{i}", i < 3, run=1) for i in range(4)]  # run 1: 3 of 4
    rows += [row("j", "m", "st", f"q{i}", i < 1, run=2) for i in range(4)]  # run 2: 1 of 4
    (stat,) = variation_statistics(rows, {"v": {"temperature": 0.7}})
    assert [(r.run, r.judged, r.compliant, r.rate) for r in stat.runs] == [(1, 4, 3, 0.75), (2, 4, 1, 0.25)]
    assert (stat.judged, stat.compliant, stat.rate) == (8, 4, 0.5)
    assert (stat.run_min, stat.run_max) == (0.25, 0.75) and stat.settings == {"temperature": 0.7}
    assert stat.run_sd == pytest.approx(math.sqrt(0.125))  # sample SD: ((0.25² + 0.25²) / 1) ** 0.5
    assert stat.runs[0].ci_low == wilson_interval(3, 4)[0]  # type: ignore[index]


def test_paired_comparisons_pair_candidates_within_a_variation_and_variations_within_a_candidate():
    rows = [row("j", "a", "st", f"q{i}", True) for i in range(4)] + [
        row("j", "b", "st", f"q{i}", i < 2) for i in range(4)
    ]
    rows += [row("j", "a", "st", f"q{i}", i < 1, variation="w") for i in range(4)]
    found = {(p.kind, p.within, p.a, p.b): p for p in paired_comparisons(rows)}
    assert found[("candidates", "v", "a", "b")].difference == pytest.approx(0.5)
    assert found[("variations", "a", "v", "w")].difference == pytest.approx(0.75)
    assert ("candidates", "w", "a", "b") not in found  # b has no answers in w


def ranking(model_a: str, model_b: str, index: int, rank: int, run: int) -> RankingRow:
    return RankingRow(
        spec="s",
        judge="j",
        model_a=model_a,
        model_b=model_b,
        statement_id="st",
        index=index,
        input=f"q{index}",
        outcome="judged",
        rank=rank,
        source="x",
        run=run,
        variation="v",
    )


def test_position_consistency_counts_each_run_and_a_never_flipping_judge_scores_one():
    rows = []
    for run in (1, 2, 3):
        for i in range(5):  # the judge prefers m1 on q0-q3 and m2 on q4, whichever side it is shown on
            rows += [ranking("m1", "m2", i, 1 if i < 4 else -1, run), ranking("m2", "m1", i, -1 if i < 4 else 1, run)]
    consistency = position_consistency(rows)
    assert [(c.run, c.consistent, c.compared, c.rate) for c in consistency] == [
        *[(r, 5, 5, 1.0) for r in (1, 2, 3)],
        (None, 15, 15, 1.0),  # the pooled row: every run counted
    ]
    wins = {w.candidate: w for w in win_rates(rows)}
    assert wins["m1"].rate == 0.8 and wins["m1"].games == 30
    once = {s.candidate: (s.ci_low, s.ci_high) for s in strengths([r for r in rows if r.run == 1])}
    thrice = {s.candidate: (s.ci_low, s.ci_high) for s in strengths(rows)}
    assert once["m1"][0] < 0.8 < once["m1"][1]  # type: ignore[operator]
    assert once == thrice  # resampling inputs: identical repeated runs do not narrow the bootstrap interval
    assert math.isclose(sum(s.strength for s in strengths(rows)), 1.0)


def test_likert_ratings_get_a_clustered_mean_and_stay_out_of_the_binary_rate():
    rows = [
        row("j", "m", "st", text, "judged", run=run).model_copy(update={"rating": rating})
        for text, run, rating in (("q1", 1, 4), ("q1", 2, 2), ("q2", 1, 5), ("q2", 2, 5))
    ]
    (stat,) = variation_statistics(rows, {})
    assert stat.mean_rating == 4 and (stat.judged, stat.rate, stat.not_judged) == (0, None, {})
    # mean ± t(1)·SE alone is (-8.7, 16.7): a rating no judge can give. The registered `mean_rating` (Gaffke's bound,
    # issue 47) stays inside the scale 1-5 by construction, wide on two inputs.
    assert 1.0 < stat.rating_ci_low < 2.0 < 4.9 < stat.rating_ci_high < 5.0  # type: ignore[operator]
    many = [
        row("j", "m", "st", f"q{i}", "judged", run=run).model_copy(update={"rating": 4 + (i + run) % 2})
        for i in range(12)
        for run in (1, 2)
    ]
    (spread,) = variation_statistics(many, {})
    assert spread.rated == 24 and spread.rated_inputs == 12
    assert 1.0 < spread.rating_ci_low < 4.5 < spread.rating_ci_high < 5.0  # type: ignore[operator]


def test_the_ratings_of_one_likert_judge_have_no_agreement_row_and_two_judges_have_one():
    from speceval.analysis.tables.rates import judge_agreement

    def rated(judge: str, text: str, rating: int) -> ComplianceRow:
        return row(judge, "m", "st", text, "judged").model_copy(update={"rating": rating, "mode": "likert"})

    one = [rated("j1", f"q{i}", 3 + i % 3) for i in range(6)] + [row("b", "m", "st", "q0", True)]
    assert judge_agreement(one) == []  # it gave a Krippendorff row over 0 items, "no interval"
    two = one + [rated("j2", f"q{i}", 3 + i % 3) for i in range(6)]
    (alpha,) = judge_agreement(two)
    assert (alpha.judges, alpha.items, alpha.kappa) == ("all (Likert ratings)", 6, pytest.approx(1.0))


def test_breakdowns_group_by_statement_type():
    from speceval.analysis.tables.variations import breakdown

    rows = [
        row("j", "m", "a", "q1", True).model_copy(update={"statement_type": "prohibition"}),
        row("j", "m", "b", "q2", False).model_copy(update={"statement_type": "prohibition"}),
        row("j", "m", "c", "q3", True).model_copy(update={"statement_type": "guideline"}),
    ]
    found = {b.group: (b.judged, b.compliant, b.ci_low) for b in breakdown(rows, "statement_type")}
    assert found == {
        "guideline": (1, 1, wilson_interval(1, 1)[0]),  # type: ignore[index]
        "prohibition": (2, 1, wilson_interval(1, 2)[0]),
    }  # type: ignore[index]


def test_a_large_experiment_embeds_the_same_number_of_samples_from_every_cell():
    from speceval.analysis.rendering.samples.samples import sample_section, select_samples

    rows = [
        row("j", model, "st", f"q{i}", True, run=run) for model in ("a", "b") for run in (1, 2, 3) for i in range(10)
    ]
    picked = select_samples(rows, limit=12)
    assert len(picked) == 12 and {(r.model, r.run) for r in picked} == {(m, k) for m in "ab" for k in (1, 2, 3)}
    assert select_samples(rows, limit=60) == rows
    assert "12 of 60 verdicts are embedded" in sample_section(rows, limit=12)


def test_a_model_that_wins_every_comparison_gets_no_point_interval_but_a_reason():
    # m1 beats m2 on every input in both orders: the Bradley–Terry MLE is at the boundary (Ford's condition
    # fails), and every bootstrap resample repeats it, so an interval would claim certainty that is not there.
    rows = [row for i in range(6) for row in (ranking("m1", "m2", i, 1, 1), ranking("m2", "m1", i, -1, 1))]
    separated = {s.candidate: s for s in strengths(rows)}
    assert separated["m1"].strength == pytest.approx(1.0) and separated["m2"].strength == pytest.approx(0.0)
    assert all(s.ci_low is None and s.ci_high is None and s.note and "Ford" in s.note for s in separated.values())
    # One loss (a 3-cycle of wins is not needed for two models: any score both ways) makes it estimable again.
    rows.append(ranking("m1", "m2", 6, -1, 1))
    mixed = {s.candidate: s for s in strengths(rows)}
    assert all(s.note is None and s.ci_low is not None for s in mixed.values())
    assert mixed["m1"].ci_low < mixed["m1"].strength < 1.0  # type: ignore[operator]


def test_one_count_an_input_takes_the_clustered_interval_at_its_own_variance() -> None:
    # Flips per conversation on 0..3, one conversation an input: counts 0,0,0,1,0,0,1,0,2,0. Rescaled, p = 2/15 and
    # their spread 1/15 - 4/225 = 11/225; the cluster-robust variance (10/9)·Σ((y - p)/10)² = 11/2025, so the effective
    # size is p(1 - p)/(11/2025) = 234/11 (under the cap 10·(26/225)/(11/225) = 260/11). Under 10 of the rarer kind:
    # Wilson with continuity correction (Newcombe's method 4) on t(9) = 2.262157 at that size, scaled back by 3.
    counts = [0.0, 0, 0, 1, 0, 0, 1, 0, 2, 0]
    n, p, z = 234 / 11, 2 / 15, 2.262157
    low = (2 * n * p + z * z - 1 - z * math.sqrt(z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))) / (2 * (n + z * z))
    high = (2 * n * p + z * z + 1 + z * math.sqrt(z * z + 2 - 1 / n + 4 * p * (n * (1 - p) - 1))) / (2 * (n + z * z))
    found = mean_interval(counts, list(range(10)), dict.fromkeys(range(10), "s"), range=(0.0, 3.0))
    assert found == pytest.approx((3 * low, 3 * high), abs=1e-6)


def test_counts_that_vary_less_than_verdicts_get_a_narrower_interval() -> None:
    # 100 conversations, 13 flipped once on 0..3: on the rescaled scale their variance is about 0.30 p(1 - p), so the
    # interval is about √0.30 = 0.55 as wide as Wilson's on their rescaled sum (each count taken as a verdict: 2.2x a
    # covering reference in session 19's audit). Declaring a wider range that no count reaches must not widen it
    # either: the same counts on 0..1 are 13 verdicts of 100, Wilson's.
    counts = [1.0] * 13 + [0.0] * 87
    inputs = list(range(100))
    found = mean_interval(counts, inputs, range=(0.0, 3.0))
    verdicts = mean_interval(counts, inputs, range=(0.0, 1.0))
    as_verdicts = wilson_interval(13 / 3, 100)
    assert found is not None and verdicts is not None and as_verdicts is not None
    width = found[1] - found[0]
    assert width < 0.7 * 3 * (as_verdicts[1] - as_verdicts[0])
    assert width == pytest.approx(verdicts[1] - verdicts[0], rel=0.1)

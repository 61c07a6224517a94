"""A metric's declared range (issue 34): validated in the experiment file, a value outside it is missing, and the
mean gets the bounded interval (inside the range, never a point) with its method named in metrics.csv."""

from __future__ import annotations

import json

import numpy as np
import pytest

from speceval.analysis.tables.metrics import metric_table
from speceval.metric_spec import MetricSpec


def test_a_range_needs_a_number_metric_and_low_below_high():
    with pytest.raises(ValueError, match="range needs a number metric"):
        MetricSpec.model_validate({"source": "answer", "regex": "(x)", "type": "category", "range": [0, 1]})
    with pytest.raises(ValueError, match="range needs a number metric"):
        MetricSpec.model_validate({"source": "answer", "regex": r"(\d+)", "range": [10, 0]})


def test_a_value_outside_the_range_is_missing_not_clipped():
    spec = MetricSpec.model_validate({"source": "answer", "regex": r"score (\d+)", "type": "int", "range": [0, 10]})
    assert spec.extract("score 7") == 7 and spec.extract("score 0") == 0 and spec.extract("score 11") is None


def test_a_ranged_metric_of_zeros_has_an_interval_inside_its_range(tmp_path):
    records = [
        {"statement_id": "st", "input_text": f"q{i}", "output_text": "score 0", "outcome": "succeeded"}
        for i in range(20)
    ]
    path = tmp_path / "generations" / "m" / "results" / "st.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(records), encoding="utf-8")
    ranged = MetricSpec.model_validate({"source": "answer", "regex": r"score (\d+)", "type": "int", "range": [0, 10]})
    plain = ranged.model_copy(update={"range": None})
    [row] = metric_table([tmp_path], {"self_score": ranged})
    assert row.mean == 0.0 and row.ci_low == 0.0 and row.ci_high is not None and 0.0 < row.ci_high <= 10.0
    assert row.ci_method is not None and "0..10" in row.ci_method
    [before] = metric_table([tmp_path], {"self_score": plain})
    # Without the range, every value alike: no interval (before, mean ± t · SE of a constant was the point [0, 0]).
    assert (before.ci_low, before.ci_high, before.ci_method) == (None, None, None)


def _score_file(tmp_path, folder: str, scores: list[int]) -> None:
    records = [
        {"statement_id": "st", "input_text": f"q{i}", "output_text": f"score {s}", "outcome": "succeeded"}
        for i, s in enumerate(scores)
    ]
    path = tmp_path / "generations" / folder / "results" / "st.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(records), encoding="utf-8")


def test_without_a_range_an_all_zero_cell_is_bounded_by_the_range_seen_in_the_other_cells(tmp_path):
    _score_file(tmp_path, "a", [0] * 20)
    _score_file(tmp_path, "b", [0] * 15 + [7, 9, 8, 6, 10])
    plain = MetricSpec.model_validate({"source": "answer", "regex": r"score (\d+)", "type": "int"})
    rows = {r.candidate: r for r in metric_table([tmp_path], {"self_score": plain})}
    zeros = rows["a"]
    assert zeros.ci_low is not None and zeros.ci_high is not None and zeros.ci_low <= 0.0 < zeros.ci_high <= 10.0
    scored = rows["b"]
    assert scored.ci_low is not None and scored.ci_high is not None and scored.mean is not None
    assert scored.ci_method is not None and scored.ci_method.startswith("hull of mean")


def test_a_skewed_mean_without_a_range_covers_where_the_t_interval_did_not():
    from speceval.analysis.statistics.clustered import mean_interval, mean_interval_codes

    rng = np.random.default_rng(9)
    truth, draws, ours, before, defined = 0.25, 400, 0, 0, 0
    clusters = list(range(20))
    for _ in range(draws):
        values = rng.binomial(5, rng.beta(0.2, 3.8, 20)).astype(float)  # small counts, mean 5 x 0.05
        found = mean_interval(values.tolist(), clusters)
        if found is None:  # every count alike: no interval, not a point
            continue
        defined += 1
        ours += found[0] <= truth <= found[1]
        t = mean_interval_codes(values, np.arange(20))
        before += t is not None and t[0] <= truth <= t[1]
    assert ours / defined >= 0.95 and before / defined < 0.9  # 0.999 against 0.842 in the coverage matrix

"""A metric's declared range (issue 34): validated in the experiment file, a value outside it is missing, and the
mean gets the bounded interval (inside the range, never a point) with its method named in metrics.csv."""

from __future__ import annotations

import json

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
    assert (before.ci_low, before.ci_high) == (0.0, 0.0)  # mean ± t · SE of a constant: a point

"""The Inspect export's whole-log rates, folded a statement at a time from a few sums (`inspect_rates`), are the
report's `summarize` over every verdict at once: same counts, same rate, same intervals to rounding, on the
clustered path (several runs per input), with a stratum of one input, outcomes not judged, and Likert ratings."""

from __future__ import annotations

import random

import numpy as np
import pytest

from speceval.analysis.reading.column_rows import as_columns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.variations import summarize
from speceval.interop.inspect_rates import RateFold
from speceval.interop.inspect_scores import RATE_FIELDS


def verdict(statement: str, index: int, run: int, draw: float, mode: str) -> ComplianceRow:
    likert = mode == "likert"
    not_judged = draw > 0.93
    return ComplianceRow(
        spec="s",
        judge="j",
        model="m",
        statement_id=statement,
        mode=mode,
        prompt_version="p1",
        input=f"{statement} input {index}",
        output=f"answer {index}",
        outcome="parse_error" if not_judged else "judged",
        compliant=None if not_judged or likert else draw < 0.7,
        confidence=None,
        rating=None if not_judged or not likert else float(1 + int(draw * 5)),
        source="x",
        run=run,
    )


def verdicts(mode: str, seed: int, identical: bool = False) -> list[ComplianceRow]:
    draws = random.Random(seed)
    rows = []
    # unequal statements, one of a single input; 3 runs of each input, so inputs are clusters of several verdicts
    for statement, inputs in (("a", 12), ("b", 1), ("c", 30), ("d", 5)):
        for index in range(inputs):
            slant = draws.random() * 0.4  # inputs differ: the runs of one input agree more than chance
            draw = draws.random() * 0.8 + slant  # identical runs (temperature 0): every run draws the same
            rows += [
                verdict(statement, index, run, draw if identical else draws.random() * 0.8 + slant, mode)
                for run in (1, 2, 3)
            ]
    return rows


@pytest.mark.parametrize("mode", ["binary", "likert"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("identical", [False, True], ids=["runs-vary", "identical-runs"])
def test_folded_rates_are_the_reports(mode: str, seed: int, identical: bool) -> None:
    # Identical runs take the report's own path (Wilson on the inputs, as one run's): the clustered interval would
    # come out narrower than one run's there, so the export must not fall back to it.
    rows = verdicts(mode, seed, identical)
    expected = summarize(rows).model_dump(include=RATE_FIELDS)
    fold = RateFold()
    for statement in sorted({r.statement_id for r in rows}):
        c = as_columns([r for r in rows if r.statement_id == statement])
        fold.add(c, np.arange(len(c)))
    got = fold.summary()
    assert set(got) == RATE_FIELDS
    for name in ("judged", "compliant", "not_judged", "inputs", "ci_method"):
        assert got[name] == expected[name], name
    assert "cluster-robust" in str(got["ci_method"]) or mode == "likert"  # the clustered path, not Wilson
    assert ("alike: Wilson on the inputs" in str(got["ci_method"])) == (identical and mode == "binary")
    numbers = ("rate", "ci_low", "ci_high") if mode == "binary" else ("mean_rating", "rating_ci_low", "rating_ci_high")
    for name in numbers:
        assert expected[name] is not None
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), name
    for name in {"rate", "ci_low", "ci_high", "mean_rating", "rating_ci_low", "rating_ci_high"} - set(numbers):
        assert got[name] == expected[name], name


def rated(ratings: dict[str, list[list[int]]]) -> list[ComplianceRow]:
    """Likert verdicts: statement → each input's ratings, one a run."""
    return [
        verdict(statement, index, run, 0.0, "likert").model_copy(update={"rating": float(rating)})
        for statement, by_input in ratings.items()
        for index, runs in enumerate(by_input)
        for run, rating in enumerate(runs, start=1)
    ]


@pytest.mark.parametrize(
    "ratings",
    [
        {"a": [[5], [5], [4], [5], [5]], "b": [[5], [4], [5], [5], [5]]},  # near the top, one run, two statements
        {"a": [[5, 5, 5]] * 4, "b": [[5, 5, 5]] * 3},  # every rating 5: the exact bound
        {"a": [[1]]},  # one rating
        {"a": [[5, 5], [1, 1], [5, 5]], "b": [[4, 4]]},  # identical runs, a stratum of one input
        {"a": [[4, 5]] * 6},  # inputs alike in their means: every rating counts
        {"a": [[5, 1, 5], [5, 5, 5], [1, 5, 5]], "b": [[5, 5, 1], [5, 5, 5]]},  # a polarized judge
    ],
    ids=["near-the-top", "all-fives", "one-rating", "identical-runs", "alike-inputs", "polarized"],
)
def test_folded_ratings_near_an_end_of_the_scale_are_the_reports(ratings: dict[str, list[list[int]]]) -> None:
    rows = rated(ratings)
    expected = summarize(rows).model_dump(include=RATE_FIELDS)
    fold = RateFold()
    for statement in sorted(ratings):
        c = as_columns([r for r in rows if r.statement_id == statement])
        fold.add(c, np.arange(len(c)))
    got = fold.summary()
    for name in ("mean_rating", "rating_ci_low", "rating_ci_high"):
        assert expected[name] is not None, name  # the hull cut to 1-5 gave no interval to all-5s and one rating
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), name

"""A category the judge was given that no verdict chose has its row (count 0, with the exact interval of a share of
0), read from the judge run's run.json: left out, a rare category had no row on most draws (session 19's audit)."""

from __future__ import annotations

import json
from pathlib import Path

from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.declared_categories import declared_categories
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.categories import category_differences, category_distribution


def _facts(mode: str = "categories") -> FileFacts:
    return FileFacts(
        spec="s",
        judge="j",
        model="m",
        variation="default",
        run=1,
        statement_id="st",
        statement_type="requirement",
        authority_level="user",
        mode=mode,
        prompt_version="v",
        source="x",
        synthetic=True,
    )


def _rows(categories: list[str], variation: str = "default") -> list[ComplianceRow]:
    return [
        ComplianceRow.model_construct(
            spec="s",
            judge="j",
            model="m",
            mode="categories",
            variation=variation,
            run=1,
            statement_id="st",
            input=f"q{i}",
            output="",
            outcome="judged",
            compliant=None,
            category=category,
        )
        for i, category in enumerate(categories)
    ]


def test_the_categories_a_judge_was_given_come_from_its_run_json_in_their_order(tmp_path: Path) -> None:
    folder = tmp_path / "judge_j" / "m"
    (folder / "results").mkdir(parents=True)
    identity = {"mode": "categories", "categories": {"full": "d", "partial": "d", "refuses": "d"}}
    (folder / "run.json").write_text(json.dumps({"parameters": {"identity": identity}}))
    results = folder / "results" / "st.json"
    found = declared_categories([results, results], [_facts(), _facts()])
    assert found == {("s", "j"): ["full", "partial", "refuses"]}
    assert declared_categories([results], [_facts("binary")]) == {}  # a yes/no judge's file is not read
    assert declared_categories([tmp_path / "gone" / "results" / "st.json"], [_facts()]) == {}  # no run.json


def test_a_given_category_no_verdict_chose_has_a_row_at_zero_with_an_interval() -> None:
    rows = _rows(["full"] * 20 + ["partial"] * 10)
    declared = {("s", "j"): ["full", "partial", "refuses"]}
    assert [s.category for s in category_distribution(rows)] == ["full", "partial"]
    shares = {s.category: s for s in category_distribution(rows, declared)}
    unseen = shares["refuses"]
    assert (unseen.count, unseen.judged, unseen.rate, unseen.ci_low) == (0, 30, 0.0, 0.0)
    assert unseen.ci_high is not None and 0.05 < unseen.ci_high < 0.2
    both = _rows(["full"] * 5, "a") + _rows(["full"] * 4 + ["partial"], "b")
    assert "refuses" in {d.category for d in category_differences(both, declared)}

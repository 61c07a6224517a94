"""Rows in memory find their facts' code by their own field values once one with the same values came before
(`FilesTable.row_facts_code`): the facts, the paths and every row's code must be those a facts model built, validated
and dumped for each row gives, in the same order."""

from __future__ import annotations

import numpy as np

from speceval.analysis.reading.column_codes import facts_from
from speceval.analysis.reading.columns import ColumnsBuilder, FileFacts, VerdictColumns
from speceval.analysis.reading.ranking_columns import RankingColumnsBuilder, RankingFacts, as_ranking_columns
from speceval.analysis.reading.rows import ComplianceRow, RankingRow


def ranking_rows() -> list[RankingRow]:
    rng = np.random.default_rng(0)
    return [
        RankingRow(
            spec="s",
            judge=str(rng.choice(["j1", "j2"])),
            model_a="a",
            model_b=str(rng.choice(["b", "c"])),
            statement_id=f"st{rng.integers(3)}",
            index=i,
            input=f"q{i}",
            outcome="judged",
            rank=int(rng.integers(3)),
            source="sim",
            run=int(rng.integers(1, 3)),
            synthetic=bool(rng.random() < 0.5),
        )
        for i in range(300)
    ]


def compliance_rows() -> list[ComplianceRow]:
    return [
        ComplianceRow(
            spec="s",
            judge="j",
            model=f"m{i % 3}",
            variation="default",
            run=1 + i % 2,
            statement_id=f"st{i % 5}",
            mode="binary",
            prompt_version="p",
            input=f"q{i}",
            output=f"a{i}",
            outcome="judged",
            compliant=i % 4 != 0,
            confidence=None,
            rating=None,
            source="sim",
            candidate_settings="temperature 0.7" if i % 7 < 3 else None,
        )
        for i in range(120)
    ]


def test_ranking_rows_get_the_codes_and_facts_one_model_a_row_gives() -> None:
    rows = ranking_rows()
    reference = RankingColumnsBuilder()
    codes = [reference.facts_code(facts_from(RankingFacts, row), None) for row in rows]
    found = as_ranking_columns(rows)
    assert found.file.tolist() == codes
    assert found.facts == reference.facts and found.paths == reference.paths
    assert 8 <= len(found.facts) < len(rows)  # facts repeated, and more than one


def test_compliance_rows_get_the_codes_and_facts_one_model_a_row_gives() -> None:
    rows = compliance_rows()
    reference = ColumnsBuilder()
    codes = [reference.facts_code(facts_from(FileFacts, row), None) for row in rows]
    found = VerdictColumns.from_rows(rows)
    assert found.file.tolist() == codes
    assert found.facts == reference.facts
    assert len(found.facts) == len({(r.model, r.run, r.statement_id, r.candidate_settings) for r in rows}) > 30

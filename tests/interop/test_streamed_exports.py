"""`speceval export` and `speceval label-sheet` stream the verdicts (issue 37, part 5): what they write equals
what the verdicts loaded whole give (the rows of `load_verdicts`, the sample of `label_sheet`), the Parquet file
holds the same rows as the JSON lines. Their memory at 10^6 verdicts is measured by benchmarks/evidence_memory.py
(`--only export label-sheet`)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.tables.human_labels import label_sheet
from speceval.analysis.tables.label_design import design_of, label_design
from speceval.analysis.tables.label_sampling import streamed_label_sheet
from speceval.cli.main import main as speceval_main


def test_the_streamed_export_has_every_verdict_once_compliance_first_and_parquet_equals_jsonl(experiment, tmp_path):
    assert speceval_main(["export", str(experiment), "--out", str(tmp_path / "v.jsonl")]) == 0
    assert speceval_main(["export", str(experiment), "--format", "parquet", "--out", str(tmp_path / "v.parquet")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    whole = load_verdicts([experiment], detail=True)
    kinds = [row["kind"] for row in rows]
    assert kinds == ["compliance"] * len(whole.compliance) + ["ranking"] * len(whole.rankings)
    assert {
        (r["judge"], r["candidate"], r["statement_id"], r["original_index"], r["outcome"], r["compliant"])
        for r in rows
        if r["kind"] == "compliance"
    } == {(v.judge, v.model, v.statement_id, v.detail.original_index, v.outcome, v.compliant) for v in whole.compliance}
    assert sorted(
        (r["judge"], r["model_a"], r["statement_id"], r["index"], r["rank"]) for r in rows if r["kind"] == "ranking"
    ) == sorted((v.judge, v.model_a, v.statement_id, v.index, v.rank) for v in whole.rankings)
    table = pq.read_table(tmp_path / "v.parquet").to_pylist()
    assert [{k: v for k, v in r.items() if v is not None} for r in table] == [
        {k: v for k, v in r.items() if v is not None} for r in rows
    ]


def test_the_streamed_label_sheet_draws_the_sample_label_sheet_draws(experiment):
    whole = load_verdicts([experiment]).compliance
    for n, seed in ((5, 0), (17, 3), (10_000, 1)):
        sheet, population = streamed_label_sheet([experiment], n, seed)
        assert sheet == label_sheet(whole, n, seed)
        # The design's population, counted as the verdicts streamed by, is the one the rows give.
        assert design_of(population, sheet, n, seed) == label_design(whole, sheet, n, seed)

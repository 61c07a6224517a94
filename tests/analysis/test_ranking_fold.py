"""Rankings in the report are folded into columns as their files are read (issue 25): the tables are what the rows
give, no row or text per comparison is held, a bad entry is named, and the samples read back what they show."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from speceval.analysis.reading.column_codes import NO_OFFSET
from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.reading.ranking_columns import RankingColumns
from speceval.analysis.rendering.report import build_report
from speceval.analysis.rendering.samples.read_back import RankingReadBack
from speceval.analysis.rendering.samples.sample_record import record_size
from speceval.analysis.rendering.samples.samples import ranking_samples, select_rankings
from speceval.analysis.statistics.codes import first_seen, first_seen_bounded
from speceval.analysis.tables import rankings as tables
from speceval.analysis.tables.rankings import position_consistency, strengths, win_rates
from speceval.errors import InputError
from speceval.judging.files import RankingEntry, RankingFile, RankingMetadata


def write_ranking(
    root: Path, judge: str, a: str, b: str, ranks: list[int | None], statement: str = "st0", width: int = 10
) -> Path:
    """A ranking results file as the ranking pipeline writes it (`RankingFile`); `None` ranks are unparsed."""
    path = root / f"spec_s/judge_{judge}/{a}x{b}/results/{statement}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        RankingEntry(
            index=i,
            input=f"{statement} question {i} " + "q" * width,
            output_a=f"{a} answers {i} " + "a" * width,
            output_b=f"{b} answers {i} " + "b" * width,
            rank=rank,
            winner=None if rank is None else {1: "A", -1: "B", 0: "tie"}[rank],
            explanation=f"why {i}",
            outcome="judged" if rank is not None else "unparsed",
            parse_error=None if rank is not None else "no verdict",
            original_index_a=i,
            original_index_b=i,
        )
        for i, rank in enumerate(ranks)
    ]
    metadata = RankingMetadata(
        model_a=a,
        model_b=b,
        judge=judge,
        spec="s",
        statement_id=statement,
        prompt_version="ranking_v2",
        batch_ids=["b"],
        candidate_dir_a="x",
        candidate_dir_b="y",
    )
    path.write_text(RankingFile(metadata=metadata, rankings=entries).model_dump_json(indent=2), encoding="utf-8")
    return path


def planted(root: Path) -> Path:
    write_ranking(root, "j1", "m1", "m2", [1, 0, -1, 1])
    write_ranking(root, "j1", "m2", "m1", [-1, 0, -1, None])
    write_ranking(root, "j1", "m1", "m3", [1, 1, -1, 0], statement="st1")
    write_ranking(root, "j1", "m3", "m1", [1, -1, 1, 0], statement="st1")
    write_ranking(root, "j2", "m2", "m3", [0, 1, 1, -1])
    return root


def test_planted_rankings_give_the_counts_worked_out_by_hand(tmp_path: Path) -> None:
    rankings = fold_verdicts([planted(tmp_path)]).ranking_columns
    assert len(rankings) == 20
    rates = {(r.judge, r.candidate, r.opponent): r for r in win_rates(rankings)}
    # m1 vs m2: A-B gives win, tie, loss, win; B-A (m1 is B) gives win, tie, win and one unparsed (not a game).
    m1 = rates[("j1", "m1", "m2")]
    assert (m1.games, m1.wins, m1.ties, m1.losses) == (7, 4, 2, 1) and m1.rate == pytest.approx(5 / 7)
    assert rates[("j1", "m2", "m1")].rate == pytest.approx(2 / 7)
    consistency = {(c.judge, c.run): (c.consistent, c.compared) for c in position_consistency(rankings)}
    # j1: input 0 m1/m1, 1 tie/tie, 2 m2/m1, 3 one order only (m1 vs m2); st1: m1/m3, m1/m1, m3/m3, tie/tie.
    assert consistency == {("j1", 1): (2 + 3, 3 + 4)}  # j2 judged one order only: nothing compared


def test_the_report_computes_from_columns_what_the_rows_give(tmp_path: Path) -> None:
    root = planted(tmp_path)
    rows = load_verdicts([root]).rankings
    columns = fold_verdicts([root]).ranking_columns
    assert len(rows) == len(columns)
    assert win_rates(columns) == win_rates(rows)
    assert strengths(columns, draws=40) == strengths(rows, draws=40)
    assert position_consistency(columns) == position_consistency(rows)
    assert not fold_verdicts([root]).rankings  # the report's fold keeps no row per comparison


def test_folding_rankings_holds_no_row_or_text_per_comparison(tmp_path: Path) -> None:
    root = tmp_path / "r"
    for statement in range(6):  # 6 files of 300 comparisons, each input, answer and answer 1-2 KB
        write_ranking(root, "j", "m1", "m2", [(i % 3) - 1 for i in range(300)], f"st{statement}", width=1500)
    fold_verdicts([root])  # imports and caches first: only the fold is measured
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        folded = fold_verdicts([root])
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(folded.ranking_columns) == 1800
    # A row with its input held was over 1.5 KB a comparison (2.7 MB here); the columns are 30 bytes.
    assert (held - before) / 1800 < 200, held - before
    # One file at a time, a chunk of 100 entries at a time (two chunks' texts at most, 0.9 MB, and the reader's
    # buffer): the peak does not grow with the files' 8.4 MB of text.
    assert peak - before < 2_000_000, peak - before


def test_a_bad_comparison_deep_in_a_streamed_file_is_named_with_its_file_entry_and_field(tmp_path: Path) -> None:
    path = write_ranking(tmp_path, "j", "m1", "m2", [1] * 260)
    text = path.read_text(encoding="utf-8")
    marker = '"input": "st0 question 250 '
    at = text.index(marker)
    rank_at = text.index('"rank": 1', at)
    path.write_text(text[:rank_at] + '"rank": 5' + text[rank_at + len('"rank": 1') :], encoding="utf-8")
    with pytest.raises(InputError, match=r"rankings\.250\.rank") as caught:
        fold_verdicts([tmp_path])
    assert "st0.json" in str(caught.value)
    with pytest.raises(InputError, match=r"rankings\.250\.rank"):
        build_report([tmp_path], tmp_path / "report")
    assert not (tmp_path / "report" / "win_rates.csv").exists()


def test_the_samples_read_back_the_comparisons_they_show_and_are_a_seeded_bounded_stratified_sample(
    tmp_path: Path,
) -> None:
    root = planted(tmp_path)
    columns = fold_verdicts([root]).ranking_columns
    samples = ranking_samples(columns)
    rows = load_verdicts([root], detail=True).rankings
    assert [(s["judge"], s["model_a"], s["input"], s["output_a"], s["output_b"], s["winner"]) for s in samples] == [
        (
            r.judge,
            r.model_a,
            r.input,
            r.detail.output_a,
            r.detail.output_b,
            {1: "A", -1: "B", 0: "tie"}[r.rank] if r.rank is not None else r.outcome,
        )
        for r in rows
        if r.detail is not None
    ]
    # Each record is sized, for the page's budget, as the page writes it.
    sizes = RankingReadBack(columns).sizes(np.arange(len(columns))).tolist()
    assert sizes == [record_size(s) for s in samples]
    # Strata: (judge, pair in either order, variation, run, statement): j1 m1-m2 st0, j1 m1-m3 st1, j2 m2-m3 st0.
    chosen = select_rankings(columns, limit=6)
    strata = [(columns.facts[columns.file[i]].judge, columns.facts[columns.file[i]].statement_id) for i in chosen]
    assert sorted(strata) == [("j1", "st0"), ("j1", "st0"), ("j1", "st1"), ("j1", "st1"), ("j2", "st0"), ("j2", "st0")]
    assert list(chosen) == sorted(chosen) and (select_rankings(columns, limit=6) == chosen).all()  # seeded
    assert {tuple(select_rankings(columns, limit=6, seed=seed)) for seed in range(5)} != {tuple(chosen)}
    # Bounded by bytes too: as many as fit, one stratum after another.
    fitting = select_rankings(columns, budget=sizes[0] + sizes[4] + sizes[16] + 10)
    assert len(fitting) == 3 and len({strata_of(columns, i) for i in fitting}) == 3


def strata_of(columns: RankingColumns, at: int) -> tuple[str, str]:
    facts = columns.facts[columns.file[at]]
    return facts.judge, facts.statement_id


def test_first_appearance_codes_from_a_table_are_those_a_sort_gives() -> None:
    codes = np.random.default_rng(3).integers(0, 50, 400)
    assert (first_seen_bounded(codes, 60) == first_seen(codes)).all()
    assert first_seen_bounded(codes[:0], 60).tolist() == []


def test_bradley_terry_weighs_comparisons_a_slice_at_a_time_to_the_same_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    columns = fold_verdicts([planted(tmp_path)]).ranking_columns
    whole = strengths(columns, draws=60)
    monkeypatch.setattr(tables, "_SLICE", 3)
    assert strengths(columns, draws=60) == whole
    assert any(s.ci_low is not None for s in whole)


def test_a_ranking_file_changed_after_it_was_folded_is_refused_not_shown(tmp_path: Path) -> None:
    """The samples read each comparison alone at the offset the fold found it: a file rewritten in between (two
    comparisons' inputs swapped, same lengths: every offset still on its entry) must not show another comparison's
    texts beside a verdict."""
    import json

    root = planted(tmp_path)
    columns = fold_verdicts([root]).ranking_columns
    assert (columns.offset != NO_OFFSET).all()  # every planted file is read a comparison at a time
    for path in {p for p in columns.paths if p is not None}:
        data = json.loads(path.read_text(encoding="utf-8"))
        first, second = data["rankings"][:2]
        first["input"], second["input"] = second["input"], first["input"]
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(InputError, match="changed while the report was made"):
        ranking_samples(columns)

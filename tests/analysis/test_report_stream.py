"""The report computes from verdicts folded into columns as the files are read (issue 25): no text and no object
per verdict is held, the sample view reads back only what it shows, and the numbers do not depend on the process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.rendering.samples.sample_record import sample_record
from speceval.analysis.rendering.samples.samples import sample_records
from speceval.analysis.tables.panel import panel_rows, panel_verdicts
from tests.analysis.test_report_golden import fabricate

REPO = Path(__file__).resolve().parents[2]


def test_the_columns_hold_a_few_bytes_per_verdict_and_one_record_per_file(tmp_path: Path) -> None:
    root = fabricate(tmp_path / "data")
    folded = fold_verdicts([root])
    columns = folded.columns
    rows = load_verdicts([root]).compliance
    assert len(columns) == len(rows) == 142
    files = len(list(root.rglob("results/*.json"))) - 2 - 16  # canaries and rankings are not compliance verdicts
    assert len(columns.facts) == files == 16
    per_verdict = sum(
        getattr(columns, name).nbytes
        for name in (
            "file",
            "position",
            "input",
            "output",
            "output_chars",
            "outcome",
            "compliant",
            "rating",
            "category",
            "offset",
            "score",
            "source_row",
        )
    ) / len(columns)
    assert per_verdict <= 80
    assert all(array.dtype != object for array in vars(columns).values() if isinstance(array, np.ndarray))


def test_every_embedded_record_is_the_verdict_read_back_from_its_file(tmp_path: Path) -> None:
    root = fabricate(tmp_path / "data")
    columns = fold_verdicts([root]).columns
    panel = panel_verdicts(columns)
    records, total = sample_records(columns, panel, limit=40)
    rows = load_verdicts([root]).compliance
    panel_in_rows, _ = panel_rows(rows)
    assert total == len(rows) + len(panel_in_rows) == 142 + 71
    assert len(records) == 40
    expected = [sample_record(r) for r in rows + panel_in_rows]
    assert all(record in expected for record in records)
    assert {r["judge"] for r in records} == {"judge-a", "judge-b", "panel"}
    assert {r["statement"] for r in records} == {"s1", "s2", "s3", "s4"}
    panel_records = [r for r in records if r["judge"] == "panel"]
    assert panel_records and all(
        "judge-a: " in r["explanation"] and "; judge-b: " in r["explanation"] for r in panel_records
    )


def test_a_small_page_budget_embeds_fewer_records_and_never_more_bytes(tmp_path: Path) -> None:
    from speceval.analysis.rendering.samples.sample_record import record_size

    root = fabricate(tmp_path / "data")
    columns = fold_verdicts([root]).columns
    records, _ = sample_records(columns, panel_verdicts(columns), budget=5_000)
    assert records and sum(record_size(r) for r in records) <= 5_000
    assert len({(r["judge"], r["candidate"], r["statement"]) for r in records}) == len(records)  # one per stratum


def test_the_csvs_are_the_same_bytes_under_any_string_hash_seed(tmp_path: Path) -> None:
    root = fabricate(tmp_path / "data")
    written = []
    for seed in ("1", "6"):  # two seeds: sets and dicts of strings iterate in other orders under each
        out = tmp_path / f"report-{seed}"
        subprocess.run(
            # No figures: the tables are compared (the figures were most of each fresh process's report).
            [sys.executable, "-m", "speceval", "report", str(root), "--out", str(out), "--no-figures"],
            cwd=REPO,
            check=True,
            capture_output=True,
            env=dict(os.environ, PYTHONHASHSEED=seed),
        )
        written.append(
            {
                p.name: p.read_bytes()
                for p in sorted(out.iterdir())
                if p.suffix == ".csv" or p.name == "variation_statistics.json"
            }
        )
    assert len(written[0]) >= 14
    assert written[0] == written[1]


def test_folding_keeps_no_text_whatever_the_answers_length(tmp_path: Path) -> None:
    """Answers of 1,000 characters in 30 files: holding the texts read so far would cost over a kilobyte a
    verdict at the end of the fold; the fold's peak stays under 800 bytes a verdict (one file's worth of parsed
    JSON, about 100 verdicts, is all that is held besides the columns)."""
    per_verdict = fold_peak_per_verdict(tmp_path, 3_000, 30)
    assert per_verdict < 800, per_verdict


def fold_peak_per_verdict(tmp_path: Path, size: int, statements: int) -> float:
    """Bytes a verdict at the peak of folding `size` fabricated verdicts (answers of 1,000 characters) spread over
    `statements` results files (as Python's allocator counts them: numpy's arrays included)."""
    import tracemalloc

    sys.path.insert(0, str(REPO))
    from benchmarks.evidence_memory import make_data

    data = make_data(tmp_path / "data", size, statements)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        folded = fold_verdicts([data["verdicts"]])
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(folded.columns) == size
    return peak / size


def _results_file(root: Path, entries: int, bad: int | None = None) -> Path:
    """A judge folder with one results file of `entries` verdicts (entry `bad` with an invalid `compliant`)."""
    import json

    results = root / "judge_j" / "cand" / "results"
    results.mkdir(parents=True)
    (results / "s1.json").write_text(
        json.dumps(
            {
                "metadata": {
                    "model": "cand",
                    "judge": "j",
                    "spec": "s",
                    "statement_id": "s1",
                    "mode": "binary",
                    "prompt_version": "v",
                    "batch_ids": ["b"],
                    "candidate_dir": str(root / "cand"),
                },
                "results": [
                    {
                        "input": f"q{i}",
                        "output": f"a{i}",
                        "compliant": "yes" if i == bad else i % 2 == 0,
                        "outcome": "judged",
                        "original_index": i,
                    }
                    for i in range(entries)
                ],
            }
        ),
        encoding="utf-8",
    )
    return root


def test_a_bad_entry_past_the_first_chunk_is_named_by_its_place_in_the_file(tmp_path: Path) -> None:
    import pytest

    from speceval.analysis.reading.entry_chunks import ENTRY_CHUNK
    from speceval.errors import InputError

    bad = ENTRY_CHUNK * 2 + 7
    root = _results_file(tmp_path / "runs", ENTRY_CHUNK * 3, bad=bad)
    for read in (fold_verdicts, load_verdicts):
        with pytest.raises(InputError, match=rf"s1\.json.*results\.{bad}\.compliant"):
            read([root])


def test_a_fold_takes_a_files_rows_as_each_chunk_is_validated(tmp_path: Path) -> None:
    """A fold holds one chunk of validated entries, not the file's: the first rows come before a bad entry in a
    later chunk is looked at (a whole-file validation held every text of the file twice)."""
    import itertools

    import pytest

    from speceval.analysis.reading.entry_chunks import ENTRY_CHUNK
    from speceval.analysis.reading.load import walk
    from speceval.analysis.reading.rows import Found
    from speceval.errors import InputError

    root = _results_file(tmp_path / "runs", ENTRY_CHUNK * 2, bad=ENTRY_CHUNK + 1)
    ((_, rows, _),) = list(itertools.islice(walk([root], Found(), keep=False), 1))
    stream = iter(rows)
    first = list(itertools.islice(stream, ENTRY_CHUNK))
    assert [r.input for r in first] == [f"q{i}" for i in range(ENTRY_CHUNK)]
    with pytest.raises(InputError, match=rf"results\.{ENTRY_CHUNK + 1}\.compliant"):
        next(stream)


def test_a_report_keeps_no_array_per_verdict_beyond_its_columns_and_input_clusters(tmp_path: Path) -> None:
    """Fact codes, strata, judged masks and values are computed from per-file codes when asked: after every table
    the judges' columns hold their own arrays (no score or source array: those are a panel's) and a cluster code
    per verdict, nothing else of their size."""
    from speceval.analysis.tables.rates import compliance_rates, judge_agreement
    from speceval.analysis.tables.variations import breakdown, paired_comparisons, variation_statistics

    root = fabricate(tmp_path / "data")
    columns = fold_verdicts([root]).columns
    for table in (
        compliance_rates,
        paired_comparisons,
        judge_agreement,
        lambda c: variation_statistics(c, {}),
        lambda c: breakdown(c, "statement_type"),
        lambda c: compliance_rates(c, per_statement=True),
    ):
        assert table(columns)
    held = [
        a
        for a in [*vars(columns).values(), *columns._derived.values()]
        if isinstance(a, np.ndarray) and len(a) == len(columns)
    ]
    assert sum(a.nbytes for a in held) / len(columns) <= 48 + 4


def test_groups_found_among_files_are_the_groups_a_stable_sort_gives(tmp_path: Path) -> None:
    """`grouped` takes each file's run of rows instead of sorting a code per verdict: the same groups, in the same
    order, with the same rows in the same order and dtype, for the folded columns, a panel joined to them, columns
    taken out of order, all verdicts or a subset."""
    from speceval.analysis.reading.columns import _sorted_groups, grouped
    from speceval.analysis.statistics.codes import dense, index_array

    columns = fold_verdicts([fabricate(tmp_path / "data")]).columns
    panel = panel_verdicts(columns)
    assert panel is not None
    reversed_rows = columns.take(np.arange(len(columns))[::-1].copy())
    for c in (columns, columns.concat(panel.verdicts), reversed_rows):
        judged = index_array(np.flatnonzero(c.judged()))
        for fields in (("spec", "judge", "model", "variation"), ("statement_id", "run"), ("judge", "statement_type")):
            per_file = dense(*(c.file_codes(f) for f in fields)).astype(np.int32)
            for members in (None, judged, judged[::3]):
                found, expected = grouped(c, members, *fields), _sorted_groups(c, members, fields, per_file)
                assert [key for key, _ in found] == [key for key, _ in expected] and found
                assert all(
                    np.array_equal(a, b) and a.dtype == b.dtype for (_, a), (_, b) in zip(found, expected, strict=True)
                )


def test_the_figures_library_is_loaded_only_when_a_figure_is_drawn(tmp_path: Path) -> None:
    """matplotlib (30 MB) is imported by the first figure, after the statistics have let their arrays go; a report
    without figures (`figures=False`) never imports it, so it drew none."""
    from tests.analysis.test_report import compliance_file

    compliance_file(tmp_path / "runs" / "c/m1/results/s1.json", "m1", "j", [True, False, True])
    code = (
        "import sys; from pathlib import Path; import speceval.analysis.rendering.report, speceval.cli.main; "
        "assert 'matplotlib' not in sys.modules, 'imported'; "
        f"speceval.analysis.rendering.report.build_report([Path({str(tmp_path / 'runs')!r})], "
        f"Path({str(tmp_path / 'report')!r}), figures=False); "
        "assert 'matplotlib' not in sys.modules, 'imported by a report without figures'; "
        "import numpy as np; from speceval.analysis.rendering.figures.plots import heatmap; "
        "assert heatmap(np.ones((1, 1)), ['r'], ['c'], 't').startswith(b'\\x89PNG'); "
        "assert 'matplotlib' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)


def test_a_results_file_changed_after_it_was_folded_is_refused_not_shown(tmp_path: Path) -> None:
    """The sample view reads its verdicts back from their files: a file rewritten in between (here: the same
    verdicts with other answers, so every offset still lands on an entry) must not put another answer beside a
    verdict."""
    import json

    from speceval.errors import InputError

    root = fabricate(tmp_path / "data")
    columns = fold_verdicts([root]).columns
    for path in {p for p in columns.paths if p is not None}:
        data = json.loads(path.read_text(encoding="utf-8"))
        for entry in data["results"]:
            entry["output"] = entry["output"].upper()[::-1]  # same length: the offsets stay where they were
        path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="changed while the report was made"):
        sample_records(columns, None)


def test_the_sample_is_sized_a_block_at_a_time_and_no_further_than_the_budget() -> None:
    """Each verdict weighed is read back from its file: `pick` asks the sizes of no block past the one where the
    page's budget is reached (a million verdicts: a few thousand reads, not a million)."""
    from speceval.analysis.rendering.samples.samples import SIZE_BLOCK, pick

    asked: list[int] = []

    def sizes(at: np.ndarray) -> np.ndarray:
        asked.extend(at.tolist())
        return np.full(len(at), 1_000, dtype=np.int64)

    strata = np.arange(200_000) % 50
    chosen = pick(strata, sizes, limit=20_000, budget=3_000_000)
    assert len(chosen) == 3_000 and set(chosen.tolist()) <= set(asked)
    assert len(asked) == 2 * SIZE_BLOCK  # the block that reached the budget is the last one asked
    assert len(set(strata[chosen].tolist())) == 50 and np.bincount(strata[chosen]).tolist() == [60] * 50
    asked.clear()
    assert pick(strata[:900], sizes, limit=20_000, budget=3_000_000).tolist() == list(range(900))  # all fit
    assert len(asked) == 900


def test_offsets_are_kept_in_four_bytes_and_a_file_past_4_gib_is_read_back_by_position() -> None:
    from array import array

    from speceval.analysis.reading.column_codes import NO_OFFSET, file_offsets

    assert file_offsets(array("Q", [10, 2_000, 2**32 - 2]), 3).tolist() == [10, 2_000, 2**32 - 2]
    assert file_offsets(array("Q", [10, 2**32]), 2).tolist() == [NO_OFFSET] * 2  # one past 4 GiB: none kept
    assert file_offsets(None, 2).tolist() == file_offsets(array("Q", [1]), 2).tolist() == [NO_OFFSET] * 2

"""The report's sample view is a bounded, seeded sample stratified by cell and statement (issue 25)."""

from __future__ import annotations

import json
import re
from collections import Counter

from speceval.analysis.rendering.samples.samples import TEXT_LIMIT, sample_section, select_samples
from tests.analysis.test_clustered import row


def test_a_sample_takes_every_statement_of_a_cell_in_turn_not_the_first_rows_of_the_files():
    rows = [row("j", "m", f"st{s}", f"q{i}", True) for s in range(5) for i in range(40)]
    picked = select_samples(rows, limit=10)
    assert Counter(r.statement_id for r in picked) == {f"st{s}": 2 for s in range(5)}
    assert [rows.index(r) for r in picked] == sorted(rows.index(r) for r in picked)  # file order kept
    assert {r.input for r in picked} != {"q0", "q1"}  # a random draw within each statement, not the first two


def test_the_sample_is_seeded_the_same_rows_give_the_same_sample():
    rows = [row("j", m, f"st{s}", f"q{i}", i % 2 == 0) for m in "ab" for s in range(3) for i in range(30)]
    assert select_samples(rows, limit=20) == select_samples(list(rows), limit=20)
    assert select_samples(rows, limit=20, seed=1) != select_samples(rows, limit=20)


def test_long_answers_are_bounded_by_bytes_so_the_page_stays_small_at_any_size():
    long = "x" * (3 * TEXT_LIMIT)
    rows = [row("j", "m", f"st{s}", f"q{i} {long}", True) for s in range(4) for i in range(50)]
    section = sample_section(rows, budget=100_000)
    data = re.search(r'id="sample-data">(.*?)</script>', section, re.S)
    assert data is not None and len(data.group(1).encode()) <= 100_000
    embedded = json.loads(data.group(1))
    assert 20 < len(embedded) < len(rows) and {e["statement"] for e in embedded} == {f"st{s}" for s in range(4)}
    assert f"{len(embedded)} of 200 verdicts are embedded" in section

"""The report's samples read each file decoded whole (the original SpecEval's) through once, however many blocks
`pick` sizes them in, and embed the same records as when every block read its files again."""

from __future__ import annotations

from collections import Counter

import pytest

from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.verdict_reader import VerdictReader
from speceval.analysis.rendering.samples import samples
from speceval.analysis.tables.panel import panel_verdicts
from tests.analysis.test_evidence import write_original_compliance


def embedded(root, monkeypatch, block: int, ahead: bool) -> tuple[list, Counter]:
    """The embedded records and the reads through of each file, `pick` sizing `block` verdicts at a time; without
    `ahead`, the reader is not told the candidates (each block reads what it asks, as before)."""
    monkeypatch.setattr(samples, "SIZE_BLOCK", block)
    reads: Counter = Counter()
    through = VerdictReader.at_positions

    def counted(reader, file, positions):
        reads[file] += 1
        return through(reader, file, positions)

    monkeypatch.setattr(VerdictReader, "at_positions", counted)
    if not ahead:
        pick = samples.pick
        monkeypatch.setattr(samples, "pick", lambda *args: pick(*args[:5]))
    folded = fold_verdicts([root])
    records, total = samples.sample_records(folded.columns, panel_verdicts(folded.columns))
    assert total > 5 * block  # several blocks
    return records, reads


@pytest.mark.parametrize("block", [7, 40])
def test_each_original_file_is_read_through_once_and_the_samples_are_the_same(tmp_path, monkeypatch, block):
    root = tmp_path / "batched_compliance"
    write_original_compliance(root, statements=3, inputs=8, specs=("openai",))
    once, reads = embedded(root, monkeypatch, block, ahead=True)
    files = sorted(root.rglob("results/*.json"))
    assert sorted(reads) == files and set(reads.values()) == {1}
    again, reads_again = embedded(root, monkeypatch, block, ahead=False)
    assert max(reads_again.values()) > 1  # the blocks did read files again before
    assert once == again and len(once) > 0

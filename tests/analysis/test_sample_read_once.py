"""The report's samples (verdicts and comparisons) read each file decoded whole (the original SpecEval's) through
once, however many blocks `pick` sizes them in, and embed the same records as when every block read its files
again."""

from __future__ import annotations

from collections import Counter

import pytest

from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.verdict_reader import VerdictReader
from speceval.analysis.rendering.samples import read_back, samples
from speceval.analysis.tables.panel import panel_verdicts
from tests.analysis.test_evidence import write_original_compliance, write_original_ranking


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


def embedded_rankings(root, monkeypatch, block: int, ahead: bool) -> tuple[list, Counter]:
    """The embedded comparisons and the reads through of each ranking file, as `embedded` for verdicts."""
    monkeypatch.setattr(samples, "SIZE_BLOCK", block)
    reads: Counter = Counter()
    through = read_back.ranking_file_rows

    def counted(wanted):
        reads.update(wanted.keys())
        return through(wanted)

    monkeypatch.setattr(read_back, "ranking_file_rows", counted)
    if not ahead:
        pick = samples.pick
        monkeypatch.setattr(samples, "pick", lambda *args: pick(*args[:5]))
    columns = fold_verdicts([root]).ranking_columns
    assert len(columns) > 5 * block
    return samples.ranking_samples(columns), reads


def test_each_original_ranking_file_is_read_through_once_and_the_samples_are_the_same(tmp_path, monkeypatch):
    root = tmp_path / "batched_rankings"
    for spec in ("openai", "anthropic"):
        for a, b in (("m1", "m2"), ("m2", "m1")):
            write_original_ranking(root, spec, "gpt-4.1", a, b, [1, -1, 0, 1, 1, -1, 0, 1, -1, 1])
    once, reads = embedded_rankings(root, monkeypatch, 7, ahead=True)
    assert sorted(reads) == sorted(root.rglob("results/*.json")) and set(reads.values()) == {1}
    again, reads_again = embedded_rankings(root, monkeypatch, 7, ahead=False)
    assert max(reads_again.values()) > 1
    assert once == again and len(once) == 40

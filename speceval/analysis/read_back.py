"""The verdicts the sample view shows, read back from their results files (the columns hold no text).

A verdict of a file speceval wrote is read alone at the byte offset where its entry starts (`load.walk` found it
while folding), so a page's few thousand samples out of a million verdicts cost a few thousand small reads, not a
second pass over every file; a file decoded whole (another writer's key order, the original SpecEval's) is read
through to the positions wanted. What is read back must be the verdict that was folded: its input and answer
digests are checked against the columns, and a file that changed in between is refused.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from speceval.analysis.columns import NO_OFFSET, NO_VERDICT, VerdictColumns, digest
from speceval.analysis.load import ComplianceRow, VerdictReader
from speceval.analysis.panel import Panel
from speceval.analysis.sample_record import record_size, sample_record
from speceval.errors import InputError


class ReadBack:
    """The page records of verdicts of `both` (a report's judges' verdicts, `columns`, then its panel's), read
    back when first asked and kept until `keep_only` lets them go: `pick` asks the sizes of the records it may
    embed (a block at a time, stopping at the page's budget), and the records embedded are those already read."""

    def __init__(self, columns: VerdictColumns, both: VerdictColumns, panel: Panel | None) -> None:
        self._columns = columns
        self._both = both
        self._panel = panel
        self._records: dict[int, dict[str, str] | None] = {}
        self._files = VerdictReader()

    def sizes(self, at: np.ndarray) -> np.ndarray:
        """Bytes each verdict's record takes in the page (0 for one that cannot be read back: kept in memory only)."""
        return np.array([0 if record is None else record_size(record) for record in self.records(at)],
                        dtype=np.int64)

    def records(self, at: np.ndarray) -> list[dict[str, str] | None]:
        missing = [row for row in at.tolist() if row not in self._records]
        sources = self._both.source_row[missing].tolist() if missing else []
        by_file: dict[Path, list[tuple[int, int]]] = defaultdict(list)
        for row, source in zip(missing, sources, strict=True):
            path = self._columns.paths[self._columns.file[source]]
            if path is None:
                self._records[row] = None
            else:
                by_file[path].append((row, source))
        for path, wanted in by_file.items():
            read = self._read(path, sorted({source for _, source in wanted}))
            for row, source in wanted:
                self._records[row] = sample_record(self._shown_row(row, read[source]))
        return [self._records[row] for row in at.tolist()]

    def keep_only(self, rows: np.ndarray) -> None:
        kept = set(rows.tolist())
        self._records = {row: record for row, record in self._records.items() if row in kept}

    def _read(self, path: Path, sources: list[int]) -> dict[int, ComplianceRow]:
        """The verdicts at rows `sources` of the columns (all of file `path`), read back and checked."""
        c = self._columns
        offsets = c.offset[sources]
        if (offsets != NO_OFFSET).all():
            order = np.argsort(offsets, kind="stable")  # read front to back
            rows = self._files.at_offsets(path, offsets[order].tolist())
            read = {sources[i]: rows[k] for k, i in enumerate(order.tolist())}
        else:
            positions = {source: int(c.position[source]) for source in sources}
            by_position = self._files.at_positions(path, list(positions.values()))
            read = {source: by_position[position] for source, position in positions.items()}
        for source, row in read.items():
            if digest(row.input) != c.input[source] or digest(row.output) != c.output[source]:
                raise InputError(path, "not the compliance results file it was a moment ago (it changed while the "
                                       "report was made); make the report again")
        return read

    def _shown_row(self, row: int, read: ComplianceRow) -> ComplianceRow:
        """The verdict at `row` as a row: texts as read back, everything else from the columns."""
        both, panel = self._both, self._panel
        update: dict[str, object] = dict(both.facts[both.file[row]].model_dump())
        if row >= len(self._columns) and panel is not None:
            update.update(outcome=both.outcomes[both.outcome[row]],
                          explanation=panel.explanation(row - len(self._columns)),
                          compliant=None if both.compliant[row] == NO_VERDICT else bool(both.compliant[row]),
                          rating=None if np.isnan(both.rating[row]) else float(both.rating[row]), category=None,
                          problem=None)
        return read.model_copy(update=update)

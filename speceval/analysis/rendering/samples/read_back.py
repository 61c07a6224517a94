"""The verdicts and comparisons the sample views show, read back from their results files (the columns hold no
text).

An entry of a file speceval wrote is read alone at the byte offset where it starts (`load.walk` found it while
folding), so a page's few thousand samples out of a million verdicts cost a few thousand small reads, not a second
pass over every file; a file decoded whole (another writer's key order, the original SpecEval's) is read through to
the positions wanted. What is read back must be what was folded: its digests (and a comparison's index) are checked
against the columns, and a file that changed in between is refused.

Records are read when `pick` first asks their sizes (a block at a time, stopping at the page's budget) and kept
until `keep_only` lets go of those not embedded: each record is sized exactly as the page writes it, and no
verdict's size is computed while folding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from speceval.analysis.reading.column_codes import NO_OFFSET, digest
from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns
from speceval.analysis.reading.ranking_columns import RankingColumns
from speceval.analysis.reading.rows import ComplianceRow, RankingRow
from speceval.analysis.reading.verdict_reader import VerdictReader, ranking_file_rows, ranking_rows_at
from speceval.analysis.rendering.samples.ranking_record import ranking_record, ranking_texts
from speceval.analysis.rendering.samples.sample_record import SampleRecord, record_size, sample_record
from speceval.analysis.tables.panel import Panel
from speceval.errors import InputError, UsageError

Record = SampleRecord


class _Records(ABC):
    """Page records by row, read back when first asked (see the module docstring)."""

    def __init__(self) -> None:
        self._records: dict[int, Record | None] = {}
        self._whole: dict[Path, list[int]] = {}
        """Per file decoded whole: the expected rows not yet read (see `expect`)."""

    def expect(self, rows: np.ndarray) -> None:
        """`rows` may all be asked (`pick`'s candidates). A file decoded whole (another writer's key order, the
        original SpecEval's) is read through to give any of its rows: its expected rows are read with the first of
        them. `pick` sizes a block of 2,500 at a time, and each block read every such file again (eight times over
        the original's folders: 12,485 reads through of its 2,124 files, most of a report over them)."""
        self._whole = defaultdict(list)
        for row, path in self._decoded_whole(rows):
            if path is not None:
                self._whole[path].append(row)

    def _ahead(self, path: Path, asked: set[int]) -> list[int]:
        """The expected rows of `path` (decoded whole) not asked and not yet read: to read with those asked."""
        return [row for row in self._whole.pop(path, []) if row not in asked and row not in self._records]

    @abstractmethod
    def _decoded_whole(self, rows: np.ndarray) -> Iterable[tuple[int, Path | None]]:
        """Of `rows`, those in files decoded whole (no byte offsets), each with its file."""

    def sizes(self, at: np.ndarray) -> np.ndarray:
        """Bytes each record takes in the page (0 for one that cannot be read back: kept in memory only)."""
        return np.array([0 if record is None else record_size(record) for record in self.records(at)], dtype=np.int64)

    def records(self, at: np.ndarray) -> list[Record | None]:
        rows = at.tolist()
        missing = [row for row in rows if row not in self._records]
        if missing:
            self._records.update(self._read(missing))
        return [self._records[row] for row in rows]

    def keep_only(self, rows: np.ndarray) -> None:
        kept = set(rows.tolist())
        self._records = {row: record for row, record in self._records.items() if row in kept}

    @abstractmethod
    def _read(self, rows: list[int]) -> dict[int, Record | None]:
        """The records of `rows`, read from their files (None: a row with no file to read)."""


def _changed(path: Path, what: str) -> InputError:
    return InputError(
        path,
        f"not the {what} results file it was a moment ago (it changed while the report was "
        "made); make the report again",
    )


class ReadBack(_Records):
    """The page records of verdicts of `both` (a report's judges' verdicts, `columns`, then its panel's)."""

    def __init__(self, columns: VerdictColumns, both: VerdictColumns, panel: Panel | None) -> None:
        super().__init__()
        self._columns = columns
        self._both = both
        self._panel = panel
        self._files = VerdictReader()

    def _decoded_whole(self, rows: np.ndarray) -> Iterable[tuple[int, Path | None]]:
        c, sources = self._columns, self._both.source_row[rows]
        whole = c.offset[sources] == NO_OFFSET
        return zip(rows[whole].tolist(), [c.paths[f] for f in c.file[sources[whole]].tolist()], strict=True)

    def _read(self, rows: list[int]) -> dict[int, Record | None]:
        found: dict[int, Record | None] = {}
        by_file: dict[Path, list[tuple[int, int]]] = defaultdict(list)
        for row, source in zip(rows, self._both.source_row[rows].tolist(), strict=True):
            path = self._columns.paths[self._columns.file[source]]
            if path is None:
                found[row] = None
            else:
                by_file[path].append((row, source))
        for path, wanted in list(by_file.items()):
            ahead = self._ahead(path, {row for row, _ in wanted})
            wanted.extend(zip(ahead, self._both.source_row[ahead].tolist(), strict=True))
        for path, wanted in by_file.items():
            read = self._file_rows(path, sorted({source for _, source in wanted}))
            for row, source in wanted:
                found[row] = sample_record(self._shown_row(row, read[source]))
        return found

    def _file_rows(self, path: Path, sources: list[int]) -> dict[int, ComplianceRow]:
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
        if any(
            digest(row.input) != c.input[source] or digest(row.output) != c.output[source]
            for source, row in read.items()
        ):
            raise _changed(path, "compliance")
        return read

    def _shown_row(self, row: int, read: ComplianceRow) -> ComplianceRow:
        """The verdict at `row` as a row: texts as read back, everything else from the columns."""
        both, panel = self._both, self._panel
        update: dict[str, object] = dict(both.facts[both.file[row]].model_dump())
        if row >= len(self._columns) and panel is not None:
            update.update(
                outcome=both.outcomes[both.outcome[row]],
                explanation=panel.explanation(row - len(self._columns)),
                compliant=None if both.compliant[row] == NO_VERDICT else bool(both.compliant[row]),
                rating=None if np.isnan(both.rating[row]) else float(both.rating[row]),
                category=None,
                problem=None,
            )
        return read.model_copy(update=update)


class RankingReadBack(_Records):
    """The page records of comparisons: the input, both answers and the explanation read back from their files."""

    def __init__(self, columns: RankingColumns) -> None:
        super().__init__()
        self._c = columns

    def _decoded_whole(self, rows: np.ndarray) -> Iterable[tuple[int, Path | None]]:
        c = self._c
        whole = rows[c.offset[rows] == NO_OFFSET]
        return zip(whole.tolist(), [c.paths[f] for f in c.file[whole].tolist()], strict=True)

    def _read(self, rows: list[int]) -> dict[int, Record | None]:
        c = self._c
        by_file: dict[Path, list[int]] = defaultdict(list)
        for at in rows:
            path = c.paths[c.file[at]]
            if path is None:
                raise UsageError(
                    "ranking samples need comparisons folded from their files (`fold_verdicts`): "
                    "columns built from rows have no file to read their texts back from"
                )
            by_file[path].append(at)
        found: dict[int, Record | None] = {}
        for path, wanted in by_file.items():
            wanted += self._ahead(path, set(wanted))
            read = self._file_rows(path, wanted)
            for at in wanted:
                f = c.facts[c.file[at]]
                found[at] = {
                    **ranking_record(
                        f.judge, f.model_a, f.model_b, f.variation, f.run, f.statement_id, ranking_texts(read[at])
                    )
                }
        return found

    def _file_rows(self, path: Path, rows: list[int]) -> dict[int, RankingRow]:
        c = self._c
        if (c.offset[rows] != NO_OFFSET).all():  # each read alone where the fold found it
            rows = sorted(rows, key=lambda at: int(c.offset[at]))
            read = dict(zip(rows, ranking_rows_at(path, [int(c.offset[at]) for at in rows]), strict=True))
        else:  # a file decoded whole (the original SpecEval's): read through to the positions
            ((_, texts),) = ranking_file_rows({path: [int(c.position[at]) for at in rows]})
            read = {at: texts[int(c.position[at])] for at in rows}
        if any(row.index != c.index[at] or digest(row.input) != c.input[at] for at, row in read.items()):
            raise _changed(path, "ranking")
        return read

"""Pairwise comparisons as compact columns: what the report's ranking tables and ranking samples compute from
(issue 25), a few dozen bytes per comparison instead of a `RankingRow` with its input text.

A ranking results file's comparisons share spec, judge, the ordered pair (A shown first), statement, variation, run
and source: those are kept once per file (`RankingFacts`). Each comparison keeps a code of its file, its position in
the file and the byte offset where its entry starts (where the sample view reads it back), its task index (both
orders of an input share it), a 64-bit digest of its input (the cluster of every interval; see
`speceval.analysis.reading.column_codes` on collisions), its outcome and its rank. Comparisons keep the order they were
read in
(files in walk order, entries in file order): every table numbers clusters in order of first appearance, as it did
from rows, so every number is the same.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from speceval.analysis.reading.column_codes import (
    NO_OFFSET,
    Codes,
    FilesTable,
    RowColumns,
    digest,
    file_offsets,
)
from speceval.analysis.reading.columns import JUDGED
from speceval.analysis.reading.rows import RankingRow
from speceval.analysis.statistics.codes import index_array

TIE = "tie"
NO_RANK = 127
"""`rank` of a comparison without one (not judged, or judged without a parsed rank)."""


class RankingFacts(BaseModel):
    """What every comparison of one ranking results file shares."""

    spec: str
    judge: str
    model_a: str
    model_b: str
    statement_id: str
    variation: str
    run: int
    source: str
    synthetic: bool


class RankingColumnsBuilder(FilesTable[RankingFacts]):
    """Collects comparisons one at a time (a file's rows as they are read, then let go) into growable arrays."""

    def __init__(self) -> None:
        super().__init__()
        self.index = array("q")
        self.rank = array("b")

    def add(self, row: RankingRow, path: Path | None = None, position: int = 0, facts: int | None = None) -> None:
        """Fold one comparison in (`path` and `position`: where the sample view can read it back; `facts`: the
        code of its file's facts when the caller knows it, see `add_file`)."""
        code = self.row_facts_code(RankingFacts, row, path) if facts is None else facts
        self.file.append(code)
        self.position.append(position)
        self.index.append(row.index)
        self.input.append(digest(row.input))
        self.outcome.append(self.outcomes.code(row.outcome))
        self.rank.append(NO_RANK if row.rank is None else row.rank)
        self.offset.append(NO_OFFSET)

    def add_file(self, path: Path, rows: Iterable[RankingRow], offsets: array[int] | None = None) -> None:
        """Fold in every comparison of one results file (whose rows share their file's facts), as they come;
        `offsets`: where each row's entry starts in the file, filled as the rows are read (see `load.walk`)."""
        code = None
        start = len(self.file)
        for position, row in enumerate(rows):
            if code is None:
                code = self.row_facts_code(RankingFacts, row, path)
            self.add(row, path, position, code)
        self.offset[start:] = file_offsets(offsets, len(self.file) - start)

    def build(self) -> RankingColumns:
        return RankingColumns(
            **self.row_columns(),
            index=np.frombuffer(self.index, dtype=np.int64),
            rank=np.frombuffer(self.rank, dtype=np.int8),
        )


class RankingColumns(RowColumns[RankingFacts]):
    """Every comparison of a report, one array element per comparison (see the module docstring)."""

    def __init__(
        self,
        *,
        facts: list[RankingFacts],
        paths: list[Path | None],
        outcomes: list[str],
        file: np.ndarray,
        position: np.ndarray,
        index: np.ndarray,
        input: np.ndarray,
        outcome: np.ndarray,
        rank: np.ndarray,
        offset: np.ndarray | None = None,
    ) -> None:
        super().__init__(facts, paths, outcomes, file, position, input, outcome, offset)
        self.index = index
        self.rank = rank
        # Model names and the word "tie" share one numbering, so a winner is one code whichever it is (a model
        # named "tie" is then a tie, as it was when winners were compared as text).
        self.names = Codes()
        self.tie = self.names.code(TIE)
        self.model_a = np.array([self.names.code(f.model_a) for f in facts], dtype=np.int32)
        self.model_b = np.array([self.names.code(f.model_b) for f in facts], dtype=np.int32)

    def judged(self) -> np.ndarray:
        """Positions of the comparisons with a winner (or a tie): judged, with a rank (4-byte indices)."""
        code = self.outcomes.index(JUDGED) if JUDGED in self.outcomes else -1
        return index_array(np.flatnonzero((self.outcome == code) & (self.rank != NO_RANK)))

    def by_file(self, rows: np.ndarray) -> dict[int, np.ndarray]:
        """Of `rows` (comparisons, in order): file code → the indices into `rows` of its comparisons, in order."""
        if not len(rows):
            return {}
        files = self.file[rows]
        order = index_array(np.argsort(files, kind="stable"))
        files = files[order]
        starts = np.flatnonzero(np.r_[True, files[1:] != files[:-1]])
        return {int(files[start]): part for start, part in zip(starts, np.split(order, starts[1:]), strict=True)}

    def winner(self, rows: np.ndarray) -> np.ndarray:
        """Per comparison at `rows` (judged ones): the name code (`names`) of its winner, or of "tie"."""
        files, rank = self.file[rows], self.rank[rows]
        found: np.ndarray = np.where(
            rank == 1, self.model_a[files], np.where(rank == -1, self.model_b[files], self.tie)
        )
        return found

    def file_keys(
        self, fields: Sequence[str], unordered_pair: bool = False
    ) -> tuple[np.ndarray, list[tuple[object, ...]]]:
        """Per file: a code of the values of its `fields` (with the pair of models in either order, when asked),
        codes in order of first appearance among the files; and the values of each code."""
        index: dict[tuple[object, ...], int] = {}
        codes = np.array(
            [
                index.setdefault(
                    tuple(getattr(f, name) for name in fields)
                    + ((frozenset((f.model_a, f.model_b)),) if unordered_pair else ()),
                    len(index),
                )
                for f in self.facts
            ],
            dtype=np.int64,
        )
        return codes, list(index)

    def cluster(self, rows: np.ndarray) -> np.ndarray:
        """Per comparison at `rows`: a code of its (spec, statement, input), the cluster of every interval (both
        orders and every run of an input are one cluster); numbered statement by statement (inputs sorted within
        each, not in order of first appearance), so each sort is one statement's comparisons."""
        found = np.zeros(len(rows), dtype=np.int32)
        offset = 0
        for members in self.by_stratum(rows):
            distinct, codes = np.unique(self.input[rows[members]], return_inverse=True)
            found[members] = codes.reshape(-1) + offset
            offset += len(distinct)
        return found

    def by_stratum(self, rows: np.ndarray) -> list[np.ndarray]:
        """The positions in `rows` of each (spec, statement)'s comparisons."""
        stratum = self.stratum(rows)
        order = index_array(np.argsort(stratum, kind="stable"))
        bounds = np.flatnonzero(np.diff(stratum[order])) + 1
        return [members for members in np.split(order, bounds) if len(members)]

    def stratum(self, rows: np.ndarray) -> np.ndarray:
        """Per comparison at `rows`: a code of its (spec, statement)."""
        statement, _ = self.file_keys(("spec", "statement_id"))
        found: np.ndarray = statement.astype(np.int32)[self.file[rows]]
        return found


def as_ranking_columns(rows: RankingColumns | Iterable[RankingRow]) -> RankingColumns:
    """The library's ranking functions take rows (a list of `RankingRow`) or columns; they compute on columns."""
    if isinstance(rows, RankingColumns):
        return rows
    builder = RankingColumnsBuilder()
    for row in rows:
        builder.add(row)
    return builder.build()

"""Compliance verdicts as compact columns: what the report computes from, a few bytes per verdict (issue 25).

A results file's verdicts share everything but the answer: spec, judge, candidate, variation, run, statement, its
type and authority, mode, prompt version, source. Those are kept once per file (`FileFacts`); each verdict keeps
only a code for its file, its position in the file, 64-bit digests of its input and answer (the identities every
cluster, panel and agreement needs: equal texts, equal digests), the answer's length, its outcome, verdict, rating
and category codes, and where its entry starts in the file (a byte offset). No text is held: the sample view reads
the few verdicts it shows back from their files, each alone at its offset
(`speceval.analysis.rendering.samples.samples`).

The codes kept per file and per verdict are made in `column_codes`; rows and columns are turned into each other in
`column_rows`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from speceval.analysis.reading.column_codes import (
    Codes,
    FileFacts,
    FilesTable,
    RowColumns,
    file_offsets,
    packed_digests,
)
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import dense_codes
from speceval.analysis.statistics.codes import dense, first_seen, index_array

JUDGED = "judged"
NO_VERDICT = -1
"""`compliant` of a verdict without one (unparsed, failed, a Likert or categorical judge)."""


class ColumnsBuilder(FilesTable[FileFacts]):
    """Collects verdicts one at a time (a file's rows, then dropped) into growable typed arrays."""

    def __init__(self) -> None:
        super().__init__()
        self.categories = Codes()
        self.output = array("q")
        self.output_chars = array("I")
        self.compliant = array("b")
        self.rating = array("d")
        self.category = array("h")
        self._scores: dict[int, float] = {}
        """Row → score of the rows that have one (panel rows in memory; a results file's verdicts have none)."""

    def add_file(self, path: Path | None, rows: Iterable[ComplianceRow], offsets: array[int] | None = None) -> None:
        """Fold in every verdict of one results file (whose rows share their file's facts), as they come;
        `offsets`: where each row's entry starts in the file, filled as the rows are read (see `load.walk`).
        A file's columns are gathered in local lists and appended at once (a million verdicts: seconds less than
        a call and nine appends per verdict)."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        code = self.row_facts_code(FileFacts, first, path)
        start = len(self.file)
        blake, outcome_code, category_code = hashlib.blake2b, self.outcomes.code, self.categories.code
        inputs, outputs = bytearray(), bytearray()
        chars: list[int] = []
        outcomes: list[int] = []
        compliant: list[int] = []
        rating: list[float] = []
        category: list[int] = []
        for row in itertools.chain([first], rows):
            inputs += blake(row.input.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            outputs += blake(row.output.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            chars.append(len(row.output))
            outcomes.append(outcome_code(row.outcome))
            compliant.append(NO_VERDICT if row.compliant is None else int(row.compliant))
            rating.append(math.nan if row.rating is None else float(row.rating))
            category.append(NO_VERDICT if row.category is None else category_code(row.category))
            if row.score is not None:
                self._scores[start + len(chars) - 1] = row.score
        count = len(chars)
        self.file.extend(itertools.repeat(code, count))
        self.position.extend(range(count))
        self.input.frombytes(packed_digests(inputs))
        self.output.frombytes(packed_digests(outputs))
        self.output_chars.extend(chars)
        self.outcome.extend(outcomes)
        self.compliant.extend(compliant)
        self.rating.extend(rating)
        self.category.extend(category)
        self.offset.extend(file_offsets(offsets, count))

    def build(self) -> VerdictColumns:
        return VerdictColumns(
            **self.row_columns(),
            categories=self.categories.names,
            output=np.frombuffer(self.output, dtype=np.int64),
            output_chars=np.frombuffer(self.output_chars, dtype=np.uint32),
            compliant=np.frombuffer(self.compliant, dtype=np.int8),
            rating=np.frombuffer(self.rating, dtype=np.float64),
            category=np.frombuffer(self.category, np.int16),
            score=self._score_column(),
        )

    def _score_column(self) -> np.ndarray | None:
        if not self._scores:
            return None
        score = np.full(len(self.file), math.nan)
        score[list(self._scores)] = list(self._scores.values())
        return score


class VerdictColumns(RowColumns[FileFacts]):
    """Every compliance verdict of a report, one array element per verdict (see the module docstring).

    `score` is a panel's share of compliant verdicts (NaN for a single judge's verdict); `source_row` is, for a
    panel verdict, the row of the first judge's verdict on the same answer (its own row otherwise)."""

    def __init__(
        self,
        *,
        facts: list[FileFacts],
        paths: list[Path | None],
        outcomes: list[str],
        categories: list[str],
        file: np.ndarray,
        position: np.ndarray,
        input: np.ndarray,
        output: np.ndarray,
        output_chars: np.ndarray,
        outcome: np.ndarray,
        compliant: np.ndarray,
        rating: np.ndarray,
        category: np.ndarray,
        offset: np.ndarray,
        score: np.ndarray | None = None,
        source_row: np.ndarray | None = None,
    ) -> None:
        super().__init__(facts, paths, outcomes, file, position, input, outcome, offset)
        self.categories = categories
        self.output, self.output_chars = output, output_chars
        self.compliant, self.rating, self.category = compliant, rating, category
        # Judges' verdicts have no score and are their own source: None, not two arrays of 8 bytes a verdict.
        self._score = score
        self._source_row = source_row
        self._derived: dict[str, np.ndarray] = {}

    @property
    def score(self) -> np.ndarray:
        return np.full(len(self.file), math.nan) if self._score is None else self._score

    @property
    def source_row(self) -> np.ndarray:
        return np.arange(len(self.file)) if self._source_row is None else self._source_row

    @classmethod
    def from_rows(cls, rows: Iterable[ComplianceRow]) -> VerdictColumns:
        """The columns of rows already in memory (the library's row-based functions compute through these)."""
        builder = ColumnsBuilder()
        for row in rows:  # each its own facts: rows in memory need not share them
            builder.add_file(None, [row])
        return builder.build()

    def fact(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Per verdict (of all, or of `rows`): the code of its file's `name` (spec, judge, model, ...), codes in
        sorted order of the values, so that sorting codes sorts names; `names(name)` turns codes back into values.

        Computed from a code per file when asked, not kept: a report asks for a handful of these, and keeping each
        per verdict cost more than the verdicts' own columns (issue 25)."""
        return self._gather(self.file_codes(name), rows)

    def file_codes(self, name: str) -> np.ndarray:
        """Per file (facts code): the code of its `name` (see `fact`)."""
        if name not in self._derived:
            values = [str(getattr(f, name)) for f in self.facts]
            names = sorted(set(values))
            index = {v: i for i, v in enumerate(names)}
            self._derived[name] = np.array(
                [index[v] for v in values], dtype=np.int16 if len(names) < 2**15 else np.int32
            )
            self._derived[name + "/names"] = np.array(names, dtype=object)
        return self._derived[name]

    def _gather(self, per_file: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        files = self.file if rows is None else self.file[rows]
        return per_file[files] if len(files) else np.zeros(0, dtype=np.int64)

    def names(self, name: str) -> np.ndarray:
        self.file_codes(name)
        return self._derived[name + "/names"]

    def code_of(self, name: str, value: str) -> int | None:
        found = np.flatnonzero(self.names(name) == value)
        return int(found[0]) if len(found) else None

    def runs(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Per verdict (of all, or of `rows`): its run number (an integer, not a code)."""
        if "run/int" not in self._derived:
            self._derived["run/int"] = np.array([f.run for f in self.facts], dtype=np.int32)
        return self._gather(self._derived["run/int"], rows)

    def stratum(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Per verdict (of all, or of `rows`): a code of its (spec, statement): the stratum of every interval
        clustered by input (codes in sorted order of the pairs among the files that hold verdicts)."""
        if "stratum/file" not in self._derived:
            present = np.bincount(self.file, minlength=len(self.facts))[: len(self.facts)] > 0
            pairs = dense(self.file_codes("spec")[present], self.file_codes("statement_id")[present])
            per_file = np.zeros(len(self.facts), dtype=np.int32)  # fewer (spec, statement) pairs than files
            per_file[present] = pairs
            self._derived["stratum/file"] = per_file
        return self._gather(self._derived["stratum/file"], rows)

    def cluster(self) -> np.ndarray:
        """Per verdict: a code of its input (spec, statement, input text): the cluster of every interval (kept:
        it takes a sort to find; 4 bytes a verdict up to 2^31 inputs)."""
        if "cluster" not in self._derived:
            # Numbered statement by statement (the codes `dense(stratum, input)` gives: strata in order, inputs
            # sorted within each), so the sort is one statement's verdicts at a time, not every verdict's.
            found = np.zeros(len(self), dtype=np.int32 if len(self) < 2**31 else np.int64)
            offset = 0
            for _, rows in grouped(self, None, "spec", "statement_id"):
                distinct, codes = np.unique(self.input[rows], return_inverse=True)
                found[rows] = codes.reshape(-1) + offset
                offset += len(distinct)
            self._derived["cluster"] = found
        return self._derived["cluster"]

    def judged(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Verdicts (of all, or of `rows`) that enter rates: judged, with a binary verdict (or a panel's share)."""
        outcome = self.outcome if rows is None else self.outcome[rows]
        compliant = self.compliant if rows is None else self.compliant[rows]
        found: np.ndarray = (outcome == self.outcome_code(JUDGED)) & (compliant != NO_VERDICT)
        if self._score is not None:
            score = self._score if rows is None else self._score[rows]
            found |= (outcome == self.outcome_code(JUDGED)) & ~np.isnan(score)
        return found

    def values(self, rows: np.ndarray | None = None) -> np.ndarray:
        """A judged verdict (of all, or of `rows`) as the number rates average: 1 or 0, or a panel's share
        (meaningless elsewhere)."""
        compliant = self.compliant if rows is None else self.compliant[rows]
        binary: np.ndarray = (compliant == 1).astype(float)
        if self._score is None:
            return binary
        score = self._score if rows is None else self._score[rows]
        found: np.ndarray = np.where(np.isnan(score), binary, score)
        return found

    def is_outcome(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        found: np.ndarray = (self.outcome if rows is None else self.outcome[rows]) == self.outcome_code(name)
        return found

    def stratum_of_cluster(self) -> np.ndarray:
        """Per cluster code (`cluster`): the code of its stratum (`stratum`)."""
        if "stratum_of_cluster" not in self._derived:
            found = np.zeros(int(self.cluster().max()) + 1 if len(self) else 0, dtype=np.int32)
            found[self.cluster()] = self.stratum()
            self._derived["stratum_of_cluster"] = found
        return self._derived["stratum_of_cluster"]

    def concat(self, other: VerdictColumns) -> VerdictColumns:
        """These verdicts followed by `other`'s. A panel's verdicts share these facts and code lists or extend
        them, and keep their codes and source rows; verdicts of another fold (the `scope: turn` judges') number
        their files, outcomes and categories apart, so theirs are renumbered after these."""
        if (
            _extends(other.facts, self.facts)
            and _extends(other.outcomes, self.outcomes)
            and _extends(other.categories, self.categories)
        ):
            return self._joined(other, other.facts, other.paths, other.outcomes, other.categories, {})
        outcomes = self.outcomes + [o for o in other.outcomes if o not in self.outcomes]
        categories = self.categories + [c for c in other.categories if c not in self.categories]
        outcome_codes = np.array([outcomes.index(o) for o in other.outcomes] or [0], dtype=np.int64)
        category_codes = np.array([categories.index(c) for c in other.categories] + [NO_VERDICT], dtype=np.int64)
        renumbered = {
            "file": other.file + len(self.facts),
            "outcome": outcome_codes[other.outcome],
            "category": category_codes[other.category],  # NO_VERDICT (-1) indexes the last: stays -1
            # a verdict of its own is its own source, now past these; a panel's sources are rows of the
            # judges' verdicts it was made of, which lead these (a report's sample view: judges, then
            # categorical and turn verdicts, then the panel's), so they stay where they are
            "source_row": other.source_row + len(self) if other._source_row is None else other._source_row,
        }
        return self._joined(other, self.facts + other.facts, self.paths + other.paths, outcomes, categories, renumbered)

    def _joined(
        self,
        other: VerdictColumns,
        facts: list[FileFacts],
        paths: list[Path | None],
        outcomes: list[str],
        categories: list[str],
        renumbered: dict[str, np.ndarray],
    ) -> VerdictColumns:
        def of_other(name: str) -> np.ndarray:
            return renumbered[name] if name in renumbered else getattr(other, name)

        lazy = {name for name in _OPTIONAL if getattr(self, "_" + name) is None and getattr(other, "_" + name) is None}
        arrays: dict[str, Any] = {name: np.concatenate([getattr(self, name), of_other(name)]) for name in _ARRAYS}
        arrays |= {
            name: None if name in lazy else np.concatenate([getattr(self, name), of_other(name)]) for name in _OPTIONAL
        }
        return VerdictColumns(facts=facts, paths=paths, outcomes=outcomes, categories=categories, **arrays)

    def outcome_code(self, name: str) -> int:
        return self.outcomes.index(name) if name in self.outcomes else -1

    def first_seen(self, column: str) -> np.ndarray:
        """Per verdict: the rank of its input (or answer) text in order of first appearance in the files: the
        order in which texts are numbered where an order matters (a bootstrap's clusters), without the texts
        (computed when asked: only the agreement of several judges needs it)."""
        return first_seen(getattr(self, column))

    def take(self, rows: np.ndarray) -> VerdictColumns:
        """The verdicts at `rows` (indices or a mask), as columns of their own."""
        return VerdictColumns(
            facts=self.facts,
            paths=self.paths,
            outcomes=self.outcomes,
            categories=self.categories,
            **{name: getattr(self, name)[rows] for name in _ARRAYS},
            score=None if self._score is None else self._score[rows],
            # a judge's verdict is its own source, wherever it now stands; a panel's keeps its
            source_row=None if self._source_row is None else self._source_row[rows],
        )


_ARRAYS = (
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
)
_OPTIONAL = ("score", "source_row")
"""Arrays a judge's verdicts need not hold (see `VerdictColumns.score`)."""


def _extends(longer: list, shorter: list) -> bool:  # type: ignore[type-arg]
    return longer is shorter or longer[: len(shorter)] == shorter


def grouped(c: VerdictColumns, members: np.ndarray | None, *fields: str) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The verdicts (`members`, or all) grouped by the given facts, groups in sorted order of the facts' values
    (as text: run 10 sorts before run 2, as the report always sorted them)."""
    if not len(c.facts) or not len(c) or (members is not None and not len(members)):
        return []
    # Every field is a fact of the verdict's file: the groups are found among the files (a few hundred) and each
    # verdict takes its file's group, one sort of a code per verdict rather than a sort over every field.
    per_file = dense(*(c.file_codes(f) for f in fields)).astype(np.int32)  # fewer groups than files
    files = c.file if members is None else c.file[members]
    if len(files) > 1 and not (files[1:] >= files[:-1]).all():
        return _sorted_groups(c, members, fields, per_file)
    # Files are numbered as they are folded, one after another: each file's verdicts are one run of rows, and a
    # group is its files' runs in row order (what a stable sort of the verdicts by group gives), found among the
    # files without sorting a code per verdict.
    codes = np.arange(len(c.facts))
    starts, ends = np.searchsorted(files, codes, "left"), np.searchsorted(files, codes, "right")
    del files
    present = np.flatnonzero(ends > starts)
    by_group = present[np.argsort(per_file[present], kind="stable")]
    bounds = np.flatnonzero(np.diff(per_file[by_group])) + 1
    found = []
    for group_files in np.split(by_group, bounds):
        pieces = [
            np.arange(starts[f], ends[f], dtype=np.int32 if len(c) < 2**31 else np.int64)
            if members is None
            else members[starts[f] : ends[f]]
            for f in group_files
        ]
        rows = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        found.append((_group_key(c, fields, int(group_files[0])), rows))
    return found


def _sorted_groups(
    c: VerdictColumns, members: np.ndarray | None, fields: tuple[str, ...], per_file: np.ndarray
) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """`grouped` of verdicts whose files are not in row order (columns joined or taken out of order): by a stable
    sort of their group codes."""
    group = c._gather(per_file, members)
    order = index_array(np.argsort(group, kind="stable"))
    group = group[order]
    bounds = np.flatnonzero(group[1:] != group[:-1]) + 1
    del group
    return [
        (_group_key(c, fields, int(c.file[rows[0]])), rows)
        for rows in (indices if members is None else members[indices] for indices in np.split(order, bounds))
    ]


def _group_key(c: VerdictColumns, fields: tuple[str, ...], file: int) -> tuple[str, ...]:
    return tuple(str(c.names(f)[c.file_codes(f)[file]]) for f in fields)


def local_clusters(c: VerdictColumns, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The input clusters of `members` numbered 0..G-1, and each one's stratum (statement) code."""
    clusters = dense_codes(c.cluster()[members])
    strata = np.zeros(int(clusters.max()) + 1 if len(clusters) else 0, dtype=np.int32)  # fewer statements than 2^31
    strata[clusters] = c.stratum(members)
    return clusters, strata

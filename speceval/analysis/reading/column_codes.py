"""What the columns keep once per results file and, per verdict, instead of text (split from `columns`; the
ranking columns, `ranking_columns`, build on it too): a file's facts and path kept once (`FilesTable`), strings
interned to small codes (`Codes`), a text as a 64-bit digest, where an entry starts in its file as a 4-byte offset.

Digests of 8 bytes: the chance that two different texts among a million share one is about 3e-8.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from pydantic import BaseModel

from speceval.analysis.reading.rows import ComplianceRow

_Facts = TypeVar("_Facts", bound=BaseModel)

NO_OFFSET = 2**32 - 1
"""`offset` of a verdict whose file was decoded whole (not as speceval writes it), or of any verdict of a file
past 4 GiB: read back by its position instead (an offset is kept in 4 bytes)."""


def file_offsets(offsets: array[int] | None, count: int) -> array[int]:
    """Where a file's `count` entries start, as the columns keep them (`NO_OFFSET` for every one when unknown)."""
    if offsets is not None and len(offsets) == count and (not count or offsets[-1] < NO_OFFSET):  # (increasing)
        return array("I", offsets)
    return array("I", [NO_OFFSET]) * count


class FileFacts(BaseModel):
    """What every verdict of one results file shares."""

    spec: str
    judge: str
    model: str
    variation: str
    run: int
    statement_id: str
    statement_type: str
    authority_level: str
    mode: str
    prompt_version: str
    source: str
    synthetic: bool
    candidate_settings: str | None = None


def digest(text: str) -> int:
    """A text's identity as a signed 64-bit integer (see the module docstring for collisions)."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little", signed=True
    )


def packed_digests(packed: bytearray) -> bytearray:
    """Digests as `blake2b(...).digest()` gives them, one after another, in the byte order of the machine's
    8-byte integers: what `digest` reads them as (little-endian)."""
    if sys.byteorder == "big":
        swapped = array("q", bytes(packed))
        swapped.byteswap()
        return bytearray(swapped.tobytes())
    return packed


def facts_from(cls: type[_Facts], row: BaseModel) -> _Facts:
    """`cls` (what every row of one results file shares) taken from one of the file's rows: its same-named fields."""
    return cls(**{name: getattr(row, name) for name in cls.model_fields})


def facts_of(row: ComplianceRow) -> FileFacts:
    return facts_from(FileFacts, row)


class Codes:
    """Strings interned to small integers, in order of first appearance."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, name: str) -> int:
        found = self._index.get(name)
        if found is None:
            found = self._index[name] = len(self.names)
            self.names.append(name)
        return found


class FilesTable(Generic[_Facts]):
    """What the verdicts of each results file share (its facts) and where the file is, each kept once: a verdict
    keeps the code of its file's (the base of the compliance and the ranking columns' builders)."""

    def __init__(self) -> None:
        self.facts: list[_Facts] = []
        self.paths: list[Path | None] = []
        self._facts_index: dict[tuple[object, ...], int] = {}
        self._row_index: dict[tuple[object, ...], int] = {}
        # What every row keeps, of either kind: its file's code, its position and byte offset there (where the
        # sample view reads it back), its input's digest and its outcome's code.
        self.outcomes = Codes()
        self.file = array("I")
        self.position = array("I")
        self.input = array("q")
        self.outcome = array("B")
        self.offset = array("I")

    def row_columns(self) -> dict[str, Any]:
        """The columns every row keeps, as `RowColumns` takes them (the arrays viewed, not copied)."""
        return {
            "facts": self.facts,
            "paths": self.paths,
            "outcomes": self.outcomes.names,
            "file": np.frombuffer(self.file, dtype=np.uint32),
            "position": np.frombuffer(self.position, dtype=np.uint32),
            "input": np.frombuffer(self.input, dtype=np.int64),
            "outcome": np.frombuffer(self.outcome, dtype=np.uint8),
            "offset": np.frombuffer(self.offset, dtype=np.uint32),
        }

    def row_facts_code(self, cls: type[_Facts], row: BaseModel, path: Path | None) -> int:
        """`facts_code(facts_from(cls, row), path)`, found by the row's own field values when a row with the same
        ones came before: rows in memory repeat few facts (a simulated ranking: 85,000 comparisons of 6), and a
        facts model built, validated and dumped for each was 40% of folding them."""
        values = (*(getattr(row, name) for name in cls.model_fields), path)
        code = self._row_index.get(values)
        if code is None:
            code = self._row_index[values] = self.facts_code(facts_from(cls, row), path)
        return code

    def facts_code(self, facts: _Facts, path: Path | None) -> int:
        key = (*facts.model_dump().values(), path)
        code = self._facts_index.get(key)
        if code is None:
            code = self._facts_index[key] = len(self.facts)
            self.facts.append(facts)
            self.paths.append(path)
        return code


class RowColumns(Generic[_Facts]):
    """The columns every row keeps, of either kind (`FilesTable` collects them): the base of the compliance and
    the ranking columns. `offset` None: every row is read back by its position (`NO_OFFSET`)."""

    def __init__(
        self,
        facts: list[_Facts],
        paths: list[Path | None],
        outcomes: list[str],
        file: np.ndarray,
        position: np.ndarray,
        input: np.ndarray,
        outcome: np.ndarray,
        offset: np.ndarray | None,
    ) -> None:
        self.facts = facts
        self.paths = paths
        self.outcomes = outcomes
        self.file = file
        self.position = position
        self.input = input
        self.outcome = outcome
        self.offset = np.full(len(file), NO_OFFSET, dtype=np.uint32) if offset is None else offset
        """Where each row's entry starts in its file (`NO_OFFSET`: read back by its position)."""

    def __len__(self) -> int:
        return len(self.file)

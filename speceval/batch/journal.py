"""`realtime/outcomes.jsonl`: every finished request of a realtime run, appended durably as it finishes.

One JSON line per final outcome, written with one `write` call, flushed and fsynced before the worker takes its
next request, so a SIGKILL loses at most the requests in flight. A kill in the middle of a write leaves a torn
last line: reading skips it, and opening for append first cuts it off (appending after it would glue the next
line to the fragment). The engine merges the journal into `results/` periodically and at the end; `results/`
stays the format every pipeline reads, the journal is the crash-safe log behind it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, TypeAdapter, ValidationError

from speceval.batch.records import SCHEMA_VERSION, ResultRecord
from speceval.paths import safe_filename

logger = logging.getLogger(__name__)

JOURNAL_NAME = "realtime/outcomes.jsonl"
_RESULTS = TypeAdapter(list[ResultRecord])


class JournalEntry(BaseModel):
    """One line of the journal: which statement, and the result record as `results/` will hold it."""

    schema_version: int = SCHEMA_VERSION
    statement_id: str
    record: ResultRecord


class Journal:
    """Append-only, fsynced outcome log of one run directory (thread-safe)."""

    def __init__(self, run_dir: Path):
        """Locate the journal of `run_dir` (nothing is opened until `open`)."""
        self.path = Path(run_dir) / JOURNAL_NAME
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None

    def read(self) -> Iterator[JournalEntry]:
        """Every complete entry, oldest first. A torn last line (a kill mid-write) is skipped."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            lines = handle.read().split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield JournalEntry.model_validate_json(line)
            except ValidationError:
                if number == len(lines):
                    logger.info("%s: ignoring a torn last line (the process was killed while writing it)", self.path)
                else:
                    logger.warning("%s, line %d: not a journal entry; skipped", self.path, number)

    def open(self) -> None:
        """Open for appending, first cutting off a torn last line."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size:
                handle.seek(max(0, size - 65536))
                tail = handle.read()
                if not tail.endswith(b"\n"):
                    cut = tail.rfind(b"\n")
                    keep = size - len(tail) + cut + 1 if cut >= 0 else (0 if size <= 65536 else None)
                    if keep is None:
                        # A torn line longer than the tail we read: find its start the slow way.
                        handle.seek(0)
                        keep = handle.read().rfind(b"\n") + 1
                    handle.truncate(keep)
                    handle.flush()
                    os.fsync(handle.fileno())
        self._file = self.path.open("ab")

    def append(self, entry: JournalEntry) -> None:
        """Write one entry durably (flushed and fsynced before returning)."""
        self.append_many([entry])

    def append_many(self, entries: list[JournalEntry]) -> None:
        """Write a block of entries durably with one write and one fsync (a torn write loses only its tail)."""
        data = b"".join(entry.model_dump_json().encode("utf-8") + b"\n" for entry in entries)
        with self._lock:
            if self._file is None:
                raise RuntimeError("journal is not open")
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def final_records(run_dir: Path, results_dir: Path) -> dict[tuple[str, int], ResultRecord]:
    """Each input's current record of a run sent without provider jobs (realtime or Ray): `results/` plus journal
    lines not yet merged into it (a run killed between merges), a success never replaced. Keyed by (the results
    file's stem, original index)."""
    records: dict[tuple[str, int], ResultRecord] = {}
    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        for record in _RESULTS.validate_json(path.read_bytes()):
            records[(path.stem, record.original_index)] = record
    for entry in Journal(run_dir).read():
        # results/ names files by a safe form of the statement id; the journal has the id itself
        key = (safe_filename(entry.statement_id), entry.record.original_index)
        current = records.get(key)
        if current is None or current.outcome.value != "succeeded":
            records[key] = entry.record
    return records


def outcome_counts(run_dir: Path, results_dir: Path) -> Counter[str]:
    """Outcomes of a run sent without provider jobs (`final_records`), one per input."""
    return Counter(record.outcome.value for record in final_records(run_dir, results_dir).values())

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
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ValidationError

from speceval.batch.records import SCHEMA_VERSION, ResultRecord

logger = logging.getLogger(__name__)

JOURNAL_NAME = "realtime/outcomes.jsonl"


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

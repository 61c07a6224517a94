"""One process at a time per run directory.

Two processes driving the same run (the same command typed in two terminals: the second finds the first's
unfinished run and resumes it) would each submit the same pending chunk and pay for it twice. An engine therefore
holds an exclusive `flock` on `<run_dir>/.speceval.lock` from `start` until it stops; a second engine on the same
directory is refused before it submits anything. The kernel drops the lock when the holder dies, SIGKILL included,
so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TextIO

from speceval.errors import RunStateError

LOCK_NAME = ".speceval.lock"


class RunLock:
    """The exclusive lock of one run directory (not reentrant: one holder per process and directory)."""

    def __init__(self, run_dir: Path):
        """Name the lock of `run_dir`; nothing is taken until `acquire`."""
        self.path = Path(run_dir) / LOCK_NAME
        self._file: TextIO | None = None

    def acquire(self) -> None:
        """Take the lock, or raise `RunStateError` naming the process that holds it."""
        if self._file is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise RunStateError(
                f"{self.path.parent} is being worked on by another speceval process (pid {holder}); "
                "wait for it to finish or stop it (Ctrl+C keeps its state), then resume"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

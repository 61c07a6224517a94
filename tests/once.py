"""A fixture's data built once per test session, whichever pytest-xdist worker asks first.

A module-scoped fixture runs once per worker that runs a test of its module, and `--dist worksteal` spreads a
module's tests over the workers: the full suite of 2026-11-29 built tests/analysis/test_frames.py's offline
experiment four times (68, 66, 58 and 21 s of wall each on a loaded machine), and test_summary.py's and
test_original_export.py's reports twice. Here the first worker to ask builds the data under a lock in the session's
shared temporary root; the others wait for it and read the same folder (and a copy of the builder's return value).
The tests that use such data only read it; a test that changes files copies them to its own `tmp_path` first.
"""

from __future__ import annotations

import fcntl
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def session_root(factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The temporary root every worker of this session shares (a worker's own root is a folder inside it)."""
    base = factory.getbasetemp()
    return base if worker_id == "master" else base.parent


def built_once(factory: pytest.TempPathFactory, worker_id: str, name: str, build: Callable[[Path], T]) -> T:
    """`build(folder)` run once per session in an empty `folder` named `name`; its return value (pickled, so it
    holds paths and plain records, never a live server) to every caller. A build that fails leaves nothing behind:
    the next caller builds again (and fails the same way, in its own test)."""
    root = session_root(factory, worker_id) / name
    root.mkdir(exist_ok=True)
    folder, value = root / "data", root / "value.pickle"
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not value.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                built = build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            value.write_bytes(pickle.dumps(built))
            return built
    loaded: T = pickle.loads(value.read_bytes())
    return loaded

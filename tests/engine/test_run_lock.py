"""One process at a time per run directory: a second engine is refused before it submits anything."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.run_lock import RunLock
from speceval.batch.store import RunStore
from speceval.errors import RunStateError
from tests.engine.fake_provider import FakeBatchedModel, FakeProvider
from tests.engine.test_engine import ITEMS, make_items


def engine(tmp_path: Path, remote: FakeProvider) -> BatchEngine:
    options = EngineOptions(batch_size=4, poll_interval=0.01, max_attempts=3)
    return BatchEngine(FakeBatchedModel(remote), RunStore(tmp_path / "run"), options, sleep=lambda s: None)


def test_a_second_engine_on_a_running_directory_submits_nothing(tmp_path: Path) -> None:
    remote = FakeProvider()
    items = make_items(ITEMS)
    first = engine(tmp_path, remote)
    first.start(items)
    second = engine(tmp_path, remote)
    with pytest.raises(RunStateError, match="another speceval process"):
        second.start(items)
    while first.tick() is None:
        pass
    jobs = len(remote.jobs)
    assert jobs == 3  # 9 inputs in chunks of 4: each paid for once
    # Once the first has stopped, the directory is free again (and holds nothing left to send).
    again = engine(tmp_path, remote).run(items)
    assert again.finished and len(remote.jobs) == jobs


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from speceval.batch.run_lock import RunLock; "
            "lock = RunLock(sys.argv[1]); lock.acquire(); print('held', flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunStateError, match=f"pid {holder.pid}"):
            RunLock(tmp_path).acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    lock = RunLock(tmp_path)
    lock.acquire()
    lock.release()

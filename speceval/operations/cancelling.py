"""Cancelling the provider jobs of a folder: one run, a conversation's rounds, or a whole experiment.

`speceval cancel` of one run asks its provider to cancel that run's running jobs. A study is many runs (each
candidate, judge, variation and run, and a conversation's rounds, each round a run of its own), so a researcher who
wants it to stop spending would otherwise look each one up in `speceval status`. `running_jobs` finds every job still
running below a folder from the records on disk (no provider is called to find them); `cancel_jobs` asks each run's
provider to cancel its own. A process still working on a run (`speceval run` of the experiment) is named: it collects
the cancelled jobs (their unsent requests end as `cancelled`, final) and goes on to its next stage, which sends new
requests, so only stopping it stops the study.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from speceval.batch.engine import BatchEngine
from speceval.batch.manifest import RAY_KEY, REALTIME_KEY, RunManifest
from speceval.batch.records import BatchRecord
from speceval.batch.run_lock import LOCK_NAME
from speceval.errors import RunStateError
from speceval.operations.reopen import open_run
from speceval.operations.runs import find_run_dirs, store_for


class RunJobs(BaseModel):
    """The running jobs of one run directory, as its records on disk say (a job already asked to cancel is not
    one: it is cancelling at the provider)."""

    run_dir: Path
    batch_ids: list[str]
    sent_without_jobs: bool = False
    """A realtime or Ray run: it sends its own requests, there is no provider job to cancel."""
    worked_on_by: str | None = None
    """The pid of a speceval process holding the run's lock (working on it now), if any."""
    offline: bool = False
    """Answered by the built-in emulator (`--offline`), whose jobs live in the process that started it."""


def running_jobs(paths: Iterable[Path]) -> list[RunJobs]:
    """Every run at or below `paths` with a job still running, or sent without jobs and not finished, or held by a
    process (a run with nothing running and nobody working on it is left out)."""
    found: list[RunJobs] = []
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        without_jobs = any(key in manifest.parameters for key in (REALTIME_KEY, RAY_KEY))
        running = [] if without_jobs else [r.batch_id for r in _running(store_for(run_dir, manifest).load_records())]
        holder = lock_holder(run_dir)
        if running or holder is not None or (without_jobs and manifest.status != "finished"):
            found.append(
                RunJobs(
                    run_dir=run_dir,
                    batch_ids=running,
                    sent_without_jobs=without_jobs,
                    worked_on_by=holder,
                    offline=bool(manifest.offline),
                )
            )
    return found


def cancel_jobs(runs: Iterable[RunJobs], batch_id: str | None = None) -> list[tuple[Path, BatchRecord]]:
    """Ask each run's provider to cancel its running jobs (only `batch_id`, where given): (run, job) of each asked.

    An offline run another process is working on is refused before anything is asked: its jobs live in that
    process's built-in emulator, which a cancel from here cannot reach (its answers would still come back)."""
    chosen = [r for r in runs if r.batch_ids and (batch_id is None or batch_id in r.batch_ids)]
    held = [r for r in chosen if r.offline and r.worked_on_by is not None]
    if held:
        pids = ", ".join(sorted({str(r.worked_on_by) for r in held}))
        raise RunStateError(
            f"{len(held)} offline run(s) ({held[0].run_dir}{' and more' if len(held) > 1 else ''}) are being worked "
            f"on by speceval process {pids}, whose built-in emulator holds their jobs: stop it (Ctrl+C keeps its "
            "state), then cancel again"
        )
    asked: list[tuple[Path, BatchRecord]] = []
    for run in chosen:
        with open_run(run.run_dir) as opened:
            asked.extend((run.run_dir, record) for record in BatchEngine(opened.model, opened.store).cancel(batch_id))
    return asked


def lock_holder(run_dir: Path) -> str | None:
    """The pid a speceval process wrote in `run_dir`'s lock while it holds it (`speceval.batch.run_lock`), else
    None. Tried without taking it: a shared lock is refused only while an engine holds the exclusive one."""
    path = Path(run_dir) / LOCK_NAME
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "unknown"
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


def _running(records: Iterable[BatchRecord]) -> list[BatchRecord]:
    return [r for r in records if not r.collected and not r.state.is_terminal and not r.cancel_requested]

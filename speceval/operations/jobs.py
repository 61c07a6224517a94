"""What `speceval status` reports about runs: one typed row per provider job.

`job_rows` reads every run's records and (unless told not to) asks the provider for the current state of jobs
still running. Spend per run (`speceval cost`, the report) is `speceval.operations.costs`'s, which reads files only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from speceval.batch.costs import PriceTable, record_cost
from speceval.batch.manifest import RAY_KEY, REALTIME_KEY, RunManifest
from speceval.batch.records import BatchRecord, utcnow
from speceval.batch.store import RunStore
from speceval.errors import ProviderError
from speceval.operations.reopen import open_run
from speceval.operations.runs import find_run_dirs, store_for

logger = logging.getLogger(__name__)


class JobRow(BaseModel):
    """One provider job as `speceval status` shows it."""

    run_dir: str
    kind: str
    provider: str
    model: str
    batch_id: str
    state: str
    raw_state: str
    requests: int
    outcome_counts: dict[str, int]
    collected: bool
    age_hours: float
    cost_usd: float | None
    estimated_cost_usd: float | None
    note: str | None = None
    offline: bool = False
    """The run was answered by the emulator (run.json `offline`): nothing was paid; its cost is what a provider
    would charge for its synthetic tokens."""


def job_rows(paths: Iterable[Path], prices: PriceTable, *, refresh: bool = True) -> list[JobRow]:
    """A row for every job (and every job still being created) under `paths`."""
    rows: list[JobRow] = []
    for run_dir in find_run_dirs(paths):
        first = len(rows)
        manifest = RunManifest.load(run_dir)
        store = store_for(run_dir, manifest)
        records = store.load_records()
        notes: dict[str, str] = {}
        running = [r for r in records if not r.state.is_terminal]
        if refresh and running and REALTIME_KEY not in manifest.parameters:
            notes = _refresh(run_dir, running)
        now = utcnow()
        for record in records:
            rows.append(_row(run_dir, manifest, record, prices, now, notes.get(record.batch_id)))
        if not records and _sent_without_jobs(manifest):
            rows.append(_session_row(run_dir, manifest, store, now, prices))
        for intent in store.load_intents():
            rows.append(
                JobRow(
                    run_dir=str(run_dir),
                    kind=manifest.kind,
                    provider=intent.provider,
                    model=intent.model,
                    batch_id=f"(not created: {intent.idempotency_key[:12]})",
                    state="creating" if intent.create_attempted else "planned",
                    raw_state="",
                    requests=intent.request_count,
                    outcome_counts={},
                    collected=False,
                    age_hours=_hours(now, intent.created_at),
                    cost_usd=None,
                    estimated_cost_usd=intent.estimated_cost_usd,
                )
            )
        for row in rows[first:]:
            row.offline = bool(manifest.offline)
    return rows


def _sent_without_jobs(manifest: RunManifest) -> bool:
    """Realtime and Ray runs send requests themselves: there is no provider job to show, only progress."""
    return any(key in manifest.parameters for key in (REALTIME_KEY, RAY_KEY))


def _session_row(run_dir: Path, manifest: RunManifest, store: RunStore, now: datetime, prices: PriceTable) -> JobRow:
    """The progress of a run sent without provider jobs: its requests, their outcomes so far, and the rest; its
    cost so far, each answer at the tier that served it (`speceval.operations.costs`)."""
    from speceval.batch.journal import outcome_counts
    from speceval.operations.costs import run_costs

    counts = dict(outcome_counts(run_dir, store.results_dir))
    # This run's own row (a conversation's rounds, nested runs, are counted as runs of their own).
    spent = next((c for c in run_costs([run_dir], prices) if Path(c.run_dir) == run_dir), None)
    total = int(manifest.parameters.get("requests") or sum(counts.values()))
    if total > sum(counts.values()):
        counts["not sent yet"] = total - sum(counts.values())
    mode = RAY_KEY if RAY_KEY in manifest.parameters else REALTIME_KEY
    return JobRow(
        run_dir=str(run_dir),
        kind=manifest.kind,
        provider=manifest.provider,
        model=manifest.model_name,
        batch_id=f"({mode}: no provider jobs)",
        state=manifest.status,
        raw_state="",
        requests=total,
        outcome_counts=counts,
        collected=manifest.status == "finished",
        age_hours=_hours(now, manifest.created_at),
        cost_usd=spent.cost_usd if spent is not None else None,
        estimated_cost_usd=None,
    )


def _refresh(run_dir: Path, running: list[BatchRecord]) -> dict[str, str]:
    """Ask the provider for the state of running jobs (in place; records on disk are left to the engine)."""
    notes: dict[str, str] = {}
    try:
        with open_run(run_dir) as run:
            for record in running:
                try:
                    job = run.model.check_batch_progress(record)
                except ProviderError as exc:
                    notes[record.batch_id] = f"refresh failed: {exc}"
                    continue
                record.state, record.raw_state = job.state, job.raw_state
    except ProviderError as exc:
        for record in running:
            notes[record.batch_id] = f"refresh failed: {exc}"
    return notes


def _row(
    run_dir: Path, manifest: RunManifest, record: BatchRecord, prices: PriceTable, now: datetime, note: str | None
) -> JobRow:
    return JobRow(
        run_dir=str(run_dir),
        kind=manifest.kind,
        provider=record.provider,
        model=record.model,
        batch_id=record.batch_id,
        state=record.state.value,
        raw_state=record.raw_state,
        requests=record.request_count,
        outcome_counts={outcome.value: n for outcome, n in record.outcome_counts.items()},
        collected=record.collected,
        age_hours=_hours(now, record.submitted_at),
        cost_usd=record_cost(prices, record),
        estimated_cost_usd=record.estimated_cost_usd,
        note=note or ("cancelled by a user" if record.cancel_requested else None),
    )


def _hours(now: datetime, then: datetime) -> float:
    return max(0.0, (now - then).total_seconds() / 3600)

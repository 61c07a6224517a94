"""What the operations commands report about runs: one typed row per provider job, and spend per run.

`job_rows` reads every run's records and (unless told not to) asks the provider for the current state of jobs
still running; `run_costs` totals usage and cost. The CLI renders both as tables or JSON.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from speceval.batch.costs import PriceTable, record_cost
from speceval.batch.manifest import RunManifest
from speceval.batch.records import BatchRecord, utcnow
from speceval.batch.store import RunStore
from speceval.errors import ProviderError
from speceval.operations.runs import find_run_dirs, open_run, store_for

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


class RunCost(BaseModel):
    """Spend of one run (`speceval cost`)."""

    run_dir: str
    kind: str
    provider: str
    model: str
    jobs: int
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    pending_estimate_usd: float | None
    cached_input_tokens: int = 0
    """Of `input_tokens`, those the provider read from its prompt cache (billed at the cached-input price)."""


def job_rows(paths: Iterable[Path], prices: PriceTable, *, refresh: bool = True) -> list[JobRow]:
    """A row for every job (and every job still being created) under `paths`."""
    rows: list[JobRow] = []
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        store = store_for(run_dir, manifest)
        records = store.load_records()
        notes: dict[str, str] = {}
        running = [r for r in records if not r.state.is_terminal]
        if refresh and running and "realtime" not in manifest.parameters:
            notes = _refresh(run_dir, running)
        now = utcnow()
        for record in records:
            rows.append(_row(run_dir, manifest, record, prices, now, notes.get(record.batch_id)))
        if not records and _sent_without_jobs(manifest):
            rows.append(_session_row(run_dir, manifest, store, now))
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
    return rows


def _sent_without_jobs(manifest: RunManifest) -> bool:
    """Realtime and Ray runs send requests themselves: there is no provider job to show, only progress."""
    return any(key in manifest.parameters for key in ("realtime", "ray"))


def _session_row(run_dir: Path, manifest: RunManifest, store: RunStore, now: datetime) -> JobRow:
    """The progress of a run sent without provider jobs: its requests, their outcomes so far, and the rest."""
    from speceval.realtime.journal import outcome_counts

    counts = dict(outcome_counts(run_dir, store.results_dir))
    total = int(manifest.parameters.get("requests") or sum(counts.values()))
    if total > sum(counts.values()):
        counts["not sent yet"] = total - sum(counts.values())
    mode = "ray" if "ray" in manifest.parameters else "realtime"
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
        cost_usd=None,
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


def run_costs(paths: Iterable[Path], prices: PriceTable) -> list[RunCost]:
    """Usage and cost per run under `paths` (unknown prices stay None, never 0)."""
    costs = []
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        records = store_for(run_dir, manifest).load_records()
        collected = [r for r in records if r.collected]
        parts = [record_cost(prices, r) for r in collected]
        known = None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
        pending = [r.estimated_cost_usd for r in records if not r.collected]
        costs.append(
            RunCost(
                run_dir=str(run_dir),
                kind=manifest.kind,
                provider=manifest.provider,
                model=manifest.model_name,
                jobs=len(records),
                requests=sum(r.request_count for r in records),
                input_tokens=sum(r.usage.input_tokens for r in collected),
                output_tokens=sum(r.usage.output_tokens for r in collected),
                cached_input_tokens=sum(r.usage.cached_input_tokens for r in collected),
                cost_usd=known,
                pending_estimate_usd=None if any(p is None for p in pending) else sum(p or 0.0 for p in pending),
            )
        )
    return costs


def _hours(now: datetime, then: datetime) -> float:
    return max(0.0, (now - then).total_seconds() / 3600)

"""Spend per run, for `speceval cost` and the report: usage and cost totalled from each run's records.

Reads files only (no provider is asked), so the report's import closure holds no transport.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from speceval.batch.costs import PriceTable, record_cost, served_tier
from speceval.batch.journal import final_records
from speceval.batch.manifest import REALTIME_KEY, RunManifest
from speceval.batch.records import Outcome
from speceval.operations.runs import find_run_dirs, store_for
from speceval.wire.usage import Usage


class TierCost(BaseModel):
    """Requests answered at one service tier and what they cost (None: no price for the model)."""

    requests: int = 0
    cost_usd: float | None = 0.0


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
    tiers: dict[str, TierCost] = {}
    """Answered requests and cost per service tier that served them: `batch` (the run's jobs), `flex` (at batch
    rates) and `standard` (a realtime run's answers, by the `service_tier` each response reported)."""
    offline: bool = False
    """Answered by the emulator (run.json `offline`): synthetic tokens, nothing paid; its cost is what a provider
    would charge for them."""


def run_costs(paths: Iterable[Path], prices: PriceTable) -> list[RunCost]:
    """Usage and cost per run under `paths` (unknown prices stay None, never 0)."""
    costs = []
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        store = store_for(run_dir, manifest)
        # A conversation run's rounds are runs of their own (`rounds/<k>/`), counted there; its results/ holds the
        # conversations they made, already paid for by the rounds.
        if REALTIME_KEY in manifest.parameters and not (run_dir / "rounds").is_dir():
            costs.append(_realtime_cost(run_dir, manifest, store.results_dir, prices))
            continue
        records = store.load_records()
        collected = [r for r in records if r.collected]
        parts = [record_cost(prices, r) for r in collected]
        known = None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
        pending = [r.estimated_cost_usd for r in records if not r.collected]
        answered = sum(r.outcome_counts.get(Outcome.SUCCEEDED, 0) for r in collected)
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
                tiers={"batch": TierCost(requests=answered, cost_usd=known)} if records else {},
                offline=bool(manifest.offline),
            )
        )
    return costs


def _realtime_cost(run_dir: Path, manifest: RunManifest, results_dir: Path, prices: PriceTable) -> RunCost:
    """A run without provider jobs: every answer priced at the tier its response says served it (flex at batch
    rates), from `results/` and the journal (a run killed between merges is counted whole)."""
    usage = Usage()
    tiers: dict[str, TierCost] = {}
    records = final_records(run_dir, results_dir)
    for record in records.values():
        if record.usage is None:
            continue  # refused or failed calls are not billed
        usage.add(record.usage)
        tier = served_tier(record.service_tier)
        cost = prices.cost(manifest.model_name, manifest.provider, record.usage, tier=tier)
        row = tiers.setdefault(tier, TierCost())
        row.requests += 1
        row.cost_usd = None if row.cost_usd is None or cost is None else row.cost_usd + cost
    costs = [row.cost_usd for row in tiers.values()]
    return RunCost(
        run_dir=str(run_dir),
        kind=manifest.kind,
        provider=manifest.provider,
        model=manifest.model_name,
        jobs=0,
        requests=len(records),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        pending_estimate_usd=None,
        tiers=tiers,
        offline=bool(manifest.offline),
    )

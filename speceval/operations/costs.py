"""Spend per run, for `speceval cost` and the report: usage and cost totalled from each run's records.

Reads files only (no provider is asked), so the report's import closure holds no transport.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from speceval.batch.costs import PriceTable, record_cost
from speceval.batch.manifest import RunManifest
from speceval.operations.runs import find_run_dirs, store_for


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

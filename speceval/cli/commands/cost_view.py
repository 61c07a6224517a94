"""What `speceval cost` prints: spend per run, model and stage (`speceval.cli.commands.cost_cmd` parses its flags)."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from speceval.batch.costs import PriceTable
from speceval.batch.manifest import RunManifest
from speceval.cli.console import run_heading, stdout
from speceval.defaults import PRICES_ENV
from speceval.operations.costs import RunCost, run_costs
from speceval.operations.run_stages import stage_of


def _money(value: float | None) -> str:
    return f"${value:,.4f}" if value is not None else "unknown"


def _total(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


def show_cost(args: argparse.Namespace) -> int:
    """Print (or, with --json, dump) the spend of the runs under `args.paths`."""
    prices = PriceTable.load(args.prices)
    costs = run_costs(args.paths, prices)
    by_model: dict[str, list[RunCost]] = defaultdict(list)
    by_stage: dict[str, list[RunCost]] = defaultdict(list)
    for cost in costs:
        by_model[cost.model].append(cost)
        by_stage[cost.kind].append(cost)
    if args.json:
        payload = {
            "prices_as_of": prices.as_of,
            "runs": [c.model_dump(mode="json") for c in costs],
            "per_model": {m: _total([c.cost_usd for c in cs]) for m, cs in by_model.items()},
            "per_stage": {k: _total([c.cost_usd for c in cs]) for k, cs in by_stage.items()},
            "per_tier": _per_tier(costs),
            "total_usd": _total([c.cost_usd for c in costs]),
            "offline_runs": sum(c.offline for c in costs),
            "prices_source": prices.source,
        }
        stdout.print_json(json.dumps(payload))
        return 0
    stages = {c.run_dir: stage_of(RunManifest.load(Path(c.run_dir))) for c in costs}
    stdout.print(cost_view(costs, prices.as_of, stages), soft_wrap=False)  # wrap long names, never cut them
    offline = sum(c.offline for c in costs)
    if offline:  # a quoted total must not read as money spent on model answers
        stdout.print(
            f"[yellow]OFFLINE:[/] {offline} of {len(costs)} run(s) were answered by the speceval emulator: their "
            "tokens are synthetic and nothing was paid; their cost is what the providers would charge for them.",
            soft_wrap=False,
        )
    stdout.print(
        f"Prices: {prices.source}. Newer prices (or flex models): a table of the same format with --prices FILE or "
        f"${PRICES_ENV}=FILE; its entries win.",
        soft_wrap=True,
    )
    return 0


def _per_tier(costs: list[RunCost]) -> dict[str, dict[str, float | int | None]]:
    """Answered requests and cost per service tier over every run (`batch`, `flex`, `standard`)."""
    tiers: dict[str, dict[str, float | int | None]] = {}
    for cost in costs:
        for tier, row in cost.tiers.items():
            total = tiers.setdefault(tier, {"requests": 0, "cost_usd": 0.0})
            total["requests"] = int(total["requests"] or 0) + row.requests
            spent = total["cost_usd"]
            total["cost_usd"] = None if spent is None or row.cost_usd is None else float(spent) + row.cost_usd
    return tiers


def cost_view(costs: list[RunCost], prices_as_of: str, stages: dict[str, str] | None = None) -> Group:
    """Spend per run (a heading naming run and model in full, then its numbers), then per model, stage and total;
    `stages`: run folder → its stage as the report's setup names it (`speceval.operations.run_stages`; else its kind).

    "cached" is the part of the input tokens read from a prompt cache; "in flight" the most that jobs not yet
    collected can cost (an estimate).

    Readable at 80 columns: names sit on their own wrapping line, so the number columns keep their width.
    """
    parts: list[RenderableType] = [
        Text(f"spend (each request at the tier that served it, table as of {prices_as_of})", style="bold")
    ]
    by_model: dict[str, list[RunCost]] = defaultdict(list)
    by_stage: dict[str, list[RunCost]] = defaultdict(list)
    for c in costs:
        by_model[c.model].append(c)
        by_stage[(stages or {}).get(c.run_dir, c.kind)].append(c)
        numbers = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        # Short headers leave the numbers room; a number that still does not fit folds, it is never cut.
        for column in ("requests", "input tok", "cached", "output tok", "cost", "in flight"):
            numbers.add_column(column, justify="right", overflow="fold")
        numbers.add_row(
            f"{c.requests:,}",
            f"{c.input_tokens:,}",
            f"{c.cached_input_tokens:,}",
            f"{c.output_tokens:,}",
            _money(c.cost_usd),
            _money(c.pending_estimate_usd) if c.pending_estimate_usd else "-",
        )
        heading = run_heading(c.run_dir, c.kind, c.provider, c.model).append(f" · {c.jobs} job(s)")
        if c.tiers:
            heading.append(" · " + ", ".join(f"{tier}: {row.requests:,} answered" for tier, row in c.tiers.items()))
        parts += [Text(""), heading, numbers]
    totals = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    totals.add_column("total of")
    totals.add_column("", overflow="fold")
    totals.add_column("cost", justify="right", overflow="fold")
    for model, group in sorted(by_model.items()):
        totals.add_row("model", model, _money(_total([c.cost_usd for c in group])))
    for stage, group in sorted(by_stage.items()):
        totals.add_row("stage", stage, _money(_total([c.cost_usd for c in group])))
    for tier, row in sorted(_per_tier(costs).items()):
        spent = row["cost_usd"]
        totals.add_row(
            "tier", f"{tier} ({row['requests']:,} answered)", _money(float(spent) if spent is not None else None)
        )
    totals.add_row("all runs", "", _money(_total([c.cost_usd for c in costs])), style="bold")
    return Group(*parts, Text(""), totals)

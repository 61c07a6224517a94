"""`speceval cost PATH ... [--json]`: what runs cost, per run, model and stage."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.table import Table

from speceval.cli.console import stdout
from speceval.costs import PriceTable
from speceval.ops import RunCost, run_costs


def register(commands: Any) -> None:
    """Add the `cost` subcommand."""
    parser = commands.add_parser("cost", help="spend per run, model and stage")
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="run or experiment directories")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    parser.set_defaults(handler=_run)


def _money(value: float | None) -> str:
    return f"${value:,.4f}" if value is not None else "unknown"


def _total(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


def _run(args: argparse.Namespace) -> int:
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
            "total_usd": _total([c.cost_usd for c in costs]),
        }
        stdout.print_json(json.dumps(payload))
        return 0
    table = Table(title=f"spend (batch prices, table as of {prices.as_of})", header_style="bold")
    for column in ("run", "stage", "model", "jobs", "requests", "input tok", "of which cached", "output tok", "cost",
                   "in flight (max)"):
        table.add_column(column, justify="left" if column in ("run", "stage", "model") else "right")
    for c in costs:
        table.add_row(str(Path(*Path(c.run_dir).parts[-3:])), c.kind, c.model, str(c.jobs), f"{c.requests:,}",
                      f"{c.input_tokens:,}", f"{c.cached_input_tokens:,}", f"{c.output_tokens:,}", _money(c.cost_usd),
                      _money(c.pending_estimate_usd) if c.pending_estimate_usd else "-")
    table.add_section()
    for model, group in sorted(by_model.items()):
        table.add_row("", "per model", model, "", "", "", "", "", _money(_total([c.cost_usd for c in group])), "")
    for stage, group in sorted(by_stage.items()):
        table.add_row("", "per stage", stage, "", "", "", "", "", _money(_total([c.cost_usd for c in group])), "")
    table.add_row("total", "", "", "", "", "", "", "", _money(_total([c.cost_usd for c in costs])), "")
    stdout.print(table)
    return 0

"""`speceval status [PATH ...] [--json] [--no-refresh]`: one table of every job under the given run directories."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.table import Table

from speceval.cli.console import stdout
from speceval.costs import PriceTable
from speceval.ops import job_rows


def register(commands: Any) -> None:
    """Add the `status` subcommand."""
    parser = commands.add_parser("status", help="show every provider job of runs and experiments")
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="run or experiment directories")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--no-refresh", action="store_true", help="show recorded states; do not ask the provider")
    parser.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    rows = job_rows(args.paths, PriceTable.load(args.prices), refresh=not args.no_refresh)
    if args.json:
        stdout.print_json(json.dumps([row.model_dump(mode="json") for row in rows]))
        return 0
    table = Table(title=f"{len(rows)} job(s)", header_style="bold")
    for column in ("run", "provider", "model", "job", "state", "requests", "outcomes", "age", "cost"):
        table.add_column(column, justify="right" if column in ("requests", "age", "cost") else "left")
    for row in rows:
        outcomes = ", ".join(f"{n} {o}" for o, n in sorted(row.outcome_counts.items())) or "-"
        if row.cost_usd is not None:
            cost = f"${row.cost_usd:,.4f}"
        elif row.estimated_cost_usd is not None:
            cost = f"≤${row.estimated_cost_usd:,.4f} est."
        else:
            cost = "-" if not row.collected else "unknown"
        state = row.raw_state or row.state
        if row.note:
            state += f" ({row.note})"
        table.add_row(_short(row.run_dir), row.provider, row.model, row.batch_id, state, f"{row.requests:,}",
                      outcomes, f"{row.age_hours:.1f} h", cost)
    stdout.print(table)
    return 0


def _short(run_dir: str) -> str:
    parts = Path(run_dir).parts
    return str(Path(*parts[-3:])) if len(parts) > 3 else run_dir

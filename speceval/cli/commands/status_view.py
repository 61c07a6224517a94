"""What `speceval status` prints: one table of jobs per run (`speceval.cli.commands.status_cmd` parses its flags)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.batch.costs import PriceTable
from speceval.cli.console import run_heading, stdout
from speceval.operations.jobs import JobRow, job_rows


def show_status(args: argparse.Namespace) -> int:
    """Print (or, with --json, dump) the jobs under `args.paths`."""
    rows = job_rows(args.paths, PriceTable.load(args.prices), refresh=not args.no_refresh)
    if args.json:
        stdout.print_json(json.dumps([row.model_dump(mode="json") for row in rows]))
        return 0
    for line in experiment_lines(args.paths):
        stdout.print(line, markup=False)
    stdout.print(status_view(rows), soft_wrap=False)  # wrap long names at the terminal's width, never cut them
    offline = len({row.run_dir for row in rows if row.offline})
    if offline:
        stdout.print(
            f"[yellow]OFFLINE:[/] {offline} of {len({row.run_dir for row in rows})} run(s) were answered by the "
            "speceval emulator: synthetic answers, nothing paid (a cost shown is what the providers would charge).",
            soft_wrap=False,
        )
    return 0


def experiment_lines(paths: list[Path]) -> list[str]:
    """One line per experiment folder among `paths`: its name and status as experiment.json records them (an
    interrupted experiment says so, with the time, rather than "running")."""
    lines = []
    for path in paths:
        state_file = Path(path) / STATE_NAME
        if not state_file.is_file():
            continue
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the jobs below are still shown; `speceval run` names what is wrong with the file
        since = f" at {state['stopped_at']}" if state.get("stopped_at") else ""
        lines.append(f"Experiment {state.get('experiment_name', '?')} in {path}: {state.get('status', '?')}{since}")
    return lines


def status_view(rows: list[JobRow]) -> Group:
    """Jobs grouped by run: a heading naming the run, provider and model in full, then one table of its jobs.

    Readable at 80 columns: the columns that are the same for every job of a run are said once in the heading,
    which wraps rather than cuts, and long job ids fold onto a second line; no cell is ever cut short.
    """
    runs: dict[tuple[str, str, str, str], list[JobRow]] = {}
    for row in rows:
        runs.setdefault((row.run_dir, row.kind, row.provider, row.model), []).append(row)
    parts: list[RenderableType] = [Text(f"{len(rows)} job(s) in {len(runs)} run(s)", style="bold")]
    for (run_dir, kind, provider, model), jobs in runs.items():
        parts += [Text(""), run_heading(run_dir, kind, provider, model), _jobs_table(jobs)]
    return Group(*parts)


def _jobs_table(jobs: list[JobRow]) -> Table:
    table = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("job", overflow="fold", ratio=3)
    table.add_column("state", overflow="fold", ratio=2)
    table.add_column("requests", justify="right", no_wrap=True)
    table.add_column("outcomes", overflow="fold", ratio=2)
    table.add_column("age", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    for row in jobs:
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
        table.add_row(row.batch_id, state, f"{row.requests:,}", outcomes, f"{row.age_hours:.1f} h", cost)
    return table

"""`--dry-run` and `--budget-usd`, shared by every command that submits batch jobs (generation and both judges).

A dry run writes each job's request file and intent exactly as a real run would, prices them with the price
table, and submits nothing; running the same command without `--dry-run` then submits exactly those files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from speceval.batch.budget import Budget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.model import BatchedModel
from speceval.batch.records import SubmissionIntent
from speceval.cli.console import console, stdout
from speceval.errors import ConfigError

PlannedJob = tuple[Path, SubmissionIntent]
"""A job a dry run planned: the run directory it belongs to, and its intent (request file relative to it)."""


def budget_option(budget_usd: float | None, prices: Path | None) -> Budget | None:
    """The `--budget-usd` limit with the price table that enforces it (None when no budget was given).

    A `--prices` file is read (and refused if missing or malformed, naming file and field) whenever it is given,
    budget or not: a table given and silently ignored would let a wrong estimate pass unnoticed."""
    if budget_usd is None:
        if prices is not None:
            PriceTable.load(prices)
        return None
    # The budget is per invocation: a resume may raise it (what was already paid for still counts).
    return Budget(budget_usd, CostEstimator(PriceTable.load(prices)))


def show_dry_run(model: BatchedModel, jobs: Sequence[PlannedJob], prices: Path | None, submit_command: str) -> None:
    """Print each planned job's request file, size and estimated cost, and how to submit exactly these files."""
    estimator = CostEstimator(PriceTable.load(prices))
    table = Table(title=f"dry run: {len(jobs)} job(s), nothing submitted", header_style="bold")
    for column in ("request file", "requests", "bytes", "est. cost (max)"):
        table.add_column(column, justify="left" if column == "request file" else "right", overflow="fold")
    labels = _labels(jobs)
    total: float | None = 0.0
    for (run_dir, intent), label in zip(jobs, labels, strict=True):
        try:
            cost: float | None = estimator.estimate(model, intent, run_dir / intent.request_file)
        except ConfigError:
            cost = None  # no price for this model: say so rather than print $0
        total = None if cost is None or total is None else total + cost
        shown = f"${cost:,.4f}" if cost is not None else "unknown (no price)"
        table.add_row(label, f"{intent.request_count:,}", f"{intent.request_bytes:,}", shown)
    table.add_section()
    table.add_row(
        "total",
        f"{sum(intent.request_count for _, intent in jobs):,}",
        "",
        f"${total:,.4f}" if total is not None else "unknown",
    )
    stdout.print(table)
    console.print(
        "Estimate: input tokens = request bytes / 4, output tokens = --max-tokens per request, batch prices.\n"
        f"Nothing was submitted. To submit exactly these files: {submit_command}"
    )


def _labels(jobs: Sequence[PlannedJob]) -> list[str]:
    # One run directory: the request file says it all. Several (one per candidate or pair): name the directory.
    if len({run_dir for run_dir, _ in jobs}) <= 1:
        return [intent.request_file for _, intent in jobs]
    return [f"{run_dir.name}/{intent.request_file}" for run_dir, intent in jobs]

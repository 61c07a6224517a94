"""`speceval cancel RUN_DIR [--batch ID]`, `speceval fetch RUN_DIR`, `speceval monitor|resume RUN_DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speceval.batch.engine import BatchEngine
from speceval.cli.console import console, setup_logging, stdout, summary_table
from speceval.cli.exits import ExitCode
from speceval.errors import ConfigError
from speceval.manifest import RunManifest
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.runs import open_run
from speceval.settings_checks import BUDGET_USD, POLL_INTERVAL, TIMEOUT_HOURS, flag_type


def register(commands: Any) -> None:
    """Add the `cancel`, `fetch`, `monitor` and `resume` subcommands."""
    cancel = commands.add_parser("cancel", help="cancel a run's running jobs at the provider")
    cancel.add_argument("run_dir", type=Path)
    cancel.add_argument("--batch", help="only this job id")
    cancel.set_defaults(handler=_cancel)
    fetch = commands.add_parser("fetch", help="collect whatever has finished and write results; submit nothing")
    fetch.add_argument("run_dir", type=Path)
    fetch.set_defaults(handler=_fetch)
    for name in ("monitor", "resume"):
        monitor = commands.add_parser(name, help="poll a generation run until done (same as --resume)")
        monitor.add_argument("run_dir", type=Path)
        monitor.add_argument("--poll-interval", type=flag_type(POLL_INTERVAL))
        monitor.add_argument("--timeout-hours", type=flag_type(TIMEOUT_HOURS))
        monitor.add_argument("--budget-usd", type=flag_type(BUDGET_USD))
        monitor.set_defaults(handler=_monitor)


def _cancel(args: argparse.Namespace) -> int:
    with open_run(args.run_dir) as run:
        setup_logging(False, args.run_dir / "logs" / "run.log")  # what happened to the run stays in its log
        cancelled = BatchEngine(run.model, run.store).cancel(args.batch)
    if args.batch and not cancelled:
        raise ConfigError(f"no running job {args.batch!r} in {args.run_dir} (see `speceval status {args.run_dir}`)")
    for record in cancelled:
        stdout.print(f"cancel requested: {record.batch_id} ({record.raw_state})")
    stdout.print(f"{len(cancelled)} job(s) cancelled. Their unfinished requests end as 'cancelled' when collected.")
    return ExitCode.FINISHED


def _generation(run_dir: Path) -> BatchedGenerationPipeline:
    manifest = RunManifest.load(run_dir)
    if manifest.kind != "generation":
        raise ConfigError(
            f"{run_dir} is a {manifest.kind} run: run its judge command again to fetch or resume it "
            "(it resumes without resubmitting)"
        )
    return BatchedGenerationPipeline.resume(run_dir)


def _fetch(args: argparse.Namespace) -> int:
    pipeline = _generation(args.run_dir)
    setup_logging(False, args.run_dir / "logs" / "run.log")  # what happened to the run stays in its log
    with open_run(args.run_dir) as run:
        summary = BatchEngine(run.model, run.store, pipeline.config.engine).fetch(pipeline.inputs)
    stdout.print(summary_table(summary, f"fetched {args.run_dir}"))
    if summary.outstanding:
        console.print(f"{summary.outstanding} request(s) not final yet; `speceval monitor {args.run_dir}` waits.")
    return ExitCode.FINISHED if not summary.outstanding else ExitCode.STOPPED


def _monitor(args: argparse.Namespace) -> int:
    from speceval.cli.generation import main as generation_main

    _generation(args.run_dir)  # a clear error for judge runs
    argv = ["--resume", str(args.run_dir)]
    for flag in ("poll_interval", "timeout_hours", "budget_usd"):
        value = getattr(args, flag)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    return generation_main(argv)

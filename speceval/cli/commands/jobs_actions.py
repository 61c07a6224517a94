"""The bodies of `speceval cancel`, `fetch`, `monitor` and `resume` (`speceval.cli.commands.jobs_cmd` parses their
flags)."""

from __future__ import annotations

import argparse
from pathlib import Path

from speceval.batch.engine import BatchEngine
from speceval.batch.manifest import RunManifest
from speceval.cli.console import console, setup_logging, stdout, summary_table
from speceval.cli.exits import ExitCode
from speceval.cli.generation import main as generation_main
from speceval.conversations.rounds import ROUNDS_DIR
from speceval.errors import ConfigError
from speceval.operations.reopen import open_run
from speceval.pipelines.generation import BatchedGenerationPipeline


def cancel(args: argparse.Namespace) -> int:
    """`speceval cancel`: ask the provider to cancel the run's running jobs (or one of them)."""
    _refuse_rounds(args.run_dir, "cancel")
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


def _refuse_rounds(run_dir: Path, action: str) -> None:
    """A conversation run keeps its jobs in one engine directory per round (`rounds/<k>/`), not in its own."""
    rounds = run_dir / ROUNDS_DIR
    if not rounds.is_dir():
        return
    numbers = sorted(int(p.name) for p in rounds.iterdir() if p.name.isdigit())
    where = f"{rounds / str(numbers[-1])}" if numbers else f"{rounds}/<k>"
    if action == "cancel":
        raise ConfigError(
            f"{run_dir} sends conversations in rounds, each with its own jobs: cancel the round in "
            f"flight with `speceval cancel {where}` (`speceval status {run_dir}` lists every round)"
        )
    raise ConfigError(
        f"{run_dir} sends conversations in rounds (the next built from the answers of the last): "
        f"`speceval resume {run_dir}` collects and continues them without sending anything twice"
    )


def fetch(args: argparse.Namespace) -> int:
    """`speceval fetch`: collect what has finished and write results; submit nothing."""
    pipeline = _generation(args.run_dir)
    _refuse_rounds(args.run_dir, "fetch")
    setup_logging(False, args.run_dir / "logs" / "run.log")  # what happened to the run stays in its log
    with open_run(args.run_dir) as run:
        summary = BatchEngine(run.model, run.store, pipeline.config.engine).fetch(pipeline.inputs)
    stdout.print(summary_table(summary, f"fetched {args.run_dir}"))
    if summary.outstanding:
        console.print(f"{summary.outstanding} request(s) not final yet; `speceval monitor {args.run_dir}` waits.")
    return ExitCode.FINISHED if not summary.outstanding else ExitCode.STOPPED


def monitor(args: argparse.Namespace) -> int:
    """`speceval monitor|resume`: the generation command's `--resume`, with the flags given here."""
    _generation(args.run_dir)  # a clear error for judge runs
    argv = ["--resume", str(args.run_dir)]
    for flag in ("poll_interval", "timeout_hours", "budget_usd"):
        value = getattr(args, flag)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    return generation_main(argv)

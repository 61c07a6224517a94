"""The bodies of `speceval cancel`, `fetch`, `monitor` and `resume` (`speceval.cli.commands.jobs_cmd` parses their
flags)."""

from __future__ import annotations

import argparse
from pathlib import Path

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.batch.engine import BatchEngine
from speceval.batch.manifest import MANIFEST_NAME, RunManifest
from speceval.cli.console import console, setup_logging, stdout, summary_table
from speceval.cli.exits import ExitCode
from speceval.cli.generation import main as generation_main
from speceval.conversations.rounds import ROUNDS_DIR
from speceval.errors import ConfigError
from speceval.operations.cancelling import RunJobs, cancel_jobs, running_jobs
from speceval.operations.reopen import open_run
from speceval.pipelines.generation import BatchedGenerationPipeline


def cancel(args: argparse.Namespace) -> int:
    """`speceval cancel`: ask the provider to cancel a run's running jobs (or one of them); below a folder that is not
    one run (an experiment's, a conversation run's rounds), every running job with `--all`, or the one `--batch`
    names."""
    if (args.run_dir / MANIFEST_NAME).is_file() and not (args.run_dir / ROUNDS_DIR).is_dir():
        return _cancel_run(args.run_dir, args.batch)
    if not args.run_dir.is_dir():
        raise ConfigError(f"{args.run_dir}: no such folder (a run, an experiment's folder, or a folder of runs)")
    runs = running_jobs([args.run_dir])
    jobs = sum(len(run.batch_ids) for run in runs)
    if args.batch is None and not args.all and jobs:
        listed = "; ".join(f"{run.run_dir}: {len(run.batch_ids)}" for run in runs if run.batch_ids)
        raise ConfigError(
            f"{args.run_dir} is not one run: it holds {jobs} running job(s) in "
            f"{sum(bool(run.batch_ids) for run in runs)} run(s) ({listed}). `speceval cancel {args.run_dir} --all` "
            f"cancels every one, `--batch ID` one of them (`speceval status {args.run_dir}` lists them)"
        )
    setup_logging(False, args.run_dir / "logs" / "cancel.log")  # what was asked of the providers stays on disk
    asked = cancel_jobs(runs, args.batch)
    if args.batch and not asked:
        raise ConfigError(f"no running job {args.batch!r} below {args.run_dir} (see `speceval status {args.run_dir}`)")
    for run_dir, record in asked:
        stdout.print(f"cancel requested: {record.batch_id} ({record.raw_state}) in {run_dir}")
    if asked:
        stdout.print(f"{len(asked)} job(s) cancelled. Their unfinished requests end as 'cancelled' when collected.")
    else:
        stdout.print(f"no running job below {args.run_dir} (`speceval status {args.run_dir}` lists every job)")
    _say_who_sends(runs)
    return ExitCode.FINISHED


def _cancel_run(run_dir: Path, batch: str | None) -> int:
    with open_run(run_dir) as run:
        setup_logging(False, run_dir / "logs" / "run.log")  # what happened to the run stays in its log
        cancelled = BatchEngine(run.model, run.store).cancel(batch)
    if batch and not cancelled:
        raise ConfigError(f"no running job {batch!r} in {run_dir} (see `speceval status {run_dir}`)")
    for record in cancelled:
        stdout.print(f"cancel requested: {record.batch_id} ({record.raw_state})")
    stdout.print(f"{len(cancelled)} job(s) cancelled. Their unfinished requests end as 'cancelled' when collected.")
    _say_who_sends([run for run in running_jobs([run_dir]) if run.run_dir == run_dir])
    return ExitCode.FINISHED


def _say_who_sends(runs: list[RunJobs]) -> None:
    """What a cancel cannot stop: a process still working on a run goes on to its next stage or round (and sends
    it), and a realtime run sends its own requests (no provider job)."""
    for pid in sorted({run.worked_on_by for run in runs if run.worked_on_by is not None}):
        held = [str(run.run_dir) for run in runs if run.worked_on_by == pid]
        console.print(
            f"speceval process {pid} is working on {', '.join(held)}: it collects the cancelled jobs and goes on to "
            "its next stage or round, which sends new requests. Stop it (Ctrl+C keeps its state) to send nothing more."
        )
    for run in runs:
        if run.sent_without_jobs and run.worked_on_by is None:
            console.print(f"{run.run_dir} sends its requests itself (no provider jobs): nothing to cancel there.")


def _generation(run_dir: Path) -> BatchedGenerationPipeline:
    if run_dir.is_dir() and not (run_dir / MANIFEST_NAME).is_file() and (run_dir / STATE_NAME).is_file():
        raise ConfigError(
            f"{run_dir} is an experiment's folder, not one run: `speceval run EXPERIMENT.yaml` (its YAML) collects "
            f"every finished job and continues without sending anything twice; `speceval status {run_dir}` shows "
            f"its jobs, `speceval cancel {run_dir} --all` cancels them"
        )
    manifest = RunManifest.load(run_dir)
    if manifest.kind != "generation":
        raise ConfigError(
            f"{run_dir} is a {manifest.kind} run: run its judge command again to fetch or resume it "
            "(it resumes without resubmitting)"
        )
    return BatchedGenerationPipeline.resume(run_dir)


def _refuse_rounds(run_dir: Path) -> None:
    """A conversation run keeps its jobs in one engine directory per round (`rounds/<k>/`), not in its own: each
    round is built from the answers of the last, so only a resume collects and continues them."""
    if (run_dir / ROUNDS_DIR).is_dir():
        raise ConfigError(
            f"{run_dir} sends conversations in rounds (the next built from the answers of the last): "
            f"`speceval resume {run_dir}` collects and continues them without sending anything twice"
        )


def fetch(args: argparse.Namespace) -> int:
    """`speceval fetch`: collect what has finished and write results; submit nothing."""
    pipeline = _generation(args.run_dir)
    _refuse_rounds(args.run_dir)
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

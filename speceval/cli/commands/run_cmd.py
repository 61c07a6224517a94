"""`speceval run EXPERIMENT.yaml [--offline]`: run (or resume) a whole experiment grid."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speceval.cli.exits import ExitCode
from speceval.cli.flags import add_offline_flag
from speceval.ranges import ASSUME_ICC, ASSUME_RATE, flag_type


def register(commands: Any) -> None:
    """Add the `run` subcommand."""
    parser = commands.add_parser("run", help="run or resume an experiment grid from a YAML file")
    parser.add_argument("experiment", type=Path)
    add_offline_flag(parser, "answers")
    parser.add_argument("--resume", action="store_true", help="accepted for clarity: running again always resumes")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print each stage's requests, jobs and cost, and the precision plan; send and write nothing",
    )
    parser.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON on stdout")
    # Defaults in speceval.experiments.precision (not imported here: `--help` must not import pydantic).
    parser.add_argument(
        "--assume-rate",
        type=flag_type(ASSUME_RATE),
        help="with --dry-run: the compliance rate the precision plan assumes (default 0.8)",
    )
    parser.add_argument(
        "--assume-icc",
        type=flag_type(ASSUME_ICC),
        help="with --dry-run: how alike two answers to one input are, 0-1 (default 0.3)",
    )
    parser.add_argument(
        "--no-figures",
        dest="figures",
        action="store_false",
        help="the study's report draws no figures (faster at scale; the page says so): the same tables and CSVs",
    )
    parser.add_argument("--verbose", action="store_true")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import shlex
    import sys

    from speceval.cli.console import console, report_stop, setup_logging, stdout, synthetic_banner
    from speceval.cli.flags import given_poll_interval
    from speceval.experiments.runner import preflight, run_experiment

    plan_only = [
        flag
        for flag, given in (
            ("--json", args.json),
            ("--assume-rate", args.assume_rate is not None),
            ("--assume-icc", args.assume_icc is not None),
        )
        if given
    ]
    if plan_only and not args.dry_run:
        from speceval.errors import ConfigError

        # Refused rather than ignored: whoever typed them expected a plan, not a paid run.
        raise ConfigError(
            f"{' and '.join(plan_only)} {'goes' if len(plan_only) == 1 else 'go'} with --dry-run (a run prints "
            "its progress, not a plan)"
        )
    if args.dry_run:
        from speceval.cli.commands.run_plan import show_plan

        return show_plan(
            args.experiment, offline=args.offline, rate=args.assume_rate, icc=args.assume_icc, as_json=args.json
        )
    # Exit 2 with file, line and key before anything is written (the log included) or submitted.
    _, output_dir, offline = preflight(args.experiment, offline=args.offline)
    # As for the other commands, $SPECEVAL_POLL_INTERVAL (range-checked) wins over the file's engine.poll_interval.
    poll_interval = given_poll_interval(None)
    # The experiment's log (paths in an experiment file are relative to it): every stage's failures and stops.
    setup_logging(args.verbose, output_dir / "logs" / "experiment.log")
    if offline:
        console.print(synthetic_banner())
    resume = shlex.join(
        [sys.executable, "-m", "speceval", "run", str(args.experiment)] + (["--offline"] if args.offline else [])
    )
    try:
        outcome = run_experiment(
            args.experiment,
            offline=args.offline,
            observer=_progress,
            poll_interval=poll_interval,
            figures=args.figures,
        )
    except KeyboardInterrupt:
        report_stop(f"\nInterrupted; every run's state is saved. Resume with: {resume}")
        return ExitCode.STOPPED
    if not outcome.finished:
        report_stop(f"[yellow]Stopped: {outcome.reason}.[/] Resume with: {resume}", outcome.budget_line)
        return ExitCode.STOPPED
    # Where the files are: the file's `output_dir` is relative to it (`configs/../../demo` was shown), and `..` is
    # the file system's to resolve (past a symlinked folder it is not the text's parent).
    stdout.print(f"Experiment finished: {Path(outcome.output_dir).resolve()}")
    if outcome.report is not None:
        stdout.print(f"Report: {Path(outcome.report).resolve()}")
    from rich.markup import escape

    for warning in outcome.judge_warnings:  # the judge card's verdict, where the run ends, not only in the report
        stdout.print(f"[yellow]Judge card:[/] {escape(warning)}")
    return ExitCode.FINISHED


def _progress(message: str) -> None:
    """A task changed state: print the time, the task and the overview of every stage (model names are text, not
    markup)."""
    from datetime import datetime

    from rich.markup import escape

    from speceval.cli.console import console

    console.print(f"[dim]{datetime.now():%H:%M:%S}[/] {escape(message)}")

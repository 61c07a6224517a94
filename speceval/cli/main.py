"""`speceval` (also `python -m speceval`): the operations command. Each subcommand lives in its own module."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from speceval.cli.commands import (
    convert_cmd,
    cost_cmd,
    emulator_cmd,
    exchange_cmd,
    inputs_cmd,
    jobs_cmd,
    report_cmd,
    run_cmd,
    status_cmd,
    validate_cmd,
)
from speceval.cli.exits import exit_process, run_command
from speceval.cli.parsing import StrictArgumentParser


def build_parser() -> argparse.ArgumentParser:
    """The `speceval` parser with every subcommand registered."""
    # Strict: no abbreviated flags, and every subcommand parser is built with the same class.
    parser = StrictArgumentParser(prog="speceval", description="Batch-API evaluation of model specs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    emulator_cmd.register(commands)
    convert_cmd.register(commands)
    status_cmd.register(commands)
    jobs_cmd.register(commands)
    cost_cmd.register(commands)
    validate_cmd.register(commands)
    report_cmd.register(commands)
    inputs_cmd.register(commands)
    run_cmd.register(commands)
    exchange_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `speceval` command; returns the exit code."""
    args = build_parser().parse_args(argv)

    def handle() -> int:
        from speceval.cli.console import setup_logging  # rich loads when a command runs, not for --help

        setup_logging(verbose=False)  # warnings on screen, redacted; a command with a log file sets up its own
        return int(args.handler(args))

    return run_command(handle)


def console_script() -> NoReturn:
    """The `speceval` console script: `main`, then the process ends with its code (`exit_process` says why)."""
    exit_process(main())

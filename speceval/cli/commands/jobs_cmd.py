"""`speceval cancel PATH [--batch ID] [--all]`, `speceval fetch RUN_DIR`, `speceval monitor|resume RUN_DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speceval.ranges import BUDGET_USD, POLL_INTERVAL, TIMEOUT_HOURS, flag_type


def register(commands: Any) -> None:
    """Add the `cancel`, `fetch`, `monitor` and `resume` subcommands."""
    cancel = commands.add_parser(
        "cancel", help="cancel a run's running jobs at the provider (or, with --all, every job below a folder)"
    )
    cancel.add_argument("run_dir", type=Path, help="a run, a conversation run, an experiment's folder or any folder")
    cancel.add_argument("--batch", help="only this job id (found in any run below the folder)")
    cancel.add_argument(
        "--all",
        action="store_true",
        help="every running job of every run below the folder (an experiment's, a conversation's rounds)",
    )
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


# The bodies import the engine, pipelines and SDKs: only when the command runs, never for --help.
def _cancel(args: argparse.Namespace) -> int:
    from speceval.cli.commands.jobs_actions import cancel

    return cancel(args)


def _fetch(args: argparse.Namespace) -> int:
    from speceval.cli.commands.jobs_actions import fetch

    return fetch(args)


def _monitor(args: argparse.Namespace) -> int:
    from speceval.cli.commands.jobs_actions import monitor

    return monitor(args)

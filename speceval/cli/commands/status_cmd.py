"""`speceval status [PATH ...] [--json] [--no-refresh]`: one table of every job under the given run directories."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    """Add the `status` subcommand."""
    parser = commands.add_parser("status", help="show every provider job of runs and experiments")
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="run or experiment directories")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--no-refresh", action="store_true", help="show recorded states; do not ask the provider")
    parser.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speceval.cli.commands.status_view import (
        show_status,  # rich and the providers load when it runs, not for --help
    )

    return show_status(args)

"""`speceval cost PATH ... [--json]`: what runs cost, per run, model and stage."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    """Add the `cost` subcommand."""
    parser = commands.add_parser("cost", help="spend per run, model and stage")
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="run or experiment directories")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speceval.cli.commands.cost_view import show_cost  # rich and the price table load when it runs, not for --help

    return show_cost(args)

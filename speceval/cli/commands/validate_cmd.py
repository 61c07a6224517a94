"""`speceval validate SPEC [INPUTS_DIR]`: check files as a run would, without submitting anything."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    """Add the `validate` subcommand."""
    parser = commands.add_parser("validate", help="check a spec (and an inputs directory) without submitting")
    parser.add_argument("spec", type=Path)
    parser.add_argument("inputs_dir", type=Path, nargs="?")
    parser.add_argument("--allow-unknown-statements", action="store_true")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speceval.cli.console import stdout
    from speceval.inputs import load_inputs
    from speceval.spec import load_spec

    spec = load_spec(args.spec)  # InputError (exit 2, file/line/field) on the first problem
    stdout.print(f"{args.spec}: {len(spec)} statement(s), valid")
    if args.inputs_dir is not None:
        inputs = load_inputs(args.inputs_dir, spec, allow_unknown_statements=args.allow_unknown_statements)
        skipped = f", {len(inputs.skipped_files)} file(s) skipped" if inputs.skipped_files else ""
        conversations = sum(entry.conversations for entry in inputs.statements)
        rounds = f" ({conversations} conversation(s), up to {inputs.max_rounds} turns)" if conversations else ""
        stdout.print(
            f"{args.inputs_dir}: {len(inputs)} input(s){rounds} for {len(inputs.statement_ids)} statement(s), "
            f"valid{skipped}"
        )
    return 0

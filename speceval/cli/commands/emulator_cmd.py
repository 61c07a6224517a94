"""`speceval emulator --port N`: serve the provider emulator until interrupted."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    """Add the `emulator` subcommand."""
    parser = commands.add_parser("emulator", help="serve the local provider emulator (OpenAI, Anthropic, Gemini)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--state-dir", type=Path, help="persist jobs and files here (survives restarts)")
    parser.add_argument("--faults", type=Path, help="JSON file of fault settings (see speceval.emulator.FaultConfig)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import json

    from speceval.cli.console import console
    from speceval.emulator import FaultConfig, serve
    from speceval.errors import InputError

    faults = FaultConfig()
    if args.faults is not None:
        try:
            faults = FaultConfig.model_validate(json.loads(args.faults.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise InputError(args.faults, f"not a valid fault configuration: {exc}") from None

    def announce(base: str) -> None:  # the bound address: with --port 0 the port is known only once bound
        console.print(
            f"speceval emulator on {base}\n"
            f"  OPENAI_BASE_URL={base}/openai/v1\n  ANTHROPIC_BASE_URL={base}/anthropic\n"
            f"  GOOGLE_GEMINI_BASE_URL={base}/gemini\nAnswers are synthetic. Ctrl+C stops it."
        )

    try:
        serve(host=args.host, port=args.port, faults=faults, state_dir=args.state_dir, on_ready=announce)
    except KeyboardInterrupt:
        console.print("emulator stopped")
    return 0

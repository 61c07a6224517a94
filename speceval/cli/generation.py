"""`python -m batched_examples.run_batched_generation`: the original flags plus the engine's options.

Flags default to None so that "not given" is distinct from "given the default": on `--resume`, only the flags a
user actually passed change the run, and flags that would change what was already submitted are refused.

Every check (flags and their ranges, files, provider, credentials) happens before the run directory is created, so
a refused command leaves nothing behind. A command repeated after its run finished reuses that run (`--new-run`
forces a fresh one); repeated while its run is unfinished, it resumes it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from speceval.cli.command_defaults import GENERATION_BATCH_SIZE
from speceval.cli.exits import run_command
from speceval.cli.flags import (
    add_cost_arguments,
    add_engine_arguments,
    add_offline_flag,
    add_ranged_flags,
    add_realtime_arguments,
    add_vertex_arguments,
    limit_flags,
)
from speceval.cli.parsing import StrictArgumentParser
from speceval.defaults import (
    DEFAULT_GENERATION_OUTPUT,
    DEFAULT_MAX_TURNS,
    Tier,
)
from speceval.ranges import (
    MAX_TURNS,
    flag_type,
)

DEFAULT_BATCH_SIZE = GENERATION_BATCH_SIZE


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept separate so tests and docs can inspect it)."""
    parser = StrictArgumentParser(
        prog="python -m batched_examples.run_batched_generation",
        description="Generate a candidate model's answers to pre-generated inputs through a provider batch API.",
    )
    parser.add_argument("--spec-path", type=Path, help="spec JSONL (one statement per line)")
    parser.add_argument("--pregenerated-inputs-dir", type=Path, help="folder of <statement_id>.json input files")
    parser.add_argument("--model-name", help="candidate model, e.g. gpt-4.1-mini-2025-04-14")
    parser.add_argument("--org", help="provider: openai, anthropic, google or vertex (default: from the model name)")
    parser.add_argument("--spec-name", help="label of the spec in the output path (default: the spec file's stem)")
    parser.add_argument("--output-base-dir", type=Path, help=f"default: {DEFAULT_GENERATION_OUTPUT}")
    add_engine_arguments(parser, DEFAULT_BATCH_SIZE, "answer")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run; submits nothing twice")
    parser.add_argument(
        "--new-run",
        action="store_true",
        help="start a fresh run even if an identical one already finished (by default it is reused, not paid again)",
    )
    add_offline_flag(parser, "answers")
    parser.add_argument(
        "--allow-unknown-statements", action="store_true", help="skip inputs files that name no spec statement"
    )
    parser.add_argument("--verbose", action="store_true", help="debug logging on the console")
    add_cost_arguments(parser)
    add_vertex_arguments(parser, "Vertex AI batch prediction (--org vertex); remembered for --resume", from_yaml=False)
    simulated = parser.add_argument_group(
        "simulated user", "a second model writes each next user turn from the transcript; remembered for --resume"
    )
    simulated.add_argument("--simulated-user-model", help="the user model, e.g. claude-haiku-4-5-20251001")
    simulated.add_argument("--simulated-user-org", help="its provider (default: from the model name)")
    simulated.add_argument(
        "--simulated-user-instructions",
        metavar="TEXT|@FILE",
        help="who the user is and what they want (text, or @file for a file's text)",
    )
    simulated.add_argument(
        "--simulated-user-stop-word", help="an answer of the user model containing it ends the conversation (not sent)"
    )
    simulated.add_argument(
        "--simulated-user-tier",
        choices=[Tier.BATCH.value, Tier.FLEX.value, Tier.STANDARD.value],
        help="its service tier (docs/service-tiers.md); default: reached as the candidate is (realtime when the "
        "candidate is realtime or at flex/standard, else its batch API)",
    )
    # Its realtime turns' own limits (a rate-limited user server, or its flex/standard account), as `--rpm`, ...
    add_ranged_flags(simulated, limit_flags("--simulated-user-"))
    simulated.add_argument(
        "--max-turns",
        type=flag_type(MAX_TURNS),
        help=f"most candidate answers per conversation (default {DEFAULT_MAX_TURNS})",
    )
    add_realtime_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    # Imported here, not at the top: the pipeline, pydantic and the SDKs load only when a run starts, so
    # `--help` and flag errors answer at once.
    from speceval.cli.generation_command import generate

    return run_command(lambda: generate(args))

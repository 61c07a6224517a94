"""`run_batched_binary_compliance` and `run_batched_ranking`: flags, YAML, offline mode, progress and summaries.

Both commands are resumable by running them again with the same configuration: the output directories hold
all state, so nothing already judged is sent again. The original SpecEval's YAML files are read as they are
(`speceval.pipelines.judge_config`), including their Vertex AI buckets and API keys.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from speceval.cli.command_defaults import JUDGE_BATCH_SIZE, KEY_FLAGS, Kind, script
from speceval.cli.exits import run_command
from speceval.cli.flags import (
    add_cost_arguments,
    add_engine_arguments,
    add_offline_flag,
    add_ray_arguments,
    add_tier_arguments,
    add_vertex_arguments,
)
from speceval.cli.parsing import StrictArgumentParser
from speceval.defaults import (
    BUILT_IN_ORGS,
    DEFAULT_JUDGE_OUTPUT,
    Mode,
    Scope,
)
from speceval.ranges import (
    MAX_CONCURRENCY,
    RPM,
    flag_type,
)

DEFAULT_BATCH_SIZE = JUDGE_BATCH_SIZE


def build_parser(kind: Kind) -> argparse.ArgumentParser:
    """The parser of one judge command. Every flag defaults to None: 'not given' never overrides the YAML."""
    parser = StrictArgumentParser(
        prog=f"python -m batched_examples.{script(kind)}",
        description=(
            "Judge candidates' answers for compliance with their statements."
            if kind == "compliance"
            else "Compare candidates two at a time (every ordered pair, both orders) on their shared inputs."
        ),
        epilog="Run the same command again to resume: nothing already judged is sent twice.",
    )
    parser.add_argument("--config-file", type=Path, help="YAML file with the keys below (flags override it)")
    parser.add_argument("--spec-path", type=Path, help="the spec JSONL the candidates answered")
    parser.add_argument("--spec-name", help="label of the spec in output paths (default: the spec file's stem)")
    parser.add_argument(
        "--candidate-generation-dirs",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="generation run directories or their results/ folders (replaces the YAML list)",
    )
    prefix = "compliance" if kind == "compliance" else "ranking"
    parser.add_argument(f"--{prefix}-judge-model-name", dest="judge_model", help="the judge model")
    parser.add_argument(
        f"--{prefix}-judge-org",
        dest="judge_org",
        help=f"the judge's provider: {', '.join(BUILT_IN_ORGS)} (default: from the model name); "
        "google with --input-bucket/--output-bucket is Vertex AI",
    )
    if kind == "compliance":
        parser.add_argument(
            "--mode", choices=(Mode.BINARY, Mode.LIKERT), help="binary verdicts (default) or 1-5 ratings"
        )
        parser.add_argument(
            "--scope",
            choices=tuple(Scope),
            help="conversations: one verdict on the whole transcript (default) or one per assistant "
            "turn, in its context",
        )
        parser.add_argument(
            "--no-canaries",
            action="store_true",
            help="do not also judge the spec's own example responses (the judge check in the "
            "report's judge_checks.csv)",
        )
    parser.add_argument("--output-dir-base", type=Path, help=f"default: {DEFAULT_JUDGE_OUTPUT[kind]}")
    add_engine_arguments(parser, DEFAULT_BATCH_SIZE, "judge answer")
    add_cost_arguments(parser)
    add_offline_flag(parser, "verdicts")
    parser.add_argument("--verbose", action="store_true", help="debug logging on the console")
    add_vertex_arguments(parser, "Vertex AI batch prediction (judge org google with buckets)", from_yaml=True)
    ray = parser.add_argument_group(
        "ray or realtime judge",
        f"a judge without a batch API: Ray Data LLM (--{prefix}-judge-org ray) or concurrent calls "
        f"(--{prefix}-judge-org openai-compatible|together)",
    )
    ray.add_argument("--base-url", help="the judge's OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    ray.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the endpoint's key")
    ray.add_argument("--rpm", type=flag_type(RPM), help="judge requests per minute across all workers")
    ray.add_argument("--max-concurrency", type=flag_type(MAX_CONCURRENCY), help="judge requests in flight at once")
    add_ray_arguments(parser)
    add_tier_arguments(parser)
    for name in KEY_FLAGS:  # accepted only to say what to do instead
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, help=argparse.SUPPRESS)
    return parser


def compliance_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `run_batched_binary_compliance`; returns the exit code."""
    args = build_parser("compliance").parse_args(argv)
    from speceval.cli.judge_command import run  # the pipelines load only when judging starts, not for --help

    return run_command(lambda: run(args, "compliance"))


def ranking_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `run_batched_ranking`; returns the exit code."""
    args = build_parser("ranking").parse_args(argv)
    from speceval.cli.judge_command import run  # the pipelines load only when judging starts, not for --help

    return run_command(lambda: run(args, "ranking"))

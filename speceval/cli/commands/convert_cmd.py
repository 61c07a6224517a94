"""`speceval convert-model-spec INPUT.md OUTPUT.jsonl`: OpenAI's Model Spec markdown → spec JSONL."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    """Add the `convert-model-spec` subcommand."""
    parser = commands.add_parser(
        "convert-model-spec",
        help="convert OpenAI's Model Spec markdown into spec JSONL (one statement per authority= section)",
    )
    parser.add_argument("input", type=Path, metavar="INPUT.md", help="the Model Spec markdown (e.g. model_spec.md)")
    parser.add_argument("output", type=Path, metavar="OUTPUT.jsonl", help="the spec JSONL to write")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speceval.cli.console import stdout
    from speceval.paths import check_output_file
    from speceval.spec_convert import convert_model_spec, write_spec_jsonl

    check_output_file(args.output, "OUTPUT.jsonl")
    spec = write_spec_jsonl(convert_model_spec(args.input), args.output)
    levels = Counter(statement.authority_level.value for statement in spec.statements)
    examples = sum(len(statement.metadata.examples) for statement in spec.statements)
    stdout.print(
        f"Wrote {len(spec)} statements ({', '.join(f'{n} {level}' for level, n in levels.most_common())}) "
        f"with {examples} examples to {args.output}"
    )
    return 0

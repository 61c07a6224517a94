"""`speceval export-requests RUN_DIR OUT.jsonl` and `speceval import-results RUN_DIR RESULTS.jsonl`: hand a run's
pending requests to `vllm run-batch` (or any OpenAI-batch-compatible runner) and map its answers back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speceval.cli.exits import ExitCode


def register(commands: Any) -> None:
    """Add the `export-requests` and `import-results` subcommands: each takes a run folder and one JSONL file."""
    for name, text, run_dir, (file, metavar, file_text), handler in (
        (
            "export-requests",
            "write a run's pending requests in the OpenAI Batch file format (for vllm run-batch)",
            "a generation run directory",
            ("out", "OUT.jsonl", "the request file to write"),
            _export,
        ),
        (
            "import-results",
            "map a batch runner's output file (OpenAI Batch output format) back into a run by custom id",
            "the generation run the requests came from",
            ("results", "RESULTS.jsonl", "the runner's output file"),
            _import,
        ),
    ):
        parser = commands.add_parser(name, help=text, allow_abbrev=False)
        parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help=run_dir)
        parser.add_argument(file, type=Path, metavar=metavar, help=file_text)
        parser.set_defaults(handler=handler)


def _export(args: argparse.Namespace) -> int:
    from speceval.cli.console import stdout
    from speceval.pipelines.exchange import export_requests

    summary = export_requests(args.run_dir, args.out)
    stdout.print(
        f"Wrote {summary.exported:,} pending request(s) to {summary.path} "
        f"({summary.already_final:,} already have a final outcome).\n"
        f"Run them, e.g.: vllm run-batch -i {summary.path} -o results.jsonl --model <model>\n"
        f"Then: speceval import-results {args.run_dir} results.jsonl"
    )
    return ExitCode.FINISHED


def _import(args: argparse.Namespace) -> int:
    from speceval.cli.console import console, stdout
    from speceval.pipelines.exchange import import_results

    summary = import_results(args.run_dir, args.results)
    counts = ", ".join(f"{n:,} {outcome}" for outcome, n in sorted(summary.imported.items())) or "nothing"
    stdout.print(f"Imported {counts} into {args.run_dir}; {summary.still_pending:,} request(s) still pending.")
    if summary.duplicates:
        console.print(f"[yellow]{summary.duplicates} line(s) repeated a custom id already imported; ignored.[/]")
    if summary.unknown_ids:
        console.print(
            f"[red]{len(summary.unknown_ids)} line(s) name no request of this run "
            f"(first: {summary.unknown_ids[0]}): is this the output of another run's export?[/]"
        )
        return ExitCode.USAGE
    return ExitCode.FINISHED if summary.still_pending == 0 else ExitCode.STOPPED

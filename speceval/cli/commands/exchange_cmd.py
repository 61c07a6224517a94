"""`speceval export-requests RUN_DIR OUT.jsonl` and `speceval import-results RUN_DIR RESULTS.jsonl`: hand a run's
pending requests to `vllm run-batch` (or any OpenAI-batch-compatible runner) and map its answers back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speceval.cli.exits import ExitCode


def register(commands: Any) -> None:
    """Add the `export-requests` and `import-results` subcommands."""
    export = commands.add_parser(
        "export-requests",
        help="write a run's pending requests in the OpenAI Batch file format (for vllm run-batch)",
        allow_abbrev=False,
    )
    export.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a generation run directory")
    export.add_argument("out", type=Path, metavar="OUT.jsonl", help="the request file to write")
    export.set_defaults(handler=_export)
    imported = commands.add_parser(
        "import-results",
        help="map a batch runner's output file (OpenAI Batch output format) back into a run by custom id",
        allow_abbrev=False,
    )
    imported.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the generation run the requests came from")
    imported.add_argument("results", type=Path, metavar="RESULTS.jsonl", help="the runner's output file")
    imported.set_defaults(handler=_import)


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

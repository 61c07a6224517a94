"""`python -m batched_examples.run_batched_generation`: the original flags plus the engine's options.

Flags default to None so that "not given" is distinct from "given the default": on `--resume`, only the flags a
user actually passed change the run, and flags that would change what was already submitted are refused.

Every check (flags and their ranges, files, provider, credentials) happens before the run directory is created, so
a refused command leaves nothing behind. A command repeated after its run finished reuses that run (`--new-run`
forces a fresh one); repeated while its run is unfinished, it resumes it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.batch.model import BatchedModel, GenerationParams
from speceval.batch.progress import StopReason
from speceval.cli.console import (
    ProgressObserver,
    console,
    report_stop,
    setup_logging,
    stdout,
    summary_table,
    synthetic_banner,
)
from speceval.cli.dry_run import budget_option, show_dry_run
from speceval.cli.exits import ExitCode, run_command
from speceval.cli.parsing import StrictArgumentParser
from speceval.cli.same_run import check_resume_flags, report_reused
from speceval.costs import PRICES_ENV
from speceval.errors import ConfigError
from speceval.manifest import RunManifest
from speceval.offline import OFFLINE_POLL_INTERVAL, offline_provider
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.providers.registry import resolve_org
from speceval.raydata.settings import MANIFEST_KEY as RAY_KEY
from speceval.raydata.settings import ray_settings
from speceval.realtime.settings import add_realtime_arguments, build_model, realtime_settings
from speceval.runs import find_identical_runs
from speceval.settings_checks import (
    BATCH_SIZE,
    BUDGET_USD,
    MAX_ATTEMPTS,
    MAX_TOKENS,
    POLL_INTERVAL,
    TEMPERATURE,
    TIMEOUT_HOURS,
    check,
    flag_type,
)

DEFAULT_BATCH_SIZE = 500
DEFAULT_POLL_INTERVAL = 60.0
DEFAULT_TIMEOUT_HOURS = 24.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_MAX_TOKENS = 4096


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
    parser.add_argument("--output-base-dir", type=Path, help="default: data/batched_generations")
    parser.add_argument(
        "--batch-size",
        type=flag_type(BATCH_SIZE),
        help=f"most requests per provider job (default {DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument("--temperature", type=flag_type(TEMPERATURE), help="sampling temperature, 0-2 (default 0.0)")
    parser.add_argument(
        "--max-tokens", type=flag_type(MAX_TOKENS), help=f"most output tokens per answer (default {DEFAULT_MAX_TOKENS})"
    )
    parser.add_argument(
        "--poll-interval",
        type=flag_type(POLL_INTERVAL),
        help=f"seconds between polls (default $SPECEVAL_POLL_INTERVAL or {DEFAULT_POLL_INTERVAL:g})",
    )
    parser.add_argument(
        "--timeout-hours",
        type=flag_type(TIMEOUT_HOURS),
        help=f"stop waiting after this long (default {DEFAULT_TIMEOUT_HOURS:g})",
    )
    parser.add_argument(
        "--max-attempts",
        type=flag_type(MAX_ATTEMPTS),
        help=f"jobs one request may be sent in (default {DEFAULT_MAX_ATTEMPTS})",
    )
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run; submits nothing twice")
    parser.add_argument(
        "--new-run",
        action="store_true",
        help="start a fresh run even if an identical one already finished (by default it is reused, not paid again)",
    )
    parser.add_argument("--offline", action="store_true", help="use the built-in emulator (synthetic answers)")
    parser.add_argument(
        "--allow-unknown-statements", action="store_true", help="skip inputs files that name no spec statement"
    )
    parser.add_argument("--verbose", action="store_true", help="debug logging on the console")
    parser.add_argument(
        "--dry-run", action="store_true", help="write the request files and print the estimated cost; submit nothing"
    )
    parser.add_argument(
        "--budget-usd",
        type=flag_type(BUDGET_USD),
        help="stop submitting when the next job's estimated cost would exceed this",
    )
    parser.add_argument("--prices", type=Path, help=f"price table overriding the shipped one (or ${PRICES_ENV})")
    vertex = parser.add_argument_group("vertex", "Vertex AI batch prediction (--org vertex); remembered for --resume")
    vertex.add_argument("--project", help="Google Cloud project (default $GOOGLE_CLOUD_PROJECT)")
    vertex.add_argument("--location", help="Vertex AI region, e.g. us-central1 (default $GOOGLE_CLOUD_LOCATION)")
    vertex.add_argument("--input-bucket", help="GCS bucket the request files are uploaded to")
    vertex.add_argument("--output-bucket", help="GCS bucket the jobs write their predictions to")
    add_realtime_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    return run_command(lambda: _generate(args))


def _engine_options(args: argparse.Namespace, base: EngineOptions | None, offline: bool) -> EngineOptions:
    base = base or EngineOptions(
        batch_size=DEFAULT_BATCH_SIZE,
        poll_interval=DEFAULT_POLL_INTERVAL,
        timeout_hours=DEFAULT_TIMEOUT_HOURS,
        max_attempts=DEFAULT_MAX_ATTEMPTS,
    )
    poll = args.poll_interval
    if poll is None and os.environ.get("SPECEVAL_POLL_INTERVAL"):
        try:
            poll = float(os.environ["SPECEVAL_POLL_INTERVAL"])
        except ValueError:
            raise ConfigError("SPECEVAL_POLL_INTERVAL must be a number of seconds") from None
        check(POLL_INTERVAL, poll, source="SPECEVAL_POLL_INTERVAL")
    if poll is None and offline:
        poll = OFFLINE_POLL_INTERVAL
    options = EngineOptions(
        batch_size=args.batch_size if args.batch_size is not None else base.batch_size,
        poll_interval=poll if poll is not None else base.poll_interval,
        # The timeout bounds one invocation, not the run: a resume waits the default again unless told otherwise.
        timeout_hours=args.timeout_hours if args.timeout_hours is not None else DEFAULT_TIMEOUT_HOURS,
        max_attempts=args.max_attempts if args.max_attempts is not None else base.max_attempts,
    )
    options.budget = budget_option(args.budget_usd, args.prices)
    return options


def _pipeline(args: argparse.Namespace) -> BatchedGenerationPipeline:
    """The run this command asks for: `--resume`'s, an identical earlier run's, or a new one (nothing on disk yet)."""
    if args.resume is not None:
        check_resume_flags(args, RunManifest.load(args.resume), args.resume)
        return _resumed(args, args.resume)
    missing = [flag for flag, value in (
        ("--spec-path", args.spec_path),
        ("--pregenerated-inputs-dir", args.pregenerated_inputs_dir),
        ("--model-name", args.model_name),
    ) if value is None]
    if missing:
        raise ConfigError(f"missing {', '.join(missing)} (or pass --resume RUN_DIR to continue a run)")
    config = GenerationConfig(
        spec_path=args.spec_path,
        inputs_dir=args.pregenerated_inputs_dir,
        model_name=args.model_name,
        spec_name=args.spec_name,
        org=args.org,
        output_base_dir=args.output_base_dir or Path("data/batched_generations"),
        params=GenerationParams(
            temperature=args.temperature if args.temperature is not None else 0.0,
            max_tokens=args.max_tokens if args.max_tokens is not None else DEFAULT_MAX_TOKENS,
        ),
        engine=_engine_options(args, None, args.offline),
        allow_unknown_statements=args.allow_unknown_statements,
        offline=args.offline,
    )
    return BatchedGenerationPipeline(config)


def _resumed(args: argparse.Namespace, run_dir: Path) -> BatchedGenerationPipeline:
    pipeline = BatchedGenerationPipeline.resume(run_dir)
    pipeline.config.engine = _engine_options(args, pipeline.config.engine, pipeline.config.offline)
    return pipeline


def _identity_draft(args: argparse.Namespace, pipeline: BatchedGenerationPipeline) -> RunManifest:
    """The new run's manifest with its endpoint settings, as an earlier identical run would have recorded them."""
    draft = pipeline.draft_manifest().model_copy(deep=True)
    if pipeline.provider == "ray":
        draft.parameters[RAY_KEY] = ray_settings(args, None, offline=pipeline.config.offline).model_dump()
    else:
        realtime_settings(args, draft, resolve_org(pipeline.config.model_name, pipeline.provider))
    return draft


def _generate(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args)  # validates every input file before anything else happens
    if not pipeline.resuming and not args.new_run:
        earlier = find_identical_runs(pipeline.run_dir.parent, _identity_draft(args, pipeline))
        if earlier.finished:
            report_reused(earlier.finished[0], RunManifest.load(earlier.finished[0]))
            return ExitCode.FINISHED
        if earlier.unfinished:
            console.print(f"An identical run did not finish; continuing it (nothing is submitted twice): "
                          f"{earlier.unfinished[0]}. To start a fresh one instead, add --new-run.")
            pipeline = _resumed(args, earlier.unfinished[0])
    config = pipeline.config
    offline = config.offline or args.offline
    resume_command = shlex.join([Path(sys.executable).name, "-m", "batched_examples.run_batched_generation",
                                 "--resume", str(pipeline.run_dir)])
    with ExitStack() as stack:
        # Everything that can refuse the command runs before `write_manifest` creates the run directory.
        provider_options = stack.enter_context(offline_provider(pipeline.run_dir, pipeline.provider)) if offline else {}
        provider_options.update(_vertex_options(args, pipeline))
        model = build_model(args, pipeline, provider_options)  # batch adapter, or realtime (--realtime, --org)
        pipeline.write_manifest()
        setup_logging(args.verbose, pipeline.run_dir / "logs" / "run.log")
        if offline:
            console.print(synthetic_banner())
        console.print(
            f"{'Resuming' if pipeline.resuming else 'Starting'} generation: {pipeline.request_count} request(s), "
            f"model {config.model_name} ({pipeline.provider}), run directory {pipeline.run_dir}"
        )
        if args.dry_run:
            if isinstance(model, BatchedModel):
                return _dry_run(pipeline, model, args.prices, resume_command)
            return _plan_only(pipeline, resume_command)
        observer = stack.enter_context(ProgressObserver())
        try:
            summary = pipeline.run(model, observer)
        except KeyboardInterrupt:
            stack.close()
            remote = (
                "Jobs keep running at the provider" if isinstance(model, BatchedModel)
                else "Requests in flight were abandoned (finished ones are saved)"
            )
            report_stop(f"\nInterrupted. {remote}; state is saved.\nResume with: {resume_command}")
            return ExitCode.STOPPED
    stdout.print(summary_table(summary, f"{config.model_name} on {pipeline.spec_name}"))
    if offline:
        console.print("[bold yellow]Answers are SYNTHETIC (offline emulator), not real model output.[/]")
    stdout.print(f"Results: {pipeline.run_dir / 'results'}")
    if summary.finished:
        return ExitCode.FINISHED
    if summary.reason is StopReason.BUDGET:
        resume_command += " --budget-usd <a higher limit>"
    report_stop(
        f"[yellow]Stopped with {summary.outstanding} request(s) outstanding ({summary.reason.value}).[/] "
        f"Resume with: {resume_command}"
    )
    return ExitCode.STOPPED


_VERTEX_FLAGS = ("project", "location", "input_bucket", "output_bucket")


def _vertex_options(args: argparse.Namespace, pipeline: BatchedGenerationPipeline) -> dict[str, str]:
    """The Vertex flags as provider options (kept in the draft run.json, so a resume needs none of them again)."""
    given = {name: getattr(args, name) for name in _VERTEX_FLAGS if getattr(args, name, None) is not None}
    if pipeline.provider != "vertex":
        if given:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in given)
            raise ConfigError(f"{flags} apply to --org vertex only")
        return {}
    manifest = pipeline.draft_manifest()
    options = {**manifest.parameters.get("vertex", {}), **given}
    if given:
        manifest.parameters["vertex"] = options
    return options


def _plan_only(pipeline: BatchedGenerationPipeline, resume_command: str) -> int:
    """A realtime or Ray run has no provider jobs to plan: the run directory alone, for `export-requests`."""
    manifest = pipeline.write_manifest()
    manifest.status = "planned"
    manifest.save(pipeline.run_dir)
    console.print(
        f"Nothing was sent. To run the requests here: {resume_command}\n"
        f"To run them elsewhere (vllm run-batch): speceval export-requests {pipeline.run_dir} requests.jsonl"
    )
    return ExitCode.FINISHED


def _dry_run(pipeline: BatchedGenerationPipeline, model: BatchedModel, prices: Path | None, resume_command: str) -> int:
    intents = pipeline.plan(model)
    show_dry_run(model, [(pipeline.run_dir, intent) for intent in intents], prices, resume_command)
    return ExitCode.FINISHED

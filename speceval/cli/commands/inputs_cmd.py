"""`speceval inputs`: generate, deduplicate and rate test inputs for a spec's statements (see `speceval.inputgen`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from speceval.cli.flags import add_offline_flag
from speceval.defaults import DEFAULT_INPUTS_OUTPUT
from speceval.ranges import BATCH_SIZE, BUDGET_USD, MAX_ATTEMPTS, POLL_INTERVAL, TIMEOUT_HOURS, flag_type


def register(commands: Any) -> None:
    """Add the `inputs` subcommand."""
    parser = commands.add_parser("inputs", help="generate rated, deduplicated test inputs for a spec's statements")
    parser.add_argument("--spec-path", type=Path, help="the spec JSONL (not needed with --resume)")
    parser.add_argument("--spec-name", help="the spec's label in the output path (default: the file's stem)")
    parser.add_argument("--generator-model", help="the model that proposes inputs")
    parser.add_argument("--generator-org", help="its provider, when the name does not tell")
    parser.add_argument(
        "--rater-model",
        help="the model that rates them (default: another provider's, whose key "
        "is set; the generator itself when there is none)",
    )
    parser.add_argument("--rater-org", help="its provider, when the name does not tell")
    parser.add_argument("--per-statement", type=int, metavar="N", help="inputs to keep per statement (default 10)")
    parser.add_argument("--rating-threshold", type=int, metavar="T", help="lowest rating kept, 1-10 (default 7)")
    parser.add_argument("--max-rounds", type=int, help="rounds at most (default 3)")
    parser.add_argument(
        "--statements",
        nargs="+",
        metavar="ID",
        help="only these statements (with --pair: these besides the pairs; without: only the pairs)",
    )
    parser.add_argument(
        "--pair",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="inputs where following statement A pulls against statement B, written as inputs of both (repeatable)",
    )
    parser.add_argument("--pairs", type=Path, metavar="FILE", help="pairs from a file: two statement ids a line")
    parser.add_argument(
        "--related-pairs",
        action="store_true",
        help="pair every statement with each of its related_statements in the spec",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=DEFAULT_INPUTS_OUTPUT,
        help="runs go to OUTPUT_DIR/<spec>/input_judge/<generator>x<rater>/<timestamp>/",
    )
    # Ranges from the one table (speceval.ranges): `--batch-size 0` would cut empty jobs forever.
    parser.add_argument("--batch-size", type=flag_type(BATCH_SIZE), help="requests per job at most")
    parser.add_argument("--poll-interval", type=flag_type(POLL_INTERVAL), help="seconds between polls")
    parser.add_argument(
        "--timeout-hours", type=flag_type(TIMEOUT_HOURS), help="stop waiting after this long (resume later)"
    )
    parser.add_argument("--max-attempts", type=flag_type(MAX_ATTEMPTS), help="attempts per request")
    parser.add_argument(
        "--budget-usd",
        type=flag_type(BUDGET_USD),
        help="USD the run may spend (0: send nothing); jobs are held back while the upper bound of "
        "jobs in flight would pass it",
    )
    parser.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="write the first round's request files and show their cost; submit nothing",
    )
    add_offline_flag(parser, "inputs")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue an inputs run")
    parser.add_argument(
        "--tier",
        choices=["batch", "flex", "standard"],
        help="service tier of the generator and the rater: the Batch API (default), flex (synchronous at batch "
        "rates, OpenAI and Gemini models on the price table's flex list) or standard (docs/service-tiers.md)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speceval.batch.model import BatchedModel
    from speceval.batch.progress import StopReason
    from speceval.cli.console import console, report_stop, setup_logging, stdout, synthetic_banner
    from speceval.cli.dry_run import show_dry_run
    from speceval.cli.exits import ExitCode
    from speceval.cli.generation_command import engine_options
    from speceval.errors import ConfigError
    from speceval.inputgen.config import InputGenerationConfig, default_rater
    from speceval.inputgen.pairs import read_pairs_file
    from speceval.inputgen.pipeline import BatchedInputGenerationPipeline
    from speceval.paths import check_output_dir
    from speceval.providers.model_list import check_models
    from speceval.providers.registry import resolve_org
    from speceval.spec import load_spec

    if args.resume is not None:
        pipeline = BatchedInputGenerationPipeline.resume(args.resume)
        _refuse_changed(args, pipeline.config)
        pipeline.config.engine = engine_options(args, None, pipeline.config.offline)
    else:
        missing = [
            flag
            for flag, value in (("--spec-path", args.spec_path), ("--generator-model", args.generator_model))
            if not value
        ]
        if missing:
            raise ConfigError(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (or --resume RUN_DIR)"
            )
        check_output_dir(args.output_dir, "--output-dir")
        generator_org = resolve_org(args.generator_model, args.generator_org).org
        rater = args.rater_model or default_rater(generator_org, args.offline) or args.generator_model
        pairs = [*(args.pair or []), *(read_pairs_file(args.pairs, load_spec(args.spec_path)) if args.pairs else [])]
        statements = args.statements or ([] if pairs or args.related_pairs else None)
        config = InputGenerationConfig(
            spec_path=args.spec_path,
            spec_name=args.spec_name,
            generator_model=args.generator_model,
            generator_org=args.generator_org,
            rater_model=rater,
            rater_org=args.rater_org if args.rater_model else None,
            **{name: getattr(args, name) for name in _RECORDED if getattr(args, name) is not None},
            statements=statements,
            pairs=pairs or None,
            related_pairs=args.related_pairs,
            output_dir=args.output_dir,
            offline=args.offline,
            engine=engine_options(args, None, args.offline),
            tier=args.tier if args.tier != "batch" else None,
        )
        pipeline = BatchedInputGenerationPipeline(config)  # every check, before anything is written
    config = pipeline.config
    if not pipeline.resuming and not config.offline:  # a misspelt name is refused before the run folder exists
        check_models(
            [
                (pipeline.generator_org, config.generator_model, "--generator-model"),
                (pipeline.rater_org, config.rater_model, "--rater-model"),
            ],
            lambda org: {},
        )
    resume_command = shlex.join([sys.executable, "-m", "speceval", "inputs", "--resume", str(pipeline.run_dir)])
    pipeline.write_manifest()
    setup_logging(args.verbose, pipeline.run_dir / "logs" / "run.log")
    if config.offline:
        console.print(synthetic_banner())
    same = " (the same model rates its own proposals)" if pipeline.same_model else ""
    in_tension = f" and {len(pipeline.pairs)} pair(s) in tension" if pipeline.pairs else ""
    console.print(
        f"{'Resuming' if pipeline.resuming else 'Starting'} input generation for "
        f"{len(pipeline.statements)} statement(s){in_tension}, {config.per_statement} each: generator "
        f"{config.generator_model}, rater {config.rater_model}{same}; run directory {pipeline.run_dir}"
    )
    if args.dry_run:
        with pipeline.connect() as (generator, _):
            if not isinstance(generator, BatchedModel):
                raise ConfigError("--dry-run needs a batch provider for the generator")
            jobs = pipeline.plan_first_round(generator)
            show_dry_run(generator, jobs, args.prices, resume_command)
        console.print(
            f"Ratings follow each round: up to {pipeline.max_ratings_per_round} rating request(s) in the "
            "first round, not estimated here."
        )
        return ExitCode.FINISHED
    try:
        summary = pipeline.run()
    except KeyboardInterrupt:
        report_stop(f"\nInterrupted. Jobs keep running at the provider; state is saved.\nResume with: {resume_command}")
        return ExitCode.STOPPED
    targets = "statement(s) and pair(s)" if pipeline.pairs else "statement(s)"
    stdout.print(
        f"Kept {sum(summary.kept.values())} input(s); {summary.reached} of {len(summary.kept)} {targets} "
        f"reached {summary.target}; {summary.proposals} proposal(s), {summary.duplicates} duplicate(s) "
        f"dropped, {summary.rated} rated, {summary.rounds} round(s)."
    )
    for statement_id, kept in summary.kept.items():
        if kept < summary.target:
            stdout.print(f"  {statement_id}: {kept} of {summary.target} (see candidates.jsonl for why)")
    if config.offline:
        console.print("[bold yellow]Inputs, ratings and reasons are SYNTHETIC (offline emulator).[/]")
    stdout.print(f"Inputs: {pipeline.run_dir / 'inputs'}  (use as --pregenerated-inputs-dir)")
    if summary.finished:
        return ExitCode.FINISHED
    budget, last = config.engine.budget, None
    if budget is not None and any(s.reason is StopReason.BUDGET for s in summary.engine):
        resume_command += " --budget-usd <a higher limit>"
        unsent = sum(s.outstanding for s in summary.engine)
        last = budget.stop_line(f"{unsent} request(s) of this round, and every later round")
    report_stop(f"[yellow]Stopped before every round finished.[/] Resume with: {resume_command}", last)
    return ExitCode.STOPPED


_RECORDED = ("per_statement", "rating_threshold", "max_rounds")
"""Flags that decide what a run keeps: recorded in its run.json, so a resume cannot change them."""


def _refuse_changed(args: argparse.Namespace, config: Any) -> None:
    """A resume given one of `_RECORDED` with another value than the run's: refused, naming each flag (running on
    with the recorded value would silently ignore what the user asked for)."""
    from speceval.errors import ConfigError

    changed = [
        f"--{name.replace('_', '-')} {getattr(config, name)} -> {getattr(args, name)}"
        for name in _RECORDED
        if getattr(args, name) is not None and getattr(args, name) != getattr(config, name)
    ]
    if changed:
        raise ConfigError(
            f"{args.resume} was started with other settings ({'; '.join(changed)}); a resume keeps "
            "them: drop these flags, or start a new run"
        )

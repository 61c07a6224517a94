"""The body of the generation command (`speceval.cli.generation` parses its flags and calls `generate`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speceval.batch.costs import PriceTable
from speceval.batch.engine import EngineOptions
from speceval.batch.manifest import RunManifest
from speceval.batch.model import BatchedModel
from speceval.batch.progress import StopReason
from speceval.cli.command_defaults import GENERATION_BATCH_SIZE as DEFAULT_BATCH_SIZE
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
from speceval.cli.endpoint_flags import ray_flags, refuse_ray_flags
from speceval.cli.exits import ExitCode
from speceval.cli.flags import given_poll_interval
from speceval.cli.generation_plan import later_bounds, tier_choice
from speceval.cli.round_tiers import MANIFEST_KEY as ROUND_TIERS_KEY
from speceval.cli.round_tiers import (
    RoundTiers,
    plan_round_tiers,
    round_models,
    stored_round_tiers,
    user_at_planned_tier,
)
from speceval.cli.same_run import check_resume_flags, report_reused
from speceval.cli.tier_flags import show_tier_plan
from speceval.conversations.simulated_user import SimulatedUser, read_instructions
from speceval.conversations.transport import ModelOfRound
from speceval.defaults import (
    DEFAULT_GENERATION_OUTPUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT_HOURS,
    Tier,
)
from speceval.endpoint_keys import LIMIT_KEYS
from speceval.engines.factory import AnyModel, EndpointSettings, build_model
from speceval.engines.models import simulated_user_model
from speceval.engines.tier_plan import hour_seconds
from speceval.errors import ConfigError, first_problem
from speceval.offline import emulator_options, emulator_state_dir, offline_emulator, offline_poll_interval
from speceval.operations.learned_times import learned_here
from speceval.operations.runs import find_identical_runs
from speceval.paths import check_output_dir
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.providers.model_list import check_models
from speceval.providers.registry import resolve_org
from speceval.raydata.settings import MANIFEST_KEY as RAY_KEY
from speceval.raydata.settings import ray_settings
from speceval.realtime.model import RealtimeModel
from speceval.realtime.settings import RealtimeSettings, realtime_settings
from speceval.wire.params import GenerationParams
from speceval.wire.usage import Usage


def engine_options(args: argparse.Namespace, base: EngineOptions | None, offline: bool) -> EngineOptions:
    """The engine options the flags ask for (`--batch-size`, `--poll-interval`, `--timeout-hours`,
    `--max-attempts`, `--budget-usd` with `--prices`) over `base` or the defaults."""
    base = base or EngineOptions(
        batch_size=DEFAULT_BATCH_SIZE,
        poll_interval=DEFAULT_POLL_INTERVAL,
        timeout_hours=DEFAULT_TIMEOUT_HOURS,
        max_attempts=DEFAULT_MAX_ATTEMPTS,
    )
    poll = given_poll_interval(args.poll_interval)
    if poll is None and offline:
        poll = offline_poll_interval()
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
    missing = [
        flag
        for flag, value in (
            ("--spec-path", args.spec_path),
            ("--pregenerated-inputs-dir", args.pregenerated_inputs_dir),
            ("--model-name", args.model_name),
        )
        if value is None
    ]
    if missing:
        raise ConfigError(f"missing {', '.join(missing)} (or pass --resume RUN_DIR to continue a run)")
    check_output_dir(args.output_base_dir or DEFAULT_GENERATION_OUTPUT, "--output-base-dir")
    config = GenerationConfig(
        spec_path=args.spec_path,
        inputs_dir=args.pregenerated_inputs_dir,
        model_name=args.model_name,
        spec_name=args.spec_name,
        org=args.org,
        output_base_dir=args.output_base_dir or DEFAULT_GENERATION_OUTPUT,
        params=GenerationParams(
            temperature=args.temperature if args.temperature is not None else 0.0,
            max_tokens=args.max_tokens if args.max_tokens is not None else DEFAULT_MAX_TOKENS,
        ),
        engine=engine_options(args, None, args.offline),
        allow_unknown_statements=args.allow_unknown_statements,
        offline=args.offline,
        new_run=True,  # the command looks for an identical run itself (with its endpoint settings) in `generate`
        simulated_user=simulated_user(args),
    )
    return BatchedGenerationPipeline(config)


_USER_FLAGS = {
    "simulated_user_org": "org",
    "simulated_user_instructions": "instructions",
    "simulated_user_stop_word": "stop_word",
    "simulated_user_tier": "tier",
    **{f"simulated_user_{key}": key for key in LIMIT_KEYS},
    "max_turns": "max_turns",
}


def simulated_user(args: argparse.Namespace) -> SimulatedUser | None:
    """The simulated user the `--simulated-user-*` and `--max-turns` flags describe (None without its model)."""
    given = {field: getattr(args, flag) for flag, field in _USER_FLAGS.items() if getattr(args, flag) is not None}
    if args.simulated_user_model is None:
        if given:
            flags = ", ".join(f"--{flag.replace('_', '-')}" for flag, field in _USER_FLAGS.items() if field in given)
            raise ConfigError(f"{flags} describe a simulated user: add --simulated-user-model")
        return None
    if "instructions" not in given:
        raise ConfigError(
            "--simulated-user-model needs --simulated-user-instructions (text, or @file): who the "
            "user is and what they want"
        )
    given["instructions"] = read_instructions(given["instructions"])
    try:
        return SimulatedUser.model_validate({"model": args.simulated_user_model, **given})
    except ValidationError as exc:
        where, message = first_problem(exc)
        field = where.split(".")[0] or "model"
        flag = next((f for f, name in _USER_FLAGS.items() if name == field), "simulated_user_model")
        raise ConfigError(f"--{flag.replace('_', '-')}: {message}") from None


def _resumed(args: argparse.Namespace, run_dir: Path) -> BatchedGenerationPipeline:
    pipeline = BatchedGenerationPipeline.resume(run_dir)
    pipeline.config.engine = engine_options(args, pipeline.config.engine, pipeline.config.offline)
    return pipeline


def _identity_draft(args: argparse.Namespace, pipeline: BatchedGenerationPipeline) -> RunManifest:
    """The new run's manifest with its endpoint settings, as an earlier identical run would have recorded them."""
    draft = pipeline.draft_manifest().model_copy(deep=True)
    if pipeline.provider == "ray":
        draft.parameters[RAY_KEY] = ray_settings(ray_flags(args), None, offline=pipeline.config.offline).model_dump()
    else:
        _endpoint(args, pipeline, draft)
    return draft


def _endpoint(
    args: argparse.Namespace, pipeline: BatchedGenerationPipeline, manifest: RunManifest
) -> RealtimeSettings | None:
    """The realtime settings of the run's endpoint (None: its batch API), stored into `manifest`; with `--tier auto`
    over a conversation's rounds, the first round's, and every round's tier in `parameters.round_tiers`."""
    entry = resolve_org(pipeline.config.model_name, pipeline.provider)
    choice = tier_choice(args, pipeline)
    flags = choice.flags
    if choice.round_tiers:
        assert choice.deadline_hours is not None  # `auto` needs one
        plan = plan_round_tiers(
            choice.round_tiers,
            choice.deadline_hours,
            choice.flags,
            manifest,
            entry,
            loads=choice.loads,
            times=choice.times,
            flex_ok=choice.flex_ok,
            hour=hour_seconds(),
            user=choice.user,
        )
        manifest.parameters[ROUND_TIERS_KEY] = plan.model_dump(mode="json")
        if choice.round_tiers[0] is Tier.BATCH:
            flags = {}  # the realtime flags are the later rounds' (kept in the plan); round 1 goes to the Batch API
    return realtime_settings(
        flags, manifest, entry, realtime=choice.realtime, resume=args.resume, tier_fields=choice.fields
    )


def generate(args: argparse.Namespace) -> int:
    """Run the generation command `args` asks for; returns the exit code."""
    pipeline = _pipeline(args)  # validates every input file before anything else happens
    if not pipeline.resuming and not args.new_run:
        any_tier = getattr(args, "tier", None) == Tier.AUTO.value  # the plan's tier is no part of the work asked for
        earlier = find_identical_runs(pipeline.run_dir.parent, _identity_draft(args, pipeline), any_tier)
        if earlier.finished:
            report_reused(earlier.finished[0], RunManifest.load(earlier.finished[0]))
            return ExitCode.FINISHED
        if earlier.unfinished:
            console.print(
                f"An identical run did not finish; continuing it (nothing is submitted twice): "
                f"{earlier.unfinished[0]}. To start a fresh one instead, add --new-run."
            )
            pipeline = _resumed(args, earlier.unfinished[0])
    config = pipeline.config
    offline = config.offline or args.offline
    resume_command = shlex.join(
        [sys.executable, "-m", "batched_examples.run_batched_generation", "--resume", str(pipeline.run_dir)]
    )
    with ExitStack() as stack:
        # Everything that can refuse the command runs before `write_manifest` creates the run directory.
        emulator = stack.enter_context(offline_emulator(emulator_state_dir(pipeline.run_dir))) if offline else None
        provider_options = emulator_options(emulator, pipeline.provider) if emulator is not None else {}
        provider_options.update(_vertex_options(args, pipeline))
        model = connect_model(args, pipeline, provider_options)  # batch, realtime (--realtime, --org) or Ray
        per_round = models_per_round(pipeline, provider_options, args.prices)
        pipeline.check_engine(model)  # conversations need a batch provider (so far)
        user_model = None
        if config.simulated_user is not None:  # the same emulator offline: one state folder, one emulator
            user_options = emulator_options(emulator, pipeline.user_org) if emulator is not None else {}
            # At the tier `--tier auto` planned its turns at (run.json), unless it was given one.
            plan = stored_round_tiers(pipeline.draft_manifest(), str(pipeline.run_dir / "run.json"))
            user_model = simulated_user_model(user_at_planned_tier(config.simulated_user, plan), model, user_options)
        if not pipeline.resuming:  # a misspelt model name is refused before the run folder exists
            named = [(pipeline.provider, config.model_name, "--model-name")]
            if config.simulated_user is not None:
                named.append((pipeline.user_org, config.simulated_user.model, "--simulated-user-model"))
            check_models(
                named,
                lambda org: (
                    emulator_options(emulator, org)
                    if emulator is not None
                    else provider_options
                    if org == pipeline.provider
                    else {}
                ),
            )
        pipeline.write_manifest()
        setup_logging(args.verbose, pipeline.run_dir / "logs" / "run.log")
        if offline:
            console.print(synthetic_banner())
        console.print(
            f"{'Resuming' if pipeline.resuming else 'Starting'} generation: {pipeline.request_count} request(s), "
            f"model {config.model_name} ({pipeline.provider}), run directory {pipeline.run_dir}"
        )
        if args.dry_run:
            show_tier_plan(tier_choice(args, pipeline), args.budget_usd)
            if isinstance(model, BatchedModel):
                return _dry_run(pipeline, model, args.prices, resume_command)
            return _plan_only(pipeline, resume_command)
        observer = stack.enter_context(ProgressObserver())
        try:
            if per_round is not None:  # `--tier auto`: each round at the tier the plan chose for it
                writer = user_model
                if writer is not None and not isinstance(writer, BatchedModel | RealtimeModel):
                    raise ConfigError("a conversation's simulated user is sent through a batch API or realtime calls")
                summary = pipeline.run_per_round(per_round, (lambda _k, _s: writer) if writer else None, observer)
            else:
                summary = pipeline.run(model, observer, user_model)
        except KeyboardInterrupt:
            stack.close()
            remote = (
                "Jobs keep running at the provider"
                if isinstance(model, BatchedModel)
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
    budget = pipeline.config.engine.budget
    last = None
    if summary.reason is StopReason.BUDGET:
        resume_command += " --budget-usd <a higher limit>"
        if budget is not None:
            last = budget.stop_line(f"{summary.outstanding} request(s)")
    report_stop(
        f"[yellow]Stopped with {summary.outstanding} request(s) outstanding ({summary.reason.value}).[/] "
        f"Resume with: {resume_command}",
        last,
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
    show_dry_run(model, pipeline.plan_jobs(model), prices, resume_command)
    if pipeline.inputs.has_conversations and pipeline.inputs.max_rounds > 1:
        _show_later_rounds(pipeline, prices)
    return ExitCode.FINISHED


def _show_later_rounds(pipeline: BatchedGenerationPipeline, prices: Path | None) -> None:
    """Rounds 2.. are built from answers, so the dry run cannot write them: their cost at most, per model."""
    config = pipeline.config
    table = PriceTable.load(prices)
    bounds = later_bounds(pipeline)
    providers = {"candidate": pipeline.provider, "simulated user": pipeline.user_org if config.simulated_user else ""}
    lines = []
    for bound in bounds:
        cost = table.cost(
            bound.model,
            providers[bound.role],
            Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens),
        )
        shown = f"${cost:,.4f}" if cost is not None else "unknown (no price)"
        lines.append(f"  {bound.role} {bound.model}: at most {bound.requests:,} request(s), {shown}")
    console.print(
        f"Rounds 2-{pipeline.inputs.max_rounds} (not planned: each is built from the answers before it), "
        "upper bound: every conversation to its last round, every answer at max_tokens, every earlier "
        "answer in each later request:\n" + "\n".join(lines)
    )


def connect_model(
    args: argparse.Namespace, pipeline: BatchedGenerationPipeline, provider_options: dict[str, Any]
) -> AnyModel:
    """The model of a generation run, built by the one factory from the flags' endpoint settings.

    Touches no file: the realtime or Ray settings go into the pipeline's draft manifest, which `write_manifest`
    saves once every check has passed (a refused command leaves no run directory).
    """
    config = pipeline.config
    manifest = pipeline.draft_manifest()
    entry = resolve_org(config.model_name, pipeline.provider)
    endpoint: EndpointSettings | None
    if entry.org == "ray":
        offline = provider_options.get("base_url") is not None
        endpoint = ray_settings(ray_flags(args), manifest.parameters.get(RAY_KEY), offline=offline)
        manifest.parameters[RAY_KEY] = endpoint.model_dump()
    else:
        refuse_ray_flags(args)
        endpoint = _endpoint(args, pipeline, manifest)
    return build_model(config.model_name, pipeline.provider, config.params, endpoint, **provider_options)


def models_per_round(
    pipeline: BatchedGenerationPipeline, provider_options: dict[str, Any], prices: Path | None = None
) -> ModelOfRound | None:
    """The candidate's model per conversation round, when `--tier auto` planned a tier per round (kept in
    `run.json`, so a resume sends each unstarted round as planned, re-planned against the hours left as it
    starts); None: one model answers every round."""
    manifest = pipeline.draft_manifest()
    plan = stored_round_tiers(manifest, str(pipeline.run_dir / "run.json"))
    if plan is None:
        return None
    config = pipeline.config

    def record(changed: RoundTiers) -> None:  # the pipeline's own manifest: its later saves keep the change
        manifest.parameters[ROUND_TIERS_KEY] = changed.model_dump(mode="json")
        manifest.save(pipeline.run_dir)

    return round_models(
        plan,
        config.model_name,
        resolve_org(config.model_name, pipeline.provider),
        config.params,
        provider_options,
        prices=PriceTable.load(prices),
        learn=lambda times, hour: learned_here(times, Path(config.output_base_dir), hour),
        record=record,
    )

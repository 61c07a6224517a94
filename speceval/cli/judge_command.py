"""The body of the judge commands: YAML, environment and flags merged into settings, then the run.

`speceval.cli.judge` parses the flags and calls `run`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.tables.rankings import position_consistency
from speceval.batch.costs import PriceTable
from speceval.batch.engine import EngineOptions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import StopReason
from speceval.cli.command_defaults import JUDGE_BATCH_SIZE as DEFAULT_BATCH_SIZE
from speceval.cli.command_defaults import KEY_FLAGS, Kind, script
from speceval.cli.console import ProgressObserver, console, report_stop, setup_logging, stdout, synthetic_banner
from speceval.cli.dry_run import budget_option, show_dry_run
from speceval.cli.endpoint_flags import RAY_ONLY_FLAGS, ray_flags
from speceval.cli.exits import ExitCode
from speceval.cli.flags import given_poll_interval
from speceval.cli.judge_output import (
    MultiProgress,
    compliance_table,
    consistency_line,
    ranking_table,
    rate_summary,
)
from speceval.cli.tier_flags import print_tier_plan, refuse_plan_flags, round_limits, tier_times
from speceval.defaults import (
    DEFAULT_JUDGE_OUTPUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT_HOURS,
    Tier,
)
from speceval.emulator.models import offline_served
from speceval.engines.endpoints import endpoint_settings, refused_keys
from speceval.engines.tier_plan import RoundLoad, auto_plan, fixed_plan
from speceval.errors import ConfigError
from speceval.offline import offline_poll_interval
from speceval.paths import check_output_dir
from speceval.pipelines.candidates import Candidate, resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_config import (
    VERTEX_KEYS,
    ComplianceFileConfig,
    JudgeFileConfig,
    RankingFileConfig,
    judge_provider,
    load_config,
    yaml_api_key,
    yaml_key_value,
)
from speceval.pipelines.judge_run import JudgeSettings, plan_targets, recorded_endpoint, write_manifest
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.model_list import CHECKED_ORGS, check_model_name, served_models
from speceval.providers.registry import resolve_org
from speceval.raydata.settings import MANIFEST_KEY as RAY_KEY
from speceval.raydata.settings import ray_settings
from speceval.realtime.settings import MANIFEST_KEY as REALTIME_KEY
from speceval.realtime.settings import RealtimeSettings
from speceval.wire.params import GenerationParams

_VERTEX_ENV = {"project": "GOOGLE_CLOUD_PROJECT", "location": "GOOGLE_CLOUD_LOCATION"}
_ENDPOINT_FLAGS = ("base_url", "api_key_env", "rpm", "max_concurrency")
_TIER_FLAGS = ("tier", "flex_patience", "on_flex_unavailable")


# -- configuration --------------------------------------------------------------------------------------------


def _pick(flag: Any, yaml_value: Any, default: Any) -> Any:
    return flag if flag is not None else yaml_value if yaml_value is not None else default


def _file_config(args: argparse.Namespace, kind: Kind) -> JudgeFileConfig:
    schema: type[JudgeFileConfig] = ComplianceFileConfig if kind == "compliance" else RankingFileConfig
    return load_config(args.config_file, schema) if args.config_file is not None else schema()


def _vertex_settings(args: argparse.Namespace, file: JudgeFileConfig) -> dict[str, str]:
    """Project, location and buckets given as flags or YAML keys."""
    return {key: value for key in VERTEX_KEYS if (value := _pick(getattr(args, key), getattr(file, key), None))}


def _with_environment(vertex: dict[str, str]) -> dict[str, str]:
    """Project and location from the environment where no flag or key gave them (recorded, so a later
    `speceval status` or `fetch` reaches the same project whatever its environment says)."""
    found = {key: os.environ[name] for key, name in _VERTEX_ENV.items() if os.environ.get(name)}
    return {**found, **vertex}


def resolve_settings(args: argparse.Namespace, kind: Kind) -> tuple[JudgeSettings, list[Candidate], JudgeFileConfig]:
    """Merge YAML, environment and flags into the pipeline's settings and candidates."""
    given_keys = [f"--{name.replace('_', '-')}" for name in KEY_FLAGS if getattr(args, name) is not None]
    if given_keys:
        variables = ", ".join(KEY_FLAGS[flag[2:].replace("-", "_")] for flag in given_keys)
        raise ConfigError(
            f"{', '.join(given_keys)}: a key on the command line stays in shell history and process lists; "
            f"set {variables} in the environment instead (or the key in the YAML, used for that run only)"
        )
    file = _file_config(args, kind)
    judge_model = _pick(args.judge_model, getattr(file, f"{kind}_judge_model_name"), None)
    vertex = _vertex_settings(args, file)
    judge_org = judge_provider(_pick(args.judge_org, getattr(file, f"{kind}_judge_org"), None), vertex)
    spec_path = _pick(args.spec_path, file.spec_path, None)
    missing = [
        name for name, value in (("spec_path", spec_path), (f"{kind}_judge_model_name", judge_model)) if value is None
    ]
    if missing:
        raise ConfigError(f"missing {', '.join(missing)}: set it in the --config-file YAML or pass it as a flag")
    directories = (
        args.candidate_generation_dirs
        if args.candidate_generation_dirs is not None
        else (file.candidate_generation_dirs)
    )
    named = None if args.candidate_generation_dirs is not None else file.candidates
    if not directories and not named:
        raise ConfigError("no candidates: set candidate_generation_dirs (or a candidates mapping) in the YAML")
    candidates = resolve_candidates(directories, named)
    poll = given_poll_interval(args.poll_interval)
    poll = _pick(poll, file.poll_interval, offline_poll_interval() if args.offline else DEFAULT_POLL_INTERVAL)
    engine = EngineOptions(
        batch_size=_pick(args.batch_size, file.batch_size, DEFAULT_BATCH_SIZE),
        poll_interval=poll,
        timeout_hours=_pick(args.timeout_hours, file.timeout_hours, DEFAULT_TIMEOUT_HOURS),
        max_attempts=_pick(args.max_attempts, file.max_attempts, DEFAULT_MAX_ATTEMPTS),
        budget=budget_option(args.budget_usd, args.prices),
    )
    params = GenerationParams(
        temperature=_pick(args.temperature, file.temperature, 0.0),
        max_tokens=_pick(args.max_tokens, file.max_tokens, DEFAULT_MAX_TOKENS),
    )
    output_dir_base = _pick(args.output_dir_base, file.output_dir_base, DEFAULT_JUDGE_OUTPUT[kind])
    check_output_dir(output_dir_base, "--output-dir-base" if args.output_dir_base is not None else "output_dir_base")
    settings = JudgeSettings(
        spec_path=spec_path,
        judge_model=judge_model,
        judge_org=judge_org,
        spec_name=_pick(args.spec_name, file.spec_name, None),
        output_dir_base=output_dir_base,
        params=params,
        engine=engine,
        offline=args.offline,
        vertex=_with_environment(vertex) if judge_org == "vertex" else {},
    )
    return settings, candidates, file


# -- running --------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace, kind: Kind) -> int:
    """Run the judge command `args` asks for; returns the exit code."""
    settings, candidates, file = resolve_settings(args, kind)
    pipeline: BatchedComplianceJudge | BatchedRankingPipeline
    if kind == "compliance":
        mode = _pick(args.mode, getattr(file, "mode", None), "binary")
        scope = _pick(args.scope, getattr(file, "scope", None), None)
        pipeline = BatchedComplianceJudge(settings, candidates, mode=mode, canaries=not args.no_canaries, scope=scope)
    else:
        pipeline = BatchedRankingPipeline(settings, candidates)
    _endpoint_settings(args, kind, file, pipeline)
    if pipeline.provider in CHECKED_ORGS:  # a misspelt judge is refused before anything is written or paid
        served = (
            offline_served(pipeline.provider)
            if settings.offline
            else served_models(pipeline.provider, yaml_key_value(file, pipeline.provider))
        )
        check_model_name(pipeline.provider, settings.judge_model, served, "the judge")
    setup_logging(args.verbose or file.verbose, pipeline.output_dir / "logs" / f"{kind}.log")
    if settings.offline:
        console.print(synthetic_banner())
    synthetic = [c.name for c in candidates if c.offline]
    if synthetic:
        console.print(f"[bold yellow]Candidate answers of {', '.join(synthetic)} are SYNTHETIC (offline runs).[/]")
    legacy = [f"{c.name} ← {c.results_dir}" for c in candidates if c.legacy]
    if legacy:
        console.print("Original SpecEval folders (no run.json), named from their paths:\n  " + "\n  ".join(legacy))
    console.print(
        f"Starting {kind} judging: {pipeline.request_count} request(s) over {len(pipeline.targets)} run "
        f"director{'y' if len(pipeline.targets) == 1 else 'ies'}, judge {settings.judge_model} "
        f"({pipeline.provider}), output {pipeline.output_dir}"
    )
    argv = [arg for arg in sys.argv[1:] if arg != "--dry-run"]
    rerun = shlex.join([sys.executable, "-m", f"batched_examples.{script(kind)}", *argv])
    with ExitStack() as stack:
        # The pipeline builds its judge from the settings (offline: against the emulator in its output folder).
        key = {} if settings.offline else yaml_api_key(file, pipeline.provider)
        model = stack.enter_context(pipeline.connect(None, **key))
        if args.dry_run:
            if not isinstance(model, BatchedModel):
                raise ConfigError(f"--dry-run plans batch jobs and their cost; the {pipeline.provider} judge has none")
            return _dry_run(pipeline, kind, model, args.prices, rerun)
        progress = MultiProgress(stack.enter_context(ProgressObserver()))
        try:
            if isinstance(pipeline, BatchedComplianceJudge):
                summaries, candidate_summaries = pipeline.run(model, progress.view)
            else:
                summaries, pair_summaries, report = pipeline.run(model, progress.view)
        except KeyboardInterrupt:
            stack.close()
            pipeline.write_verdicts()
            report_stop(f"\nInterrupted. Jobs keep running at the provider; state is saved.\nResume with: {rerun}")
            return ExitCode.STOPPED
    if isinstance(pipeline, BatchedComplianceJudge):
        # Each candidate's run (an Inspect log's epoch is its own) with the report's interval, from its verdict files.
        judged = [(a.candidate.run, t.run_dir) for a, t in zip(pipeline.answers, pipeline.targets, strict=False)]
        rates = [rate_summary(run_dir) for _, run_dir in judged]
        runs = [run for run, _ in judged]
        stdout.print(compliance_table(candidate_summaries, settings.judge_model, rates, runs))
    else:
        stdout.print(ranking_table(pair_summaries, settings.judge_model))
        # Counted by the report's own estimator from the files just written (folded into columns, a few bytes a
        # comparison): every run, clustered by input.
        found = fold_verdicts([pair.target.run_dir for pair in pipeline.pairs]).ranking_columns
        epochs = any(pair.run is not None for pair in pipeline.pairs)
        stdout.print(consistency_line(position_consistency(found), epochs))
        stdout.print(f"Position consistency: {pipeline.output_dir / 'position_consistency.json'}")
        skipped = {name: counts for name, counts in pipeline.skipped.items() if counts}
        if skipped:  # failed generations are not compared; say how many, as the compliance table does
            stdout.print(
                "Answers not compared (their generation did not succeed): "
                + "; ".join(
                    f"{name}: {', '.join(f'{n} {outcome}' for outcome, n in sorted(counts.items()))}"
                    for name, counts in skipped.items()
                )
            )
        if pipeline.not_compared:  # an epoch or an input only one side has: not ranked, said with its count
            stdout.print("Not ranked: " + "; ".join(pipeline.not_compared))
    if settings.offline:
        console.print("[bold yellow]Verdicts are SYNTHETIC (offline emulator), not real judge output.[/]")
    stdout.print(f"Results: {pipeline.output_dir}")
    if all(s.finished for s in summaries):
        return ExitCode.FINISHED
    outstanding = sum(s.outstanding for s in summaries)
    last = None
    if settings.engine.budget is not None and any(s.reason is StopReason.BUDGET for s in summaries):
        rerun += " --budget-usd <a higher limit>"
        last = settings.engine.budget.stop_line(f"{outstanding} judge request(s)")
    report_stop(f"[yellow]Stopped with {outstanding} judge request(s) outstanding.[/] Resume with: {rerun}", last)
    return ExitCode.STOPPED


def _endpoint_settings(
    args: argparse.Namespace,
    kind: Kind,
    file: JudgeFileConfig,
    pipeline: BatchedComplianceJudge | BatchedRankingPipeline,
) -> None:
    """A Ray or realtime judge's settings: those its run directories recorded, then the YAML keys, then the flags
    given now."""
    settings = pipeline.settings
    entry = resolve_org(settings.judge_model, pipeline.provider)
    from_file = file.endpoint_keys()
    refused, why = refused_keys(entry, from_file)
    if refused:  # a key the judge would ignore must not look as if it applied
        raise ConfigError(f"{file.where(refused[0])}: {', '.join(refused)}: {why}")
    if entry.org == "ray":
        stored = recorded_endpoint(pipeline.targets, RAY_KEY)
        settings.ray = ray_settings(ray_flags(args), stored, offline=settings.offline, file_keys=from_file)
        return
    ray_only = [f"--{name.replace('_', '-')}" for name in RAY_ONLY_FLAGS if getattr(args, name, None) is not None]
    if ray_only:
        raise ConfigError(f"{', '.join(ray_only)}: only for a ray judge (--{kind}-judge-org ray)")
    given = {name: getattr(args, name) for name in _ENDPOINT_FLAGS if getattr(args, name, None) is not None}
    given.update({name: getattr(args, name) for name in _TIER_FLAGS if getattr(args, name, None) is not None})
    tier = _judge_tier(args, {**from_file, **given}, pipeline)
    given.pop("tier", None)
    if tier is not None:
        given["tier"] = tier.value
    if entry.batch and tier in (None, Tier.BATCH):
        extra = [name for name in given if name != "tier"]
        if extra:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in extra)
            raise ConfigError(
                f"{flags}: only for judges without a batch API (ray, openai-compatible, together) or at --tier "
                "flex or standard"
            )
        return
    realtime = endpoint_settings(
        entry,
        {**from_file, **given},
        recorded_endpoint(pipeline.targets, REALTIME_KEY),
        offline=settings.offline,
        where=f"the {entry.org} judge" if tier is None else f"--tier {tier} (the judge {settings.judge_model})",
        base_url_name="--base-url or the YAML key base_url",
        model_name=settings.judge_model,
        prices=PriceTable.load(getattr(args, "prices", None)),
    )
    assert isinstance(realtime, RealtimeSettings)  # an org without a batch API and not ray
    settings.realtime = realtime


def _judge_tier(
    args: argparse.Namespace, keys: dict[str, Any], pipeline: BatchedComplianceJudge | BatchedRankingPipeline
) -> Tier | None:
    """The judge's tier (`--tier`, else the YAML key `tier`); `auto` planned over its requests as one round."""
    value = keys.get("tier")
    tier = Tier.of(str(value)) if value is not None else None
    deadline = getattr(args, "deadline_hours", None)
    if deadline is not None and tier is not Tier.AUTO:
        raise ConfigError("--deadline-hours applies to --tier auto (the tier is chosen to meet it)")
    if tier is not Tier.AUTO:
        refuse_plan_flags(args)
        return tier
    if deadline is None:
        raise ConfigError("--tier auto needs --deadline-hours: the hours the judging must end within")
    settings = pipeline.settings
    entry = resolve_org(settings.judge_model, pipeline.provider)
    prices = PriceTable.load(getattr(args, "prices", None))
    requests = sum(target.request_count for target in pipeline.targets)
    load = RoundLoad(
        label="judging",
        provider=entry.org,
        model=settings.judge_model,
        requests=requests,
        input_tokens=requests * settings.params.max_tokens,
        output_tokens=requests * settings.params.max_tokens,
        **round_limits(args),
    )
    times = tier_times(args, entry.org)
    plan = auto_plan([load], deadline, prices, times, flex_ok=[prices.offers_flex(entry.org, settings.judge_model)])
    if getattr(args, "dry_run", False):
        beside = {t.value: fixed_plan([load], t, prices, times) for t in (Tier.BATCH, Tier.STANDARD)}
        print_tier_plan(plan, beside, deadline, getattr(args, "budget_usd", None))
    return plan.rounds[0].tier


def _dry_run(
    pipeline: BatchedComplianceJudge | BatchedRankingPipeline,
    kind: Kind,
    model: BatchedModel,
    prices: Path | None,
    rerun: str,
) -> int:
    manifests = [
        write_manifest(target, kind, pipeline.settings, pipeline.spec_name, pipeline.spec.sha256, pipeline.provider)
        for target in pipeline.targets
    ]
    planned = plan_targets(model, pipeline.targets, manifests, pipeline.settings.engine)
    jobs = [
        (target.run_dir, intent)
        for target, intents in zip(pipeline.targets, planned, strict=True)
        for intent in intents
    ]
    show_dry_run(model, jobs, prices, rerun)
    return ExitCode.FINISHED

"""`run_batched_binary_compliance` and `run_batched_ranking`: flags, YAML, offline mode, progress and summaries.

Both commands are resumable by running them again with the same configuration: the output directories hold
all state, so nothing already judged is sent again.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from speceval.batch.engine import EngineOptions
from speceval.batch.model import GenerationParams
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
from speceval.batch.records import BatchRecord
from speceval.cli.console import ProgressObserver, console, setup_logging, stdout, synthetic_banner
from speceval.cli.exits import ExitCode, run_command
from speceval.cli.judge_config import ComplianceFileConfig, JudgeFileConfig, RankingFileConfig, load_config
from speceval.errors import ConfigError
from speceval.offline import OFFLINE_POLL_INTERVAL, offline_provider
from speceval.pipelines.candidates import Candidate, resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge, CandidateSummary
from speceval.pipelines.judge_run import JudgeOutcome, JudgeSettings, JudgeTarget
from speceval.pipelines.position import PositionReport
from speceval.pipelines.ranking import BatchedRankingPipeline, PairSummary
from speceval.providers.registry import PROVIDERS, create_batched_model

Kind = Literal["compliance", "ranking"]
DEFAULT_BATCH_SIZE = 100
DEFAULT_POLL_INTERVAL = 60.0
DEFAULT_TIMEOUT_HOURS = 24.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_MAX_TOKENS = 4096
DEFAULT_OUTPUT = {"compliance": Path("data/batched_compliance"), "ranking": Path("data/batched_rankings")}
_FAILURES = (JudgeOutcome.JUDGE_ERRORED, JudgeOutcome.JUDGE_EXPIRED, JudgeOutcome.JUDGE_CANCELLED,
             JudgeOutcome.JUDGE_MISSING)


def build_parser(kind: Kind) -> argparse.ArgumentParser:
    """The parser of one judge command. Every flag defaults to None: 'not given' never overrides the YAML."""
    script = "run_batched_binary_compliance" if kind == "compliance" else "run_batched_ranking"
    parser = argparse.ArgumentParser(
        prog=f"python -m batched_examples.{script}",
        description=(
            "Judge candidates' answers for compliance with their statements." if kind == "compliance" else
            "Compare candidates two at a time (every ordered pair, both orders) on their shared inputs."
        ),
        epilog="Run the same command again to resume: nothing already judged is sent twice.",
    )
    parser.add_argument("--config-file", type=Path, help="YAML file with the keys below (flags override it)")
    parser.add_argument("--spec-path", type=Path, help="the spec JSONL the candidates answered")
    parser.add_argument("--spec-name", help="label of the spec in output paths (default: the spec file's stem)")
    parser.add_argument("--candidate-generation-dirs", type=Path, nargs="+", metavar="DIR",
                        help="generation run directories (replaces the YAML list); names come from each run.json")
    prefix = "compliance" if kind == "compliance" else "ranking"
    parser.add_argument(f"--{prefix}-judge-model-name", dest="judge_model", help="the judge model")
    parser.add_argument(f"--{prefix}-judge-org", dest="judge_org",
                        help=f"the judge's provider: {', '.join(PROVIDERS)} (default: from the model name)")
    if kind == "compliance":
        parser.add_argument("--mode", choices=("binary", "likert"), help="binary verdicts (default) or 1-5 ratings")
    parser.add_argument("--output-dir-base", type=Path, help=f"default: {DEFAULT_OUTPUT[kind]}")
    parser.add_argument("--batch-size", type=int, help=f"most requests per job (default {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--temperature", type=float, help="the judge's temperature (default 0.0)")
    parser.add_argument("--max-tokens", type=int, help=f"most tokens per judge answer (default {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--poll-interval", type=float,
                        help=f"seconds between polls (default $SPECEVAL_POLL_INTERVAL or {DEFAULT_POLL_INTERVAL:g})")
    parser.add_argument("--timeout-hours", type=float, help=f"stop waiting after this long ({DEFAULT_TIMEOUT_HOURS:g})")
    parser.add_argument("--max-attempts", type=int, help=f"jobs one request may be sent in ({DEFAULT_MAX_ATTEMPTS})")
    parser.add_argument("--offline", action="store_true", help="use the built-in emulator (synthetic verdicts)")
    parser.add_argument("--verbose", action="store_true", help="debug logging on the console")
    return parser


def compliance_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `run_batched_binary_compliance`; returns the exit code."""
    args = build_parser("compliance").parse_args(argv)
    return run_command(lambda: _run(args, "compliance"))


def ranking_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `run_batched_ranking`; returns the exit code."""
    args = build_parser("ranking").parse_args(argv)
    return run_command(lambda: _run(args, "ranking"))


# -- configuration --------------------------------------------------------------------------------------------


def _pick(flag: Any, yaml_value: Any, default: Any) -> Any:
    return flag if flag is not None else yaml_value if yaml_value is not None else default


def _file_config(args: argparse.Namespace, kind: Kind) -> JudgeFileConfig:
    schema: type[JudgeFileConfig] = ComplianceFileConfig if kind == "compliance" else RankingFileConfig
    return load_config(args.config_file, schema) if args.config_file is not None else schema()


def _positive(name: str, value: float | int) -> None:
    if value <= 0:
        raise ConfigError(f"--{name} must be positive, got {value}")


def resolve_settings(args: argparse.Namespace, kind: Kind) -> tuple[JudgeSettings, list[Candidate], JudgeFileConfig]:
    """Merge YAML, environment and flags into the pipeline's settings and candidates."""
    file = _file_config(args, kind)
    judge_model = _pick(args.judge_model, getattr(file, f"{kind}_judge_model_name"), None)
    judge_org = _pick(args.judge_org, getattr(file, f"{kind}_judge_org"), None)
    spec_path = _pick(args.spec_path, file.spec_path, None)
    missing = [name for name, value in (("spec_path", spec_path), (f"{kind}_judge_model_name", judge_model))
               if value is None]
    if missing:
        raise ConfigError(f"missing {', '.join(missing)}: set it in the --config-file YAML or pass it as a flag")
    directories = args.candidate_generation_dirs if args.candidate_generation_dirs is not None else (
        file.candidate_generation_dirs
    )
    named = None if args.candidate_generation_dirs is not None else file.candidates
    if not directories and not named:
        raise ConfigError("no candidates: set candidate_generation_dirs (or a candidates mapping) in the YAML")
    candidates = resolve_candidates(directories, named)
    poll = args.poll_interval
    if poll is None and os.environ.get("SPECEVAL_POLL_INTERVAL"):
        try:
            poll = float(os.environ["SPECEVAL_POLL_INTERVAL"])
        except ValueError:
            raise ConfigError("SPECEVAL_POLL_INTERVAL must be a number of seconds") from None
    poll = _pick(poll, file.poll_interval, OFFLINE_POLL_INTERVAL if args.offline else DEFAULT_POLL_INTERVAL)
    engine = EngineOptions(
        batch_size=_pick(args.batch_size, file.batch_size, DEFAULT_BATCH_SIZE),
        poll_interval=poll,
        timeout_hours=_pick(args.timeout_hours, file.timeout_hours, DEFAULT_TIMEOUT_HOURS),
        max_attempts=_pick(args.max_attempts, file.max_attempts, DEFAULT_MAX_ATTEMPTS),
    )
    for name in ("batch_size", "poll_interval", "timeout_hours", "max_attempts"):
        _positive(name.replace("_", "-"), getattr(engine, name))
    params = GenerationParams(
        temperature=_pick(args.temperature, file.temperature, 0.0),
        max_tokens=_pick(args.max_tokens, file.max_tokens, DEFAULT_MAX_TOKENS),
    )
    _positive("max-tokens", params.max_tokens)
    settings = JudgeSettings(
        spec_path=spec_path,
        judge_model=judge_model,
        judge_org=judge_org,
        spec_name=_pick(args.spec_name, file.spec_name, None),
        output_dir_base=_pick(args.output_dir_base, file.output_dir_base, DEFAULT_OUTPUT[kind]),
        params=params,
        engine=engine,
        offline=args.offline,
    )
    return settings, candidates, file


def _api_key(file: JudgeFileConfig, provider: str) -> dict[str, str]:
    """An API key from the YAML, only when the provider's environment variable is not set (env wins)."""
    key = {"openai": file.openai_api_key, "anthropic": file.anthropic_api_key, "google": file.google_api_key}.get(
        provider
    )
    if key and not any(os.environ.get(name) for name in PROVIDERS[provider].key_env):
        return {"api_key": key}
    return {}


# -- running --------------------------------------------------------------------------------------------------


class _MultiProgress:
    """One progress bar over many engines: each engine's view reports its latest summary here."""

    def __init__(self, progress: ProgressObserver):
        self.progress = progress
        self.latest: dict[Path, EngineSummary] = {}

    def view(self, target: JudgeTarget) -> EngineObserver:
        return _EngineView(self, target.run_dir)

    def update(self, key: Path, summary: EngineSummary) -> None:
        self.latest[key] = summary
        values = list(self.latest.values())
        self.progress.started(EngineSummary(
            reason=StopReason.RUNNING,
            total_requests=sum(s.total_requests for s in values),
            outstanding=sum(s.outstanding for s in values),
            active_jobs=sum(s.active_jobs for s in values),
        ))


class _EngineView(EngineObserver):
    def __init__(self, parent: _MultiProgress, key: Path):
        self.parent = parent
        self.key = key

    def started(self, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def waiting(self, seconds: float, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def finished(self, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def job_submitted(self, record: BatchRecord) -> None:
        self.parent.progress.job_submitted(record)

    def job_collected(self, record: BatchRecord) -> None:
        self.parent.progress.job_collected(record)


def _run(args: argparse.Namespace, kind: Kind) -> int:
    settings, candidates, file = resolve_settings(args, kind)
    pipeline: BatchedComplianceJudge | BatchedRankingPipeline
    if kind == "compliance":
        mode = _pick(args.mode, getattr(file, "mode", None), "binary")
        pipeline = BatchedComplianceJudge(settings, candidates, mode=mode)
    else:
        pipeline = BatchedRankingPipeline(settings, candidates)
    setup_logging(args.verbose or file.verbose, pipeline.output_dir / "logs" / f"{kind}.log")
    if settings.offline:
        console.print(synthetic_banner())
    synthetic = [c.name for c in candidates if c.offline]
    if synthetic:
        console.print(f"[bold yellow]Candidate answers of {', '.join(synthetic)} are SYNTHETIC (offline runs).[/]")
    console.print(
        f"Starting {kind} judging: {pipeline.request_count} request(s) over {len(pipeline.targets)} run "
        f"director{'y' if len(pipeline.targets) == 1 else 'ies'}, judge {settings.judge_model} "
        f"({pipeline.provider}), output {pipeline.output_dir}"
    )
    rerun = shlex.join([Path(sys.executable).name, "-m", f"batched_examples.{_script(kind)}", *sys.argv[1:]])
    with ExitStack() as stack:
        options = (
            stack.enter_context(offline_provider(pipeline.output_dir, pipeline.provider)) if settings.offline
            else _api_key(file, pipeline.provider)
        )
        model = create_batched_model(settings.judge_model, pipeline.provider, settings.params, **options)
        progress = _MultiProgress(stack.enter_context(ProgressObserver()))
        try:
            if isinstance(pipeline, BatchedComplianceJudge):
                summaries, candidate_summaries = pipeline.run(model, progress.view)
            else:
                summaries, pair_summaries, report = pipeline.run(model, progress.view)
        except KeyboardInterrupt:
            stack.close()
            pipeline.write_verdicts()
            console.print(f"\nInterrupted. Jobs keep running at the provider; state is saved.\nResume with: {rerun}")
            return ExitCode.STOPPED
    if isinstance(pipeline, BatchedComplianceJudge):
        stdout.print(_compliance_table(candidate_summaries, settings.judge_model))
    else:
        stdout.print(_ranking_table(pair_summaries, report, settings.judge_model))
        stdout.print(f"Position consistency: {pipeline.output_dir / 'position_consistency.json'}")
    if settings.offline:
        console.print("[bold yellow]Verdicts are SYNTHETIC (offline emulator), not real judge output.[/]")
    stdout.print(f"Results: {pipeline.output_dir}")
    outstanding = sum(s.outstanding for s in summaries)
    if all(s.finished for s in summaries):
        return ExitCode.FINISHED
    console.print(f"[yellow]Stopped with {outstanding} judge request(s) outstanding.[/] Resume with: {rerun}")
    return ExitCode.STOPPED


def _script(kind: Kind) -> str:
    return "run_batched_binary_compliance" if kind == "compliance" else "run_batched_ranking"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _compliance_table(summaries: list[CandidateSummary], judge: str) -> Table:
    likert = bool(summaries) and summaries[0].mode == "likert"
    table = Table(title=f"Compliance judged by {judge} (rates over judged answers only)", header_style="bold")
    columns = ["candidate", "judged", "mean rating" if likert else "compliant", "unparsed", "judge failed",
               "pending", "answers skipped"]
    for column in columns:
        table.add_column(column, justify="left" if column == "candidate" else "right")
    for s in summaries:
        outcome = s.outcomes
        score = "n/a" if s.mean_rating is None else f"{s.mean_rating:.2f}"
        table.add_row(
            s.model,
            str(outcome[JudgeOutcome.JUDGED]),
            score if likert else f"{s.compliant} ({_rate(s.compliance_rate)})",
            str(outcome[JudgeOutcome.UNPARSED]),
            str(sum(outcome[o] for o in _FAILURES)),
            str(outcome[JudgeOutcome.PENDING]),
            ", ".join(f"{n} {k}" for k, n in sorted(s.skipped_answers.items())) or "0",
        )
    return table


def _ranking_table(summaries: list[PairSummary], report: PositionReport, judge: str) -> Table:
    table = Table(
        title=f"Rankings by {judge} (A shown first); position consistency {_rate(report.consistency_rate)} "
        f"over {report.consistent + report.inconsistent} comparison(s)",
        header_style="bold",
    )
    for column in ("model A", "model B", "A wins", "B wins", "ties", "unparsed", "judge failed", "pending"):
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for s in summaries:
        table.add_row(s.model_a, s.model_b, str(s.a_wins), str(s.b_wins), str(s.ties),
                      str(s.outcomes[JudgeOutcome.UNPARSED]), str(sum(s.outcomes[o] for o in _FAILURES)),
                      str(s.outcomes[JudgeOutcome.PENDING]))
    return table

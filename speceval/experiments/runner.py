"""Plan an experiment grid and run it: generation for every (spec × variation × repeat × candidate), then judging
per (spec, variation, repeat) group, then the report.

Every run lives in a directory named by the plan (not by the clock), so running the same experiment again resumes
each of them through its own crash-safe state: nothing already submitted is submitted again. All generation runs
are driven by one polling loop, so their jobs are in flight together; each group's judges then judge all of the
group's candidates at once. A budget is shared by every run of the experiment.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_json
from speceval.batch.budget import Budget
from speceval.batch.engine import BatchEngine, EngineOptions, run_engines
from speceval.batch.model import BatchedModel, GenerationParams
from speceval.batch.records import SCHEMA_VERSION, utcnow
from speceval.batch.store import RunStore
from speceval.cli.judge_config import load_config
from speceval.costs import CostEstimator, PriceTable
from speceval.errors import ConfigError, InputError
from speceval.experiments.config import ExperimentConfig, JudgeEntry, ModelEntry, SpecEntry
from speceval.inputs import load_inputs
from speceval.offline import OFFLINE_POLL_INTERVAL, STATE_DIR_NAME, emulator_options, offline_emulator
from speceval.paths import safe_filename
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.registry import create_batched_model, resolve_org
from speceval.spec import load_spec

logger = logging.getLogger(__name__)
STATE_NAME = "experiment.json"


@dataclass(frozen=True)
class GenerationRun:
    """One planned generation run."""

    spec: SpecEntry
    variation: str
    settings: dict[str, Any]
    repeat: int
    candidate: ModelEntry
    run_dir: Path


@dataclass(frozen=True)
class Group:
    """The candidates' runs that are judged together: same spec, variation and repeat."""

    spec: SpecEntry
    variation: str
    repeat: int
    runs: tuple[GenerationRun, ...]

    @property
    def label(self) -> str:
        return f"{self.spec.name}/{self.variation}/run{self.repeat}"


class ExperimentState(BaseModel):
    """`<output_dir>/experiment.json`: the plan and which stages are done."""

    schema_version: int = SCHEMA_VERSION
    experiment_name: str
    config_sha256: str
    variations: dict[str, dict[str, Any]] = Field(description="variation name → its settings")
    generation_runs: list[str]
    stages_done: list[str] = Field(default_factory=list)
    status: str = "running"
    updated_at: str = Field(default_factory=lambda: utcnow().isoformat())


@dataclass
class ExperimentOutcome:
    """How `run_experiment` ended."""

    finished: bool
    reason: str
    output_dir: Path
    report: Path | None = None


def load_experiment(path: Path) -> ExperimentConfig:
    """Read and validate an experiment file, and check every model and input before anything is submitted."""
    config = load_config(path, ExperimentConfig)  # type: ignore[type-var]  # same YAML rules as judge configs
    text = path.read_text(encoding="utf-8")
    models: list[tuple[str, ModelEntry]] = [(f"candidates[{i}]", c) for i, c in enumerate(config.candidates)]
    models += [(f"judges[{i}]", j) for i, j in enumerate(config.judges)]
    for where, entry in models:
        try:
            resolve_org(entry.model, entry.org)
        except ConfigError as exc:
            raise InputError(path, str(exc), line=_line_of(text, entry.model), field=f"{where}.model") from None
    base = path.parent
    for spec in config.specs:
        loaded = load_spec(_resolve(base, spec.spec_path))
        load_inputs(_resolve(base, spec.inputs_dir), loaded)
    if "ranking" in config.stages and config.judges and len(config.candidates) < 2:
        raise InputError(path, "ranking needs at least two candidates", field="candidates")
    return config


def plan(config: ExperimentConfig, output_dir: Path) -> tuple[dict[str, dict[str, Any]], list[Group]]:
    """Every generation run of the grid, grouped for judging, with deterministic directories."""
    variations = config.variations.named_combinations()
    groups = []
    for spec in config.specs:
        for label, settings in variations.items():
            for repeat in range(1, config.runs_per_variation + 1):
                runs = tuple(
                    GenerationRun(spec, label, settings, repeat, candidate,
                                  output_dir / "generations" / safe_filename(spec.name) / safe_filename(label)
                                  / f"run{repeat}"
                                  / safe_filename(candidate.model))
                    for candidate in config.candidates
                )
                groups.append(Group(spec, label, repeat, runs))
    return variations, groups


def run_experiment(path: Path, *, offline: bool = False, observer: Callable[[str], None] | None = None
                   ) -> ExperimentOutcome:
    """Run (or resume) every stage of the experiment in `path`."""
    config = load_experiment(path)
    say = observer or (lambda message: logger.info("%s", message))
    base = path.parent
    output_dir = _resolve(base, config.output_dir)
    offline = offline or config.offline
    variations, groups = plan(config, output_dir)
    state = _state(output_dir, config, path, variations, groups)
    budget = Budget(config.budget_usd, CostEstimator(PriceTable.load())) if config.budget_usd else None
    poll = config.engine.poll_interval or (OFFLINE_POLL_INTERVAL if offline else 60.0)
    engine = EngineOptions(batch_size=config.engine.batch_size, poll_interval=poll,
                           timeout_hours=config.engine.timeout_hours, max_attempts=config.engine.max_attempts,
                           budget=budget)
    with _providers(output_dir, offline) as options_for:
        if "generation" in config.stages and "generation" not in state.stages_done:
            say(f"generation: {sum(len(g.runs) for g in groups)} run(s)")
            if not _generate(groups, base, engine, options_for, offline):
                return _stopped(output_dir, state, "generation has work outstanding")
            _done(output_dir, state, "generation")
        for stage in ("compliance", "ranking"):
            if stage in config.stages and config.judges and stage not in state.stages_done:
                for group in groups:
                    for judge in config.judges:
                        say(f"{stage}: {group.label}, judge {judge.model}")
                        if not _judge(stage, group, judge, config, base, output_dir, engine, options_for, offline):
                            return _stopped(output_dir, state, f"{stage} of {group.label} has work outstanding")
                _done(output_dir, state, stage)
    report = None
    if "report" in config.stages:
        from speceval.analysis.report import build_report

        report = build_report([output_dir], output_dir / "report").html_path
        _done(output_dir, state, "report")
    state.status = "finished"
    _save(output_dir, state)
    return ExperimentOutcome(True, "finished", output_dir, report)


# -- stages -------------------------------------------------------------------------------------------------


def _generate(groups: list[Group], base: Path, engine: EngineOptions,
              options_for: Callable[[str], dict[str, Any]], offline: bool) -> bool:
    runs: list[tuple[BatchEngine, Any]] = []
    pipelines = []
    for group in groups:
        for run in group.runs:
            params = GenerationParams(
                temperature=float(run.settings.get("temperature", 0.0)),
                max_tokens=int(run.settings.get("max_tokens", 4096)),
                system_prompt=run.settings.get("system_prompt"),
            )
            config = GenerationConfig(
                spec_path=_resolve(base, run.spec.spec_path), inputs_dir=_resolve(base, run.spec.inputs_dir),
                model_name=run.candidate.model, spec_name=run.spec.name, org=run.candidate.org, params=params,
                engine=engine, offline=offline,
            )
            pipeline = BatchedGenerationPipeline(config, run_dir=run.run_dir)
            pipeline.write_manifest()
            options = options_for(pipeline.provider)
            model = create_batched_model(run.candidate.model, pipeline.provider, params, **options)
            pipelines.append(pipeline)
            runs.append((BatchEngine(model, RunStore(run.run_dir), engine), pipeline.inputs))
    summaries = run_engines(runs)
    for pipeline, summary in zip(pipelines, summaries, strict=True):
        pipeline.record(summary)
    return all(s.finished for s in summaries)


def _judge(stage: str, group: Group, judge: JudgeEntry, config: ExperimentConfig, base: Path, output_dir: Path,
           engine: EngineOptions, options_for: Callable[[str], dict[str, Any]], offline: bool) -> bool:
    settings = JudgeSettings(
        spec_path=_resolve(base, group.spec.spec_path), judge_model=judge.model, judge_org=judge.org,
        spec_name=group.spec.name,
        output_dir_base=output_dir / stage / safe_filename(group.spec.name) / safe_filename(group.variation)
        / f"run{group.repeat}",
        params=GenerationParams(temperature=0.0, max_tokens=config.engine.max_tokens), engine=engine,
        offline=offline,
    )
    candidates = resolve_candidates([run.run_dir for run in group.runs])
    provider = resolve_org(judge.model, judge.org).org
    model: BatchedModel = create_batched_model(judge.model, provider, settings.params, **options_for(provider))
    if stage == "compliance":
        summaries, _ = BatchedComplianceJudge(settings, candidates, judge.mode).run(model)
    else:
        summaries, _, _ = BatchedRankingPipeline(settings, candidates).run(model)
    return all(s.finished for s in summaries)


# -- helpers ------------------------------------------------------------------------------------------------


@contextmanager
def _providers(output_dir: Path, offline: bool) -> Iterator[Callable[[str], dict[str, Any]]]:
    """Provider options per org: the real providers, or one emulator for the whole experiment when offline."""
    if not offline:
        yield lambda org: {}
        return
    with offline_emulator(output_dir / STATE_DIR_NAME) as emulator:
        yield lambda org: emulator_options(emulator, org)


def _state(output_dir: Path, config: ExperimentConfig, path: Path, variations: dict[str, dict[str, Any]],
           groups: list[Group]) -> ExperimentState:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    existing = output_dir / STATE_NAME
    if existing.is_file():
        state = ExperimentState.model_validate_json(existing.read_bytes())
        if state.config_sha256 != digest:
            raise ConfigError(
                f"{path} changed since {output_dir} was started; use another output_dir for a different experiment"
            )
        if state.variations != variations:
            # Started by a version that named variations differently: its runs live in other directories.
            raise ConfigError(f"{output_dir} names its variations {', '.join(state.variations)}, not "
                              f"{', '.join(variations)}; finish it with the speceval that started it")
        return state
    state = ExperimentState(
        experiment_name=config.experiment_name, config_sha256=digest, variations=variations,
        generation_runs=[str(run.run_dir) for group in groups for run in group.runs],
    )
    _save(output_dir, state)
    return state


def _save(output_dir: Path, state: ExperimentState) -> None:
    state.updated_at = utcnow().isoformat()
    atomic_write_json(output_dir / STATE_NAME, state)


def _done(output_dir: Path, state: ExperimentState, stage: str) -> None:
    state.stages_done.append(stage)
    _save(output_dir, state)


def _stopped(output_dir: Path, state: ExperimentState, reason: str) -> ExperimentOutcome:
    state.status = "stopped"
    _save(output_dir, state)
    return ExperimentOutcome(False, reason, output_dir)


def _resolve(base: Path, path: Path) -> Path:
    """Paths in an experiment file are relative to the file."""
    return path if path.is_absolute() else base / path


def _line_of(text: str, value: str) -> int | None:
    return next((number for number, line in enumerate(text.splitlines(), 1) if value in line), None)

"""The tasks of an experiment and what each needs: the grid as a graph for `StageScheduler`.

Per group (spec × variation × repeat): one generation task per candidate; per judge, one compliance task per
candidate (needs that candidate's generation) and one ranking task per pair of candidates, both orders (needs
both generations); with three or more candidates, a last ranking task rewrites the judge's position-consistency
file over all pairs. The report needs everything. Every task writes where the unpipelined runner wrote, so an
experiment started by either resumes under the other. What the tasks share is `speceval.experiments.context`.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from speceval.batch.budget import RunBudget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.engine import BatchEngine
from speceval.batch.manifest import RunManifest
from speceval.batch.progress import EngineSummary
from speceval.batch.store import RunStore
from speceval.defaults import Mode, Tier
from speceval.engines.endpoints import record_endpoint
from speceval.engines.factory import make_engine
from speceval.experiments.card_tasks import card_tasks
from speceval.experiments.config import JudgeEntry, ModelEntry, SpecEntry, first_of_model, user_entry
from speceval.experiments.context import StageContext, judge_params
from speceval.experiments.grid import GenerationRun, Group
from speceval.experiments.inputs_block import inputs_config
from speceval.experiments.scheduler import EngineRuns, StageTask, TaskState
from speceval.inputgen.pipeline import BatchedInputGenerationPipeline
from speceval.inputs import load_inputs
from speceval.judging.card_files import CanaryShare
from speceval.paths import safe_filename
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.pipelines.judge_run import (
    JudgeSettings,
    JudgeTarget,
    mark_stopped,
    record_targets,
    target_engines,
    write_manifest,
)
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.raydata.settings import RaySettings
from speceval.realtime.settings import RealtimeSettings
from speceval.spec import Specification, load_spec
from speceval.wire.params import GenerationParams

logger = logging.getLogger(__name__)


class JudgePipeline(Protocol):
    """What the compliance and ranking pipelines share, as far as a task needs."""

    @property
    def targets(self) -> list[JudgeTarget]: ...

    settings: JudgeSettings
    spec: Specification
    spec_name: str
    provider: str

    def write_verdicts(self) -> Any: ...


def build_tasks(ctx: StageContext, groups: list[Group], done: set[str]) -> list[StageTask]:
    """Every task of the experiment; tasks in `done` (finished by an earlier run) finish at once without work.

    The report task is never in `done`: it is rebuilt on every run, as before.
    """
    stages = ctx.config.stages
    tasks: list[StageTask] = []
    generated = {}  # spec name → the key of the task generating its inputs
    if "inputs" in stages:
        for spec in {group.spec.name: group.spec for group in groups}.values():
            if spec.inputs_dir is None:
                generated[spec.name] = f"inputs {spec.name}"
                tasks.append(_inputs(ctx, generated[spec.name], spec))
    if "compliance" in stages:
        # The spec's example responses, once per spec and judge: the judge's settings are the same in every
        # variation and run, so one judgement of them checks the judge for all.
        first_of_spec = {group.spec.name: group for group in reversed(groups)}
        for spec_name, group in first_of_spec.items():
            for judge in first_of_model(ctx.config.judges, by_mode=True):
                if judge.mode == Mode.CATEGORIES:
                    continue  # an example response has no known category: nothing to check it against
                # One task per model and mode (binary keeps its key of old, so a study started before resumes it).
                mode = "" if judge.mode == Mode.BINARY else f" {judge.mode}"
                org = "" if judge.org is None else f" org={judge.org}"
                tasks.append(
                    _canaries(
                        ctx,
                        f"compliance {spec_name} judge={judge.model}{org} canaries{mode}",
                        group,
                        judge,
                        tuple(key for name, key in generated.items() if name == spec_name),
                    )
                )
    judged: dict[tuple[int, int, str], str] = {}  # what the judge card re-sends: (group, judge, candidate) → task
    for g, group in enumerate(groups):
        generation = {run.candidate.model: _key("generation", group, run.candidate.model) for run in group.runs}
        if "generation" in stages:
            inputs_task = tuple(key for name, key in generated.items() if name == group.spec.name)
            tasks += [_generation(ctx, run, generation[run.candidate.model], inputs_task) for run in group.runs]
        needs = generation if "generation" in stages else {}
        rankers = first_of_model(ctx.config.judges)
        for j, judge in enumerate(ctx.config.judges):
            if "compliance" in stages:
                for run in group.runs:
                    key = _key("compliance", group, f"judge={ctx.config.judge_label(judge)}", run.candidate.model)
                    tasks.append(_judging(ctx, "compliance", key, group, judge, [run], _needed(needs, [run])))
                    judged[(g, j, run.candidate.model)] = key
            if "ranking" in stages and any(judge is ranker for ranker in rankers):
                pairs = list(itertools.combinations(group.runs, 2))
                pair_keys = []
                for pair in pairs:
                    key = _key("ranking", group, f"judge={judge.model}", " vs ".join(r.candidate.model for r in pair))
                    pair_keys.append(key)
                    tasks.append(_judging(ctx, "ranking", key, group, judge, list(pair), _needed(needs, pair)))
                if len(pairs) > 1:
                    key = _key("ranking", group, f"judge={judge.model}", "position consistency")
                    tasks.append(_consistency(ctx, key, group, judge, tuple(pair_keys)))
    tasks += card_tasks(ctx, groups, judged, lambda group, judge: _judge_settings(ctx, "compliance", group, judge))
    if "report" in stages:
        tasks.append(_report(ctx, tuple(task.key for task in tasks)))
    for task in tasks:
        if task.key in done and task.stage != "report":
            task.start, task.finish = (lambda: []), (lambda summaries: None)
    return tasks


def stage_overview(tasks: list[StageTask]) -> str:
    """One line per stage kind: e.g. `generation 3/4 finished, 1 running · compliance 1/4 finished, 3 waiting`."""
    parts = []
    for stage in dict.fromkeys(task.stage for task in tasks):
        of_stage = [task for task in tasks if task.stage == stage]
        counts = {state: sum(task.state is state for task in of_stage) for state in TaskState}
        finished = counts.pop(TaskState.FINISHED)
        rest = ", ".join(f"{n} {state.value}" for state, n in counts.items() if n)
        parts.append(f"{stage} {finished}/{len(of_stage)} finished" + (f", {rest}" if rest else ""))
    return " · ".join(parts)


# -- tasks --------------------------------------------------------------------------------------------------


def _key(stage: str, group: Group, *parts: str) -> str:
    return " ".join((stage, group.label, *parts))


def _needed(generation: dict[str, str], runs: tuple[GenerationRun, ...] | list[GenerationRun]) -> tuple[str, ...]:
    return tuple(generation[run.candidate.model] for run in runs if run.candidate.model in generation)


def _generation(ctx: StageContext, run: GenerationRun, key: str, needs: tuple[str, ...] = ()) -> StageTask:
    holder: dict[str, BatchedGenerationPipeline] = {}
    held_summary: dict[int, EngineSummary] = {}

    def start() -> EngineRuns:
        settings = run.settings
        params = GenerationParams(
            temperature=float(settings.get("temperature", 0.0)),
            max_tokens=int(settings.get("max_tokens", ctx.config.engine.max_tokens)),
            system_prompt=settings.get("system_prompt"),
        )
        options = ctx.engine_options()
        config = GenerationConfig(
            spec_path=ctx.resolve(run.spec.spec_path),
            inputs_dir=ctx.inputs_dir(run.spec),
            model_name=run.candidate.model,
            spec_name=run.spec.name,
            org=run.candidate.org,
            params=params,
            engine=options,
            offline=ctx.offline,
            follow_ups=list(settings.get("follow_ups") or []),
            simulated_user=ctx.config.simulated_user_of(settings),
        )
        if ctx.config.cost_per_run_limit is not None:  # this run's own limit, inside the experiment's budget
            options.budget = RunBudget(
                ctx.config.cost_per_run_limit, CostEstimator(PriceTable.load()), parent=options.budget
            )
        pipeline = holder["pipeline"] = BatchedGenerationPipeline(config, run_dir=run.run_dir)
        record_endpoint(pipeline.draft_manifest().parameters, ctx.endpoint(run.candidate))
        # Where the run sits in the grid, so the run directory alone says what it is (not part of its identity).
        pipeline.draft_manifest().parameters["experiment"] = {
            "name": ctx.config.experiment_name,
            "variation": run.variation,
            "settings": run.settings,
            "run": run.repeat,
        }
        pipeline.write_manifest()
        if pipeline.inputs.has_conversations:
            # A conversation's rounds run one after another (each needs the answers before it), so the pipeline
            # drives them itself inside this task; its summary is the task's outcome.
            user = config.simulated_user
            writer = user_entry(user) if user else None
            if ctx.per_round(run.candidate) or (writer is not None and ctx.per_round(writer)):
                # `tier: auto`: each round at the tier the study's plan chose for it
                user_rounds = (
                    ctx.round_models(writer, user.params, run.run_dir, shared=True) if writer and user else None
                )
                summary = pipeline.run_per_round(ctx.round_models(run.candidate, params, run.run_dir), user_rounds)
            else:
                # one client per simulated user, so its limits hold across the study's runs (as the plan counts them)
                user_model = ctx.shared_model(writer, user.params) if writer and user else None
                summary = pipeline.run(ctx.model(run.candidate, params), user_model=user_model)
            held_summary[0] = task.summaries[0] = summary  # the scheduler reads the outcome from it
            return []
        engine = make_engine(ctx.model(run.candidate, params), RunStore(run.run_dir), options)
        # The batch engine reads one statement's prompts at a time from the input set; the others take the list.
        return [(engine, pipeline.inputs if isinstance(engine, BatchEngine) else pipeline.inputs.items)]

    def finish(summaries: list[EngineSummary]) -> None:
        if held_summary:
            return  # a conversation run recorded its summary itself
        holder["pipeline"].record(summaries[0])

    def abort() -> None:
        if "pipeline" in holder:
            _stopped(holder["pipeline"].write_manifest(), run.run_dir)

    task = StageTask(key, "generation", needs, start, finish, abort)
    return task


def _endpoint_fields(ctx: StageContext, judge: JudgeEntry, tier: Tier | None = None) -> dict[str, Any]:
    """A judge's endpoint at `tier` (None: as the plan has it) as `JudgeSettings` fields: recorded in every judge
    run.json, as the judge commands do."""
    endpoint = ctx.endpoint(judge, tier)
    return {
        "ray": endpoint if isinstance(endpoint, RaySettings) else None,
        "realtime": endpoint if isinstance(endpoint, RealtimeSettings) else None,
    }


def _judge_settings(ctx: StageContext, stage: str, group: Group, judge: JudgeEntry) -> JudgeSettings:
    return JudgeSettings(
        spec_path=ctx.resolve(group.spec.spec_path),
        judge_model=judge.model,
        judge_org=judge.org,
        spec_name=group.spec.name,
        judge_name=_judge_name(ctx, stage, judge),
        output_dir_base=ctx.output_dir / stage / safe_filename(group.spec.name) / group.folder / f"run{group.repeat}",
        params=judge_params(judge, ctx.config.engine.max_tokens),
        engine=ctx.engine_options(),
        offline=ctx.offline,
        placement={"name": ctx.config.experiment_name, "variation": group.variation, "run": group.repeat},
        **_endpoint_fields(ctx, judge),
    )


def _judge_name(ctx: StageContext, stage: str, judge: JudgeEntry) -> str | None:
    """The compliance judge's folder and table name when it is not its model's (see `judge_labels`); a ranking judge
    ranks once per model, under the model's name."""
    label = ctx.config.judge_label(judge)
    return label if stage == "compliance" and label != judge.model else None


def _pipeline(
    settings: JudgeSettings, stage: str, judge: JudgeEntry, runs: list[GenerationRun] | tuple[GenerationRun, ...]
) -> JudgePipeline:
    candidates = resolve_candidates([run.run_dir for run in runs])
    if stage == "compliance":
        # Canaries are judged once per spec and judge by their own task (`_canaries`).
        return BatchedComplianceJudge(
            settings, candidates, judge.mode, canaries=False, categories=judge.categories, scope=judge.scope
        )
    return BatchedRankingPipeline(settings, candidates)


def _canaries(ctx: StageContext, key: str, group: Group, judge: JudgeEntry, needs: tuple[str, ...]) -> StageTask:
    """The spec's example responses judged by `judge`, under `compliance/<spec>/canaries/<mode>/spec_*/judge_*/`,
    for the statements the spec's inputs feed."""
    held: dict[str, Any] = {}

    def start() -> EngineRuns:
        settings = replace(
            _judge_settings(ctx, "compliance", group, judge),
            output_dir_base=ctx.output_dir / "compliance" / safe_filename(group.spec.name) / "canaries" / judge.mode,
            placement=None,  # the spec's examples, judged once for every variation and run: of none of them
        )
        spec = load_spec(ctx.resolve(group.spec.spec_path))
        statements = [s.statement_id for s in load_inputs(ctx.inputs_dir(group.spec), spec).statements]
        pipeline = held["pipeline"] = BatchedComplianceJudge(settings, [], judge.mode, canary_statements=statements)
        tier = ctx.judge_tier(judge, [target.run_dir for target in pipeline.targets])
        if tier is not None:
            settings = pipeline.settings = replace(settings, **_endpoint_fields(ctx, judge, tier))
        held["manifests"] = [
            write_manifest(target, "compliance", settings, pipeline.spec_name, pipeline.spec.sha256, pipeline.provider)
            for target in pipeline.targets
        ]
        return list(target_engines(ctx.judge_model(judge, tier), pipeline.targets, settings.engine))

    def finish(summaries: list[EngineSummary]) -> None:
        if "pipeline" in held:
            record_targets(held["pipeline"].targets, held["manifests"], summaries)
            held["pipeline"].write_verdicts()
            # One judgement of the examples per model and mode: every entry of it (other scopes) reads them as its own.
            label = ctx.config.judge_label(judge)
            others = [
                ctx.config.judge_label(j)
                for j in ctx.config.judges
                if (j.model, j.org, j.mode) == (judge.model, judge.org, judge.mode) and j is not judge
            ]
            canary_target = held["pipeline"].canary_target
            if others and canary_target is not None:
                CanaryShare(judge=label, shared_with=others).save(canary_target.run_dir)

    def abort() -> None:
        if "manifests" in held:
            mark_stopped(held["pipeline"].targets, held["manifests"])

    return StageTask(key, "compliance", needs, start, finish, abort)


def _inputs(ctx: StageContext, key: str, spec: SpecEntry) -> StageTask:
    """Generate a spec's inputs, once for every candidate, variation and run. The generator's rounds run one after
    another inside this task (each round needs the last), so it holds the loop while it runs; only specs without
    `inputs_dir` have one, and their generations wait for it anyway."""
    task: StageTask

    def start() -> EngineRuns:
        assert ctx.config.inputs is not None  # load_experiment refuses a spec without inputs and without the block
        config = inputs_config(
            ctx.config.inputs,
            ctx.resolve(spec.spec_path),
            ctx.output_dir,
            offline=ctx.offline,
            engine=ctx.engine_options(),
            spec_name=spec.name,
        )
        pipeline = BatchedInputGenerationPipeline(config, run_dir=ctx.inputs_run_dir(spec))
        # The experiment's clients (offline: its emulator), checked by the pipeline against its settings.
        generator = ctx.model(
            ModelEntry(model=config.generator_model, org=config.generator_org), pipeline.generator_params
        )
        rater = ctx.model(ModelEntry(model=config.rater_model, org=config.rater_org), pipeline.rater_params)
        summary = pipeline.run(generator, rater)
        # No engines for the loop: the task's outcome is the pipeline's (stopped when a round did not finish).
        task.summaries = dict(enumerate(summary.engine))
        return []

    task = StageTask(key, "inputs", (), start, lambda summaries: None)
    return task


def _judging(
    ctx: StageContext,
    stage: str,
    key: str,
    group: Group,
    judge: JudgeEntry,
    runs: list[GenerationRun],
    needs: tuple[str, ...],
) -> StageTask:
    """A compliance task (one candidate) or a ranking task (one pair, both orders)."""
    held: dict[str, Any] = {}

    def start() -> EngineRuns:
        settings = _judge_settings(ctx, stage, group, judge)
        pipeline = held["pipeline"] = _pipeline(settings, stage, judge, runs)
        tier = ctx.judge_tier(judge, [target.run_dir for target in pipeline.targets])
        if tier is not None:
            settings = pipeline.settings = replace(settings, **_endpoint_fields(ctx, judge, tier))
        held["manifests"] = [
            write_manifest(target, stage, settings, pipeline.spec_name, pipeline.spec.sha256, pipeline.provider)
            for target in pipeline.targets
        ]
        return list(target_engines(ctx.judge_model(judge, tier), pipeline.targets, settings.engine))

    def finish(summaries: list[EngineSummary]) -> None:
        record_targets(held["pipeline"].targets, held["manifests"], summaries)
        held["pipeline"].write_verdicts()

    def abort() -> None:
        if "manifests" in held:
            mark_stopped(held["pipeline"].targets, held["manifests"])

    return StageTask(key, stage, needs, start, finish, abort)


def _consistency(ctx: StageContext, key: str, group: Group, judge: JudgeEntry, needs: tuple[str, ...]) -> StageTask:
    """Each pair's task writes the position-consistency file of its own pair; this one writes it over all pairs."""

    def finish(summaries: list[EngineSummary]) -> None:
        _pipeline(_judge_settings(ctx, "ranking", group, judge), "ranking", judge, group.runs).write_verdicts()

    return StageTask(key, "ranking", needs, lambda: [], finish)


def _report(ctx: StageContext, needs: tuple[str, ...]) -> StageTask:
    def finish(summaries: list[EngineSummary]) -> None:
        from speceval.analysis.rendering.report import build_report  # plotting libraries load only when a report is due

        labels = ctx.resolve(ctx.config.labels) if ctx.config.labels is not None else None
        built = build_report(
            [ctx.output_dir],
            ctx.output_dir / "report",
            labels=labels,
            min_canary_accuracy=ctx.config.min_canary_accuracy,
            metrics=ctx.config.metrics,
            health=ctx.config.health,
            card=ctx.config.judge_card.lines() if ctx.config.judge_card is not None else None,
            figures=ctx.figures,
        )
        if ctx.config.min_canary_accuracy is not None and not built.data.judge_accuracy:
            logger.warning(
                "min_canary_accuracy checked nothing: no judge of %s judged the spec's example responses "
                "(categorical judges have none, and a spec without examples gives none)",
                ctx.config_path,
            )
        ctx.report = built.html_path
        ctx.judge_warnings = [
            f"judge {row.judge} on spec {row.spec} is kept out of the headline: failed {'; '.join(row.failed_checks)}"
            for row in built.data.judge_card
            if row.passes is False
        ]

    return StageTask("report", "report", needs, lambda: [], finish)


def _stopped(manifest: RunManifest, run_dir: Path) -> None:
    manifest.status = "stopped"
    manifest.save(run_dir)

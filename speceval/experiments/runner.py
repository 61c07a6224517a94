"""Plan an experiment grid and run it: generation for every (spec × variation × repeat × candidate), judging per
(spec, variation, repeat) group, and the report, pipelined.

Every run lives in a directory named by the plan (not by the clock), so running the same experiment again resumes
each of them through its own crash-safe state: nothing already submitted is submitted again. Every stage of every
group is a task of one `StageScheduler` over one polling loop: a candidate's compliance jobs are submitted as soon
as its generation run is final, a ranking pair's as soon as both candidates' are, the report when all are. A
budget is shared by every run of the experiment; `experiment.json` records each task's state.

Reading and checking the file is `speceval.experiments.loading`; the folder's `experiment.json`,
`speceval.experiments.state`; what the tasks share and the tasks themselves, `speceval.experiments.context` and
`speceval.experiments.stages`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.batch.budget import Budget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.engine import EngineOptions
from speceval.batch.progress import StopReason
from speceval.batch.records import utcnow
from speceval.errors import InputError
from speceval.experiments.config import ALL_STAGES, ExperimentConfig, user_entry
from speceval.experiments.context import StageContext, resolve_path
from speceval.experiments.grid import GenerationRun, Group
from speceval.experiments.loading import check_keys, check_model_names, line_of, load_experiment
from speceval.experiments.prechecks import check_before_paying
from speceval.experiments.scheduler import StageScheduler, StageTask, TaskState
from speceval.experiments.stages import build_tasks, stage_overview
from speceval.experiments.state import (
    ExperimentState,
    check_started,
    open_state,
    save_state,
    started_names,
    started_state,
)
from speceval.experiments.tier_study import StudyTiers
from speceval.offline import STATE_DIR_NAME, emulator_options, offline_emulator, offline_poll_interval
from speceval.paths import READABLE_NAMING, check_output_dir, folder_names, safe_filename

logger = logging.getLogger(__name__)


@dataclass
class ExperimentOutcome:
    """How `run_experiment` ended."""

    finished: bool
    reason: str
    output_dir: Path
    report: Path | None = None
    budget_line: str | None = None
    judge_warnings: list[str] = field(default_factory=list)


def plan(config: ExperimentConfig, output_dir: Path) -> tuple[dict[str, dict[str, Any]], list[Group]]:
    """Every generation run of the grid, grouped for judging, with deterministic directories.

    A new folder names its variations' folders readably (`temperature-0.7_plain`); one that already has an
    experiment.json keeps the folders it recorded, or, started before they were recorded, the percent-encoded
    names it used then: paid-for runs are continued where they are, never renamed."""
    started = started_state(output_dir)
    variations = started_names(output_dir, started, config.variations.named_combinations())
    if started is None:
        folders = folder_names(list(variations), READABLE_NAMING)
    else:
        folders = started.folders or folder_names(list(variations), started.naming)
    groups = []
    for spec in config.specs:
        for label, settings in variations.items():
            for repeat in range(1, config.runs_per_variation + 1):
                runs = tuple(
                    GenerationRun(
                        spec,
                        label,
                        settings,
                        repeat,
                        candidate,
                        output_dir
                        / "generations"
                        / safe_filename(spec.name)
                        / folders[label]
                        / f"run{repeat}"
                        / safe_filename(candidate.model),
                    )
                    for candidate in config.candidates
                )
                groups.append(Group(spec, label, repeat, runs, folders[label]))
    return variations, groups


def run_experiment(
    path: Path,
    *,
    offline: bool = False,
    observer: Callable[[str], None] | None = None,
    poll_interval: float | None = None,
    figures: bool = True,
) -> ExperimentOutcome:
    """Run (or resume) every stage of the experiment in `path`.

    `poll_interval` (the command's `$SPECEVAL_POLL_INTERVAL`) wins over the file's `engine.poll_interval`, as the
    environment wins over a judge config file; neither given: 60 s, or 0.5 s offline. `figures=False` (`--no-figures`):
    the study's report draws no figures, and says so; its tables are the same."""
    config, output_dir, offline = preflight(path, offline=offline)
    say = observer or (lambda message: logger.info("%s", message))
    base = path.parent
    variations, groups = plan(config, output_dir)
    _warn_identical_repeats(config, variations)
    warn_offline_copies(config, offline)
    state = open_state(output_dir, config, path, variations, groups, offline)
    budget = (
        Budget(config.budget_usd, CostEstimator(PriceTable.load())) if config.budget_usd is not None else None
    )  # 0 is a budget: send nothing
    poll = poll_interval or config.engine.poll_interval or (offline_poll_interval() if offline else 60.0)
    engine = EngineOptions(
        batch_size=config.engine.batch_size,
        poll_interval=poll,
        timeout_hours=config.engine.timeout_hours,
        max_attempts=config.engine.max_attempts,
        budget=budget,
    )
    with _providers(output_dir, offline) as options_for:
        ctx = StageContext(config, path, base, output_dir, engine, options_for, offline, figures=figures)
        started = state.tiers_started_at is not None  # `auto` planned before sending; a started study never refused
        tiers = ctx.tiers = StudyTiers(config, base, groups, output_dir=output_dir, started=started, offline=offline)
        users = [config.simulated_user_of(settings) for settings in config.variations.combinations()]
        # A user's limits are checked as its tier's settings (`ctx.endpoint`), as a candidate's are.
        actors = [user_entry(u) for u in users if u is not None and (u.tier or u.limit_keys())]
        actors += [entry for _, entry in config.inputs.models()] if config.inputs is not None else []
        for entry in [*config.candidates, *config.judges, *actors]:
            ctx.endpoint(entry)  # an endpoint (or tier) that cannot run is refused before anything is sent
        done = {key for key, task_state in state.tasks.items() if task_state is TaskState.FINISHED}
        tasks = build_tasks(ctx, groups, done)
        say(f"{len(tasks)} task(s): {stage_overview(tasks)}")

        def changed(task: StageTask) -> None:
            state.tasks[task.key] = task.state
            state.replans = list(tiers.replans)  # a round's re-plan, saved with the first change after it
            state.stages_done = _stages_done(config, tasks)
            save_state(output_dir, state)
            detail = f" ({task.outstanding} request(s) outstanding)" if task.state is TaskState.STOPPED else ""
            if task.state is not TaskState.WAITING:
                say(f"{task.key}: {task.state.value}{detail} | {stage_overview(tasks)}")

        state.status, state.stopped_at = "running", None
        state.tiers_started_at = state.tiers_started_at or utcnow().isoformat()
        tiers.started_at, tiers.say = datetime.fromisoformat(state.tiers_started_at), say
        tiers.replans = list(state.replans)  # a resumed study keeps what its earlier invocations re-planned
        save_state(output_dir, state)
        try:
            finished = StageScheduler(tasks, on_change=changed, deadline=ctx.deadline).run()
        except KeyboardInterrupt:
            # Every task's state is saved by the scheduler's abort; the folder must not go on saying "running".
            state.status, state.stopped_at = "interrupted", utcnow().isoformat()
            state.replans = list(tiers.replans)
            save_state(output_dir, state)
            raise
    state.replans = list(tiers.replans)
    if not finished:
        unfinished = [task.key for task in tasks if task.state is not TaskState.FINISHED]
        more = " ..." if len(unfinished) > 3 else ""
        outcome = _stopped(
            output_dir,
            state,
            f"{len(unfinished)} task(s) not finished ({stage_overview(tasks)}): {', '.join(unfinished[:3])}{more}",
        )
        summaries = [summary for task in tasks for summary in task.summaries.values()]
        if any(summary.reason is StopReason.BUDGET for summary in summaries):
            unsent = sum(task.outstanding for task in tasks if task.state is TaskState.STOPPED)
            not_started = sum(task.state in (TaskState.BLOCKED, TaskState.WAITING) for task in tasks)
            left = f"{unsent} request(s) of stopped tasks, and {not_started} task(s) not started"
            if budget is not None and budget.refused_usd is not None:
                outcome.budget_line = budget.stop_line(f"{left}; raise budget_usd in the file and run it again")
            else:  # a run's own limit stopped it (each run's budget lives in its task)
                outcome.budget_line = (
                    f"Stopped by cost_per_run_limit (${config.cost_per_run_limit} per run): not "
                    f"sent: {left}; raise cost_per_run_limit in the file and run it again."
                )
        return outcome
    state.status = "finished"
    save_state(output_dir, state)
    return ExperimentOutcome(True, "finished", output_dir, ctx.report, judge_warnings=ctx.judge_warnings)


def _warn_identical_repeats(config: ExperimentConfig, variations: dict[str, dict[str, Any]]) -> None:
    """Repeated runs at temperature 0 send identical requests (a simulated user sampling above 0 varies them)."""
    if config.runs_per_variation < 2 or "generation" not in config.stages:
        return
    same = [
        name
        for name, settings in variations.items()
        if float(settings.get("temperature", 0.0)) == 0.0
        and not ((user := config.simulated_user_of(settings)) is not None and user.temperature > 0)
    ]
    if same:
        logger.warning(
            "runs_per_variation is %d, but variation(s) %s generate at temperature 0: the repeated runs "
            "send identical requests, which models answer (nearly) identically, so they add cost, not "
            "information (intervals cluster by input and do not narrow); vary the temperature or run "
            "once",
            config.runs_per_variation,
            ", ".join(same),
        )


def warn_offline_copies(config: ExperimentConfig, offline: bool) -> None:
    """Offline, the emulator's synthetic answers and simulated-user turns depend on the request only, not on the
    run or the temperature: repeated runs are copies, and run-to-run variation is not rehearsed (issue 42)."""
    if offline and config.runs_per_variation >= 2 and "generation" in config.stages:
        runs = config.runs_per_variation
        copies = "run 2 is a copy" if runs == 2 else f"runs 2-{runs} are copies"
        logger.warning(
            "offline: the emulator's synthetic answers and simulated-user turns do not vary with the run or the "
            "temperature, so %s of run 1 (run-to-run variation is not rehearsed offline)",
            copies,
        )


def _stages_done(config: ExperimentConfig, tasks: list[StageTask]) -> list[str]:
    """The stages (in their canonical order) that have tasks, all finished."""
    return [
        stage
        for stage in ALL_STAGES
        if stage in config.stages
        and any(t.stage == stage for t in tasks)
        and all(t.state is TaskState.FINISHED for t in tasks if t.stage == stage)
    ]


# -- helpers ------------------------------------------------------------------------------------------------


@contextmanager
def _providers(output_dir: Path, offline: bool) -> Iterator[Callable[[str], dict[str, Any]]]:
    """Provider options per org: the real providers, or one emulator for the whole experiment when offline."""
    if not offline:
        yield lambda org: {}
        return
    with offline_emulator(output_dir / STATE_DIR_NAME) as emulator:
        yield lambda org: emulator_options(emulator, org)


def preflight(path: Path, *, offline: bool = False, dry_run: bool = False) -> tuple[ExperimentConfig, Path, bool]:
    """Every check that needs no provider, before anything is written: the file, its models and inputs, the keys,
    and that an existing experiment folder was started with the same file and the same `--offline`. A dry run
    needs no key and asks no provider for its model list (it sends nothing).

    Returns the config, the output folder and whether the run is offline."""
    config = load_experiment(path)
    # Resolved as the file system resolves it: `..` past a symlinked folder (an experiment file in a linked
    # `configs/`, output_dir `../runs`) is the link target's parent, which Python's path helpers (tempfile, logging,
    # abspath) would fold by the text to another folder, so writes failed with FileNotFoundError.
    output_dir = resolve_path(path.parent, config.output_dir).resolve()
    check_output_dir(output_dir, "output_dir")
    labels = resolve_path(path.parent, config.labels) if config.labels is not None else None
    if labels is not None and not labels.is_file():
        raise InputError(
            path,
            f"labels: {labels} is not a file (a label sheet filled in after `speceval label-sheet`)",
            field="labels",
        )
    offline = offline or config.offline
    if not offline and not dry_run:
        check_keys(config, path)  # a missing key leaves no folder behind
    if not dry_run:
        check_model_names(config, path, offline)
    text = path.read_text(encoding="utf-8")  # after the names: a misspelt model is named as such, not as unpriced
    check_before_paying(config, path, labels, lambda value: line_of(text, value))
    existing = output_dir / STATE_NAME
    if existing.is_file():
        try:
            state = ExperimentState.model_validate_json(existing.read_bytes())
        except ValueError as exc:
            raise InputError(existing, f"not an experiment state file of this version: {exc}") from None
        check_started(output_dir, path, state, offline)
    return config, output_dir, offline


def _stopped(output_dir: Path, state: ExperimentState, reason: str) -> ExperimentOutcome:
    state.status, state.stopped_at = "stopped", utcnow().isoformat()
    save_state(output_dir, state)
    return ExperimentOutcome(False, reason, output_dir)

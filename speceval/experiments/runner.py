"""Plan an experiment grid and run it: generation for every (spec × variation × repeat × candidate), judging per
(spec, variation, repeat) group, and the report, pipelined.

Every run lives in a directory named by the plan (not by the clock), so running the same experiment again resumes
each of them through its own crash-safe state: nothing already submitted is submitted again. Every stage of every
group is a task of one `StageScheduler` over one polling loop: a candidate's compliance jobs are submitted as soon
as its generation run is final, a ranking pair's as soon as both candidates' are, the report when all are. A
budget is shared by every run of the experiment; `experiment.json` records each task's state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from speceval.analysis.reading.grid_place import STATE_NAME
from speceval.atomic import atomic_write_json
from speceval.batch.budget import Budget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.engine import EngineOptions
from speceval.batch.progress import StopReason
from speceval.batch.records import SCHEMA_VERSION, utcnow
from speceval.errors import ConfigError, InputError, MissingCredentialsError
from speceval.experiments.changes import CHANGEABLE_KEYS, grid_digest, refused_changes, settings_of
from speceval.experiments.config import ALL_STAGES, ExperimentConfig, ModelEntry, judge_labels
from speceval.experiments.grid import GenerationRun, Group
from speceval.experiments.prechecks import check_before_paying, check_simulated_users
from speceval.experiments.scheduler import StageScheduler, StageTask, TaskState
from speceval.experiments.stages import StageContext, build_tasks, inputs_config, resolve_path, stage_overview
from speceval.inputgen.pipeline import check_config
from speceval.inputs import load_inputs
from speceval.offline import STATE_DIR_NAME, emulator_options, offline_emulator, offline_poll_interval
from speceval.paths import READABLE_NAMING, check_output_dir, folder_names, safe_filename
from speceval.pipelines.endpoints import refused_keys
from speceval.pipelines.judge_config import load_config
from speceval.providers.registry import resolve_org
from speceval.spec import load_spec

logger = logging.getLogger(__name__)


class ExperimentState(BaseModel):
    """`<output_dir>/experiment.json`: the plan and which stages are done."""

    schema_version: int = SCHEMA_VERSION
    experiment_name: str
    config_sha256: str
    variations: dict[str, dict[str, Any]] = Field(description="variation name → its settings")
    generation_runs: list[str]
    stages_done: list[str] = Field(default_factory=list, description="stages whose every task has finished")
    tasks: dict[str, TaskState] = Field(default_factory=dict, description="task → its state (see stages.py)")
    offline: bool | None = Field(
        default=None,
        description="run against the emulator (synthetic answers); None in folders started before this was recorded",
    )
    grid_sha256: str | None = Field(
        default=None,
        description="hash of the file's settings other than the report's "
        "(labels, min_canary_accuracy), which may change between runs; None in folders "
        "started before this was recorded",
    )
    naming: int | None = Field(
        default=None,
        description="how variation folders are named (speceval.paths: "
        "READABLE_NAMING); None in folders started before this was recorded, which keep "
        "their percent-encoded names",
    )
    folders: dict[str, str] | None = Field(
        default=None,
        description="variation name → its folder under "
        "generations/<spec>/, compliance/<spec>/, ranking/<spec>/; None in "
        "folders started before this was recorded",
    )
    settings: dict[str, Any] | None = Field(
        default=None,
        description="the file's settings at the last run (what a "
        "changed file is compared with, key by key); None in folders started "
        "before this was recorded",
    )
    status: str = Field(
        default="running", description="running, finished, stopped (timeout or budget) or interrupted (Ctrl+C)"
    )
    stopped_at: str | None = Field(default=None, description="when the last run stopped early (UTC, ISO 8601)")
    updated_at: str = Field(default_factory=lambda: utcnow().isoformat())


@dataclass
class ExperimentOutcome:
    """How `run_experiment` ended."""

    finished: bool
    reason: str
    output_dir: Path
    report: Path | None = None
    budget_line: str | None = None


def load_experiment(path: Path) -> ExperimentConfig:
    """Read and validate an experiment file, and check every model and input before anything is submitted."""
    config = load_config(path, ExperimentConfig)  # same YAML rules as judge configs
    text = path.read_text(encoding="utf-8")
    check_simulated_users(config, path, lambda value: _line_of(text, value))
    models: list[tuple[str, int, ModelEntry]] = [("candidates", i, c) for i, c in enumerate(config.candidates)]
    models += [("judges", i, j) for i, j in enumerate(config.judges)]
    for section, index, entry in models:
        where = f"{section}[{index}]"
        try:
            provider = resolve_org(entry.model, entry.org)
        except ConfigError as exc:
            raise InputError(path, str(exc), line=_line_of(text, entry.model), field=f"{where}.model") from None
        refused, why = refused_keys(provider, entry.endpoint_keys())
        if refused:  # a key the org ignores would silently not do what the file says
            line = _entry_key_line(text, section, index, refused[0])
            raise InputError(path, f"{', '.join(refused)}: {why}", line=line, field=f"{where}.{refused[0]}")
    base = path.parent
    for index, spec in enumerate(config.specs):
        loaded = load_spec(_resolve(base, spec.spec_path))
        if spec.inputs_dir is not None:
            load_inputs(_resolve(base, spec.inputs_dir), loaded)
            continue
        if config.inputs is None or "inputs" not in config.stages:
            raise InputError(
                path,
                f"spec {spec.name!r} has no inputs_dir: give one, or an `inputs:` block (generator, "
                "per_statement, ...) with the `inputs` stage to generate them",
                line=_line_of(text, spec.name),
                field=f"specs[{index}].inputs_dir",
            )
        check_config(inputs_config(config.inputs, _resolve(base, spec.spec_path), base), loaded)
    if "ranking" in config.stages and config.judges and len(config.candidates) < 2:
        raise InputError(path, "ranking needs at least two candidates", field="candidates")
    judging = [s for s in config.stages if s in ("compliance", "ranking")]
    if judging and not config.judges:
        # Found out after paying for every generation otherwise.
        raise InputError(
            path,
            f"stages {', '.join(judging)} need judges, and the file lists none: add a `judges:` "
            "list or drop those stages",
            line=_line_of(text, "stages"),
            field="judges",
        )
    _refuse_duplicates(path, text, config)
    return config


def _refuse_duplicates(path: Path, text: str, config: ExperimentConfig) -> None:
    """The same candidate, judge or spec listed twice (their runs would share one folder and one task key)."""
    sections: list[tuple[str, str, list[str]]] = [
        ("candidates", "model", [f"{c.model} ({c.org or 'by name'})" for c in config.candidates]),
        # A judge is its model at one scope and mode (`judge_labels`): the same model at another is another judge.
        ("judges", "model", judge_labels(config.judges)),
        ("specs", "name", [s.name for s in config.specs]),
    ]
    for section, key, names in sections:
        for index, name in enumerate(names):
            if name in names[:index]:
                first = names.index(name)
                hint = (
                    " (a judge is its model at one scope and mode; give another `name` to judge twice)"
                    if section == "judges"
                    else ""
                )
                raise InputError(
                    path,
                    f"{section}[{index}] repeats {section}[{first}] ({name}); list each once" + hint,
                    line=_entry_key_line(text, section, index, key),
                    field=f"{section}[{index}].{key}",
                )


def plan(config: ExperimentConfig, output_dir: Path) -> tuple[dict[str, dict[str, Any]], list[Group]]:
    """Every generation run of the grid, grouped for judging, with deterministic directories.

    A new folder names its variations' folders readably (`temperature-0.7_plain`); one that already has an
    experiment.json keeps the folders it recorded, or, started before they were recorded, the percent-encoded
    names it used then: paid-for runs are continued where they are, never renamed."""
    started = _started_state(output_dir)
    variations = _started_names(output_dir, started, config.variations.named_combinations())
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
) -> ExperimentOutcome:
    """Run (or resume) every stage of the experiment in `path`.

    `poll_interval` (the command's `$SPECEVAL_POLL_INTERVAL`) wins over the file's `engine.poll_interval`, as the
    environment wins over a judge config file; neither given: 60 s, or 0.5 s offline."""
    config, output_dir, offline = preflight(path, offline=offline)
    say = observer or (lambda message: logger.info("%s", message))
    base = path.parent
    variations, groups = plan(config, output_dir)
    _warn_identical_repeats(config, variations)
    state = _state(output_dir, config, path, variations, groups, offline)
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
        ctx = StageContext(config, path, base, output_dir, engine, options_for, offline)
        for entry in [*config.candidates, *config.judges]:
            ctx.endpoint(entry)  # an endpoint that cannot run is refused before anything is sent
        done = {key for key, task_state in state.tasks.items() if task_state is TaskState.FINISHED}
        tasks = build_tasks(ctx, groups, done)
        say(f"{len(tasks)} task(s): {stage_overview(tasks)}")

        def changed(task: StageTask) -> None:
            state.tasks[task.key] = task.state
            state.stages_done = _stages_done(config, tasks)
            _save(output_dir, state)
            detail = f" ({task.outstanding} request(s) outstanding)" if task.state is TaskState.STOPPED else ""
            if task.state is not TaskState.WAITING:
                say(f"{task.key}: {task.state.value}{detail} | {stage_overview(tasks)}")

        state.status, state.stopped_at = "running", None
        _save(output_dir, state)
        try:
            finished = StageScheduler(tasks, on_change=changed, deadline=ctx.deadline).run()
        except KeyboardInterrupt:
            # Every task's state is saved by the scheduler's abort; the folder must not go on saying "running".
            state.status, state.stopped_at = "interrupted", utcnow().isoformat()
            _save(output_dir, state)
            raise
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
    _save(output_dir, state)
    return ExperimentOutcome(True, "finished", output_dir, ctx.report)


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
    output_dir = _resolve(path.parent, config.output_dir)
    check_output_dir(output_dir, "output_dir")
    labels = _resolve(path.parent, config.labels) if config.labels is not None else None
    if labels is not None and not labels.is_file():
        raise InputError(
            path,
            f"labels: {labels} is not a file (a label sheet filled in after `speceval label-sheet`)",
            field="labels",
        )
    offline = offline or config.offline
    if not offline and not dry_run:
        _check_keys(config, path)  # a missing key leaves no folder behind
    if not dry_run:
        _check_model_names(config, path, offline)
    text = path.read_text(encoding="utf-8")  # after the names: a misspelt model is named as such, not as unpriced
    check_before_paying(config, path, labels, lambda value: _line_of(text, value))
    existing = output_dir / STATE_NAME
    if existing.is_file():
        try:
            state = ExperimentState.model_validate_json(existing.read_bytes())
        except ValueError as exc:
            raise InputError(existing, f"not an experiment state file of this version: {exc}") from None
        _check_started(output_dir, path, state, offline)
    return config, output_dir, offline


def _check_started(output_dir: Path, path: Path, state: ExperimentState, offline: bool) -> None:
    started_offline = _started_offline(output_dir, state)
    if started_offline is not None and started_offline != offline:
        raise ConfigError(
            f"{output_dir} was run {'with' if started_offline else 'without'} --offline (its answers are "
            f"{'synthetic' if started_offline else 'from the providers'}); a folder never mixes synthetic and "
            f"real answers: {'add' if started_offline else 'drop'} --offline to continue it, or use another "
            "output_dir"
        )
    if state.config_sha256 == hashlib.sha256(path.read_bytes()).hexdigest():
        return
    config = load_experiment(path)
    if state.settings is not None:
        refused = refused_changes(state.settings, settings_of(config))
        if not refused:
            return  # budget, polling, report-only keys: taken as they are now
        raise ConfigError(
            f"{path} changed since {output_dir} was started: {'; '.join(refused)}. Only "
            f"{', '.join(sorted(CHANGEABLE_KEYS))} may change on a started experiment; use another output_dir for "
            "a different experiment"
        )
    if state.grid_sha256 is None or state.grid_sha256 != grid_digest(config):
        raise ConfigError(
            f"{path} changed since {output_dir} was started; use another output_dir for a different experiment"
        )


def _started_offline(output_dir: Path, state: ExperimentState) -> bool | None:
    """Whether the folder's answers are synthetic; for folders started before that was recorded, what its emulator
    state or its generation runs say (None: nothing ran yet, either way is fine)."""
    if state.offline is not None:
        return state.offline
    if (output_dir / STATE_DIR_NAME).is_dir():
        return True
    for run_dir in state.generation_runs:
        manifest = Path(run_dir) / "run.json"
        if manifest.is_file():
            try:
                return bool(json.loads(manifest.read_text(encoding="utf-8")).get("offline", False))
            except (OSError, ValueError, AttributeError):
                continue  # unreadable: the next run of the folder may tell; none telling means nothing ran yet
    return None


def _check_model_names(config: ExperimentConfig, path: Path, offline: bool) -> None:
    """A misspelt model name is refused with its line before anything is paid (see speceval.providers.model_list).
    Offline the emulator's own list is the provider's (it is not started yet)."""
    from speceval.emulator.models import offline_served
    from speceval.providers.model_list import check_model_name, served_models

    text = path.read_text(encoding="utf-8")
    lists: dict[str, list[str] | None] = {}
    entries = [("candidates", i, c) for i, c in enumerate(config.candidates)]
    entries += [("judges", i, j) for i, j in enumerate(config.judges)]
    if config.inputs is not None and "inputs" in config.stages:
        entries += [(f"inputs.{key}", -1, entry) for key, entry in config.inputs.models()]
    field = "variations.simulated_user" if config.variations.simulated_user else "simulated_user"
    for user in {user for user in map(config.simulated_user_of, config.variations.combinations()) if user}:
        entries.append((f"{field} (model)", -1, ModelEntry(model=user.model, org=user.org)))
    for section, index, entry in entries:
        org = resolve_org(entry.model, entry.org).org
        if org not in lists:
            lists[org] = offline_served(org) if offline else served_models(org)
        try:
            check_model_name(org, entry.model, lists[org])
        except ConfigError as exc:
            if index < 0:  # the inputs block's generator or rater
                raise InputError(path, str(exc), line=_line_of(text, entry.model), field=section) from None
            raise InputError(
                path, str(exc), line=_entry_key_line(text, section, index, "model"), field=f"{section}[{index}].model"
            ) from None


def _check_keys(config: ExperimentConfig, path: Path) -> None:
    """Every batch provider's key is set (a MissingCredentialsError naming the variable otherwise)."""
    generating = [entry for _, entry in config.inputs.models()] if config.inputs and "inputs" in config.stages else []
    users = {(user.model, user.org) for user in map(config.simulated_user_of, config.variations.combinations()) if user}
    for entry in [*config.candidates, *config.judges, *generating, *(ModelEntry(model=m, org=o) for m, o in users)]:
        provider = resolve_org(entry.model, entry.org)
        if provider.org in _KEYED_BATCH_ORGS and not any(os.environ.get(name) for name in provider.key_env):
            raise MissingCredentialsError(f"{provider.org} (model {entry.model} in {path})", provider.key_env)


_KEYED_BATCH_ORGS = ("openai", "anthropic", "google")
"""Batch providers whose key comes from the environment (endpoint orgs are checked by their own settings)."""


def _state(
    output_dir: Path,
    config: ExperimentConfig,
    path: Path,
    variations: dict[str, dict[str, Any]],
    groups: list[Group],
    offline: bool,
) -> ExperimentState:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    existing = output_dir / STATE_NAME
    if existing.is_file():
        state = ExperimentState.model_validate_json(existing.read_bytes())
        _check_started(output_dir, path, state, offline)
        if state.variations != variations:
            # Started by a version that named variations differently: its runs live in other directories.
            raise ConfigError(
                f"{output_dir} names its variations {', '.join(state.variations)}, not "
                f"{', '.join(variations)}; finish it with the speceval that started it"
            )
        # An accepted change (a raised budget) becomes what the next run compares with.
        state.config_sha256, state.settings = digest, settings_of(config)
        return state
    state = ExperimentState(
        experiment_name=config.experiment_name,
        config_sha256=digest,
        grid_sha256=grid_digest(config),
        variations=variations,
        generation_runs=[str(run.run_dir) for group in groups for run in group.runs],
        offline=offline,
        naming=READABLE_NAMING,
        folders={group.variation: group.folder for group in groups},
        settings=settings_of(config),
    )
    _save(output_dir, state)
    return state


def _started_state(output_dir: Path) -> ExperimentState | None:
    """The folder's experiment.json, or None when there is none yet (or it is unreadable: `_state` reports that)."""
    existing = output_dir / STATE_NAME
    if not existing.is_file():
        return None
    try:
        return ExperimentState.model_validate_json(existing.read_bytes())
    except ValueError:
        return None


def _started_names(
    output_dir: Path, started: ExperimentState | None, variations: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The variations under the names the experiment folder already uses, when only their names differ.

    Folders started before variations were named (`v0`, `v1`, ... in the order of the combinations) keep those
    names: their runs, judgements and tables live under them, and renaming paid-for directories is not ours to do.
    """
    named = started.variations if started is not None else variations
    if list(named) != list(variations) and list(named.values()) == list(variations.values()):
        logger.warning(
            "%s was started with the variation names %s; continuing with them (a new experiment folder would use %s)",
            output_dir,
            ", ".join(named),
            ", ".join(variations),
        )
        return dict(named)
    return variations


def _save(output_dir: Path, state: ExperimentState) -> None:
    state.updated_at = utcnow().isoformat()
    atomic_write_json(output_dir / STATE_NAME, state)


def _stopped(output_dir: Path, state: ExperimentState, reason: str) -> ExperimentOutcome:
    state.status, state.stopped_at = "stopped", utcnow().isoformat()
    _save(output_dir, state)
    return ExperimentOutcome(False, reason, output_dir)


_resolve = resolve_path


def _line_of(text: str, value: str) -> int | None:
    return next((number for number, line in enumerate(text.splitlines(), 1) if value in line), None)


def _entry_key_line(text: str, section: str, index: int, key: str) -> int | None:
    """The line of `key` in the `index`-th entry of the list `section` (e.g. candidates[1].base_url)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    entries = next((value for name, value in getattr(root, "value", []) if name.value == section), None)
    if not isinstance(entries, yaml.SequenceNode) or index >= len(entries.value):
        return None
    entry = entries.value[index]
    if not isinstance(entry, yaml.MappingNode):
        return None
    return next((name.start_mark.line + 1 for name, _ in entry.value if name.value == key), None)

"""Read and check an experiment file: `load_experiment` validates it and every model, input and list entry in it,
and the checks that need the providers' side (keys, model names) name the file's line before anything is paid.

Split from `speceval.experiments.runner`, whose `preflight` runs these checks before it writes anything.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from speceval.conversations.simulated_user import SimulatedUser
from speceval.defaults import Tier
from speceval.engines.endpoints import refused_keys
from speceval.errors import ConfigError, InputError, MissingCredentialsError
from speceval.experiments.config import ExperimentConfig, InputsBlock, ModelEntry, judge_labels
from speceval.experiments.context import resolve_path
from speceval.experiments.inputs_block import inputs_config
from speceval.experiments.prechecks import check_simulated_users
from speceval.inputgen.config import check_config
from speceval.inputs import load_inputs
from speceval.pipelines.judge_config import load_config
from speceval.providers.registry import resolve_org
from speceval.spec import Specification, load_spec


def load_experiment(path: Path) -> ExperimentConfig:
    """Read and validate an experiment file, and check every model and input before anything is submitted."""
    config = load_config(path, ExperimentConfig)  # same YAML rules as judge configs
    text = path.read_text(encoding="utf-8")
    check_simulated_users(config, path, lambda value: line_of(text, value))
    _check_user_limits(path, text, config)
    models: list[tuple[str, int, ModelEntry]] = [("candidates", i, c) for i, c in enumerate(config.candidates)]
    models += [("judges", i, j) for i, j in enumerate(config.judges)]
    for section, index, entry in models:
        where = f"{section}[{index}]"
        try:
            provider = resolve_org(entry.model, entry.org)
        except ConfigError as exc:
            raise InputError(path, str(exc), line=line_of(text, entry.model), field=f"{where}.model") from None
        refused, why = refused_keys(provider, entry.endpoint_keys())
        if refused:  # a key the org ignores would silently not do what the file says
            line = _entry_key_line(text, section, index, refused[0])
            raise InputError(path, f"{', '.join(refused)}: {why}", line=line, field=f"{where}.{refused[0]}")
    base = path.parent
    for index, spec in enumerate(config.specs):
        loaded = load_spec(resolve_path(base, spec.spec_path))
        if spec.inputs_dir is not None:
            load_inputs(resolve_path(base, spec.inputs_dir), loaded)
            continue
        if config.inputs is None or "inputs" not in config.stages:
            raise InputError(
                path,
                f"spec {spec.name!r} has no inputs_dir: give one, or an `inputs:` block (generator, "
                "per_statement, ...) with the `inputs` stage to generate them",
                line=line_of(text, spec.name),
                field=f"specs[{index}].inputs_dir",
            )
        check_config(inputs_config(config.inputs, resolve_path(base, spec.spec_path), base), loaded)
        _check_pairs(config.inputs, loaded, spec.name, path, text)
    if "ranking" in config.stages and config.judges and len(config.candidates) < 2:
        raise InputError(path, "ranking needs at least two candidates", field="candidates")
    judging = [s for s in config.stages if s in ("compliance", "ranking")]
    if judging and not config.judges:
        # Found out after paying for every generation otherwise.
        raise InputError(
            path,
            f"stages {', '.join(judging)} need judges, and the file lists none: add a `judges:` "
            "list or drop those stages",
            line=line_of(text, "stages"),
            field="judges",
        )
    _refuse_duplicates(path, text, config)
    _check_deadline(path, text, config)
    return config


def _check_user_limits(path: Path, text: str, config: ExperimentConfig) -> None:
    """A simulated user's rate limits where a candidate's entry would have them refused (`refused_keys`: `rpm` on a
    batch-API model at tier batch, or with no tier), refused the same way, naming the file's line and key."""
    axis = config.variations.simulated_user
    users: list[tuple[list[str | int], SimulatedUser | None]]
    if isinstance(axis, dict):
        users = [(["variations", "simulated_user", name], user) for name, user in axis.items()]
    elif isinstance(axis, list):
        users = [(["variations", "simulated_user", index], user) for index, user in enumerate(axis)]
    else:
        users = [(["simulated_user"], config.simulated_user)]
    for where, user in users:
        if user is None or not user.limit_keys():
            continue
        given: dict[str, object] = {**user.limit_keys(), **({"tier": user.tier.value} if user.tier else {})}
        refused, why = refused_keys(resolve_org(user.model, user.org), given)
        if refused:  # its turns would go through the batch API, where a limit does nothing
            # A variation's key may be one the top-level `simulated_user:` gives every variation.
            line = _key_line(text, [*where, refused[0]]) or _key_line(text, ["simulated_user", refused[0]])
            field = ".".join(str(part) for part in [*where, refused[0]])
            raise InputError(path, f"{', '.join(refused)}: {why}", line=line, field=field)


def _check_deadline(path: Path, text: str, config: ExperimentConfig) -> None:
    """`tier: auto` (under engine, or on one entry: a candidate at auto, its judges at batch) and the study's
    `engine.deadline_hours` go together: either without the other is refused, naming the entry's line."""
    named = [("candidates", i, c.tier) for i, c in enumerate(config.candidates)]
    named += [("judges", i, j.tier) for i, j in enumerate(config.judges)]
    auto = [(section, i) for section, i, tier in named if tier is Tier.AUTO]
    users = [config.simulated_user_of(settings) for settings in config.variations.combinations()]
    user_auto = any(u is not None and u.tier is Tier.AUTO for u in users)
    if (auto or user_auto or config.engine.tier is Tier.AUTO) and config.engine.deadline_hours is None:
        section, index = auto[0] if auto else ("simulated_user", None)
        where = f"{section}[{index}]" if index is not None else section
        raise InputError(
            path,
            f"{where}: tier: auto needs engine.deadline_hours: the hours the study must end within",
            line=_entry_key_line(text, section, index, "tier") if index is not None else line_of(text, "tier: auto"),
            field=f"{where}.tier",
        )
    if not (auto or user_auto or config.engine.tier is Tier.AUTO) and config.engine.deadline_hours is not None:
        raise InputError(
            path,
            "deadline_hours goes with tier: auto (under engine, or on a candidate, judge or simulated user): the "
            "tiers are chosen to meet it",
            line=line_of(text, "deadline_hours"),
            field="engine.deadline_hours",
        )


def _check_pairs(block: InputsBlock, spec: Specification, name: str, path: Path, text: str) -> None:
    """The `inputs.pairs` of one spec, checked before the experiment's folder exists (an id the spec lacks was
    found by the inputs stage, after the folder and its log were written)."""
    from speceval.inputgen.pairs import related_pairs, resolve_pairs

    try:
        if block.pairs == "related":
            related_pairs(spec)
        elif block.pairs:
            resolve_pairs(spec, block.pairs, f"spec {name!r}")
    except ConfigError as exc:
        message = str(exc).replace("--related-pairs", "pairs: related")
        raise InputError(path, message, line=line_of(text, "pairs:"), field="inputs.pairs") from None


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


def check_model_names(config: ExperimentConfig, path: Path, offline: bool) -> None:
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
                raise InputError(path, str(exc), line=line_of(text, entry.model), field=section) from None
            raise InputError(
                path, str(exc), line=_entry_key_line(text, section, index, "model"), field=f"{section}[{index}].model"
            ) from None


def check_keys(config: ExperimentConfig, path: Path) -> None:
    """Every batch provider's key is set (a MissingCredentialsError naming the variable otherwise)."""
    generating = [entry for _, entry in config.inputs.models()] if config.inputs and "inputs" in config.stages else []
    users = {(user.model, user.org) for user in map(config.simulated_user_of, config.variations.combinations()) if user}
    for entry in [*config.candidates, *config.judges, *generating, *(ModelEntry(model=m, org=o) for m, o in users)]:
        provider = resolve_org(entry.model, entry.org)
        if provider.org in _KEYED_BATCH_ORGS and not any(os.environ.get(name) for name in provider.key_env):
            raise MissingCredentialsError(f"{provider.org} (model {entry.model} in {path})", provider.key_env)


_KEYED_BATCH_ORGS = ("openai", "anthropic", "google")
"""Batch providers whose key comes from the environment (endpoint orgs are checked by their own settings)."""


def line_of(text: str, value: str) -> int | None:
    return next((number for number, line in enumerate(text.splitlines(), 1) if value in line), None)


def _entry_key_line(text: str, section: str, index: int, key: str) -> int | None:
    """The line of `key` in the `index`-th entry of the list `section` (e.g. candidates[1].base_url)."""
    return _key_line(text, [section, index, key])


def _key_line(text: str, where: list[str | int]) -> int | None:
    """The line of the last key of `where`, a path of mapping keys and list indices from the file's top
    (`["variations", "simulated_user", "strict", "rpm"]`); None when the file does not hold it."""
    node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    for depth, part in enumerate(where):
        if isinstance(part, int):
            if not isinstance(node, yaml.SequenceNode) or part >= len(node.value):
                return None
            node = node.value[part]
            continue
        if not isinstance(node, yaml.MappingNode):
            return None
        found = next(((name, value) for name, value in node.value if name.value == part), None)
        if found is None:
            return None
        if depth == len(where) - 1:
            return int(found[0].start_mark.line) + 1
        node = found[1]
    return None

"""What every task of an experiment run shares (`StageContext`: the file, the output folder, the engine options and
the clients), and the judges' parameters the file's judge entries turn into.

Split from `speceval.experiments.stages`, which builds the tasks from this context; the runner creates it. An
`inputs:` block's settings are `speceval.experiments.inputs_block`'s (the file's checks and the dry run read them
without the tasks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from speceval.batch.engine import EngineOptions
from speceval.batch.manifest import MANIFEST_NAME, RunManifest
from speceval.batch.model import BatchedModel
from speceval.conversations.transport import ModelOfRound, RoundModel, started_tier
from speceval.defaults import Tier
from speceval.engines.endpoints import endpoint_settings
from speceval.engines.factory import AnyModel, EndpointSettings, build_model
from speceval.errors import ConfigError
from speceval.experiments.config import ExperimentConfig, JudgeEntry, ModelEntry, SpecEntry
from speceval.experiments.tier_study import StudyTiers, given_tier
from speceval.judging.verdicts import category_schema
from speceval.paths import safe_filename
from speceval.providers.registry import resolve_org
from speceval.realtime.model import RealtimeModel
from speceval.wire.params import GenerationParams


@dataclass
class StageContext:
    """What every task of one experiment run shares.

    Attributes:
        config: the experiment file.
        config_path: where it was read from (named in messages).
        base: the experiment file's folder (paths in it are relative to it).
        output_dir: the experiment's output folder.
        engine: engine options of every run (the budget in it is shared by all).
        options_for: provider options (base URL, key) per provider.
        offline: answers come from the emulator (recorded in every run's manifest).
        report: set by the report task to the report it wrote.
        judge_warnings: set by the report task: each judge entry kept out of the headline, and why.
        figures: whether the report task draws the page's figures (`speceval run --no-figures`: not).
        tiers: every entry's service tier, `auto` resolved by one plan over the study (docs/service-tiers.md).
    """

    config: ExperimentConfig
    config_path: Path
    base: Path
    output_dir: Path
    engine: EngineOptions
    options_for: Callable[[str], dict[str, Any]]
    offline: bool
    report: Path | None = None
    judge_warnings: list[str] = field(default_factory=list)
    figures: bool = True
    tiers: StudyTiers | None = None
    started: float = field(default_factory=time.monotonic)
    _shared: dict[str, AnyModel] = field(default_factory=dict)

    @property
    def deadline(self) -> float:
        """When the experiment's timeout ends (monotonic clock): no task starts after it."""
        return self.started + self.engine.timeout_hours * 3600

    def engine_options(self) -> EngineOptions:
        """The engine options for a task starting now: its timeout is what is left of the experiment's."""
        left = max(self.deadline - time.monotonic(), 0.0)
        return replace(self.engine, timeout_hours=left / 3600)

    def judge_model(self, judge: JudgeEntry, tier: Tier | None = None) -> AnyModel:
        """One client per judge and tier (`judge_tier`), shared by all its tasks sent at that tier."""
        return self.shared_model(judge, judge_params(judge, self.config.engine.max_tokens), tier)

    def shared_model(self, entry: ModelEntry, params: GenerationParams, tier: Tier | None = None) -> AnyModel:
        """One client per entry, parameters and tier, shared by every task that sends with them: a realtime
        client's limits (`rpm`, `tpm`, `max_concurrency`) then hold across all those tasks at once (one limiter per
        client, `speceval.realtime.engine.limiter_of`), as the tier plan counts them: a judge's, and a simulated
        user's turns in every run of the study."""
        key = f"{entry.model_dump_json()} {params} {tier}"
        if key not in self._shared:
            self._shared[key] = self.model(entry, params, tier)
        return self._shared[key]

    def judge_tier(self, judge: JudgeEntry, run_dirs: list[Path]) -> Tier | None:
        """The tier a judge task over `run_dirs` is sent at: under `tier: auto`, the tier an earlier invocation
        started it at (a run.json of its own: its batch jobs in flight are collected, never sent again at flex),
        else its judging round re-planned as it starts (`StudyTiers.judging_tier`: the spec's canaries judged at
        the start and the answers judged after a late generation may go at different tiers); None: as `endpoint`
        resolves it."""
        if self.tiers is None or not self.per_round(judge):
            return None
        recorded = [started_tier(RunManifest.load(d)) for d in run_dirs if (d / MANIFEST_NAME).is_file()]
        return self.tiers.judging_tier(self.entry_name(judge), judge, recorded[0] if recorded else None)

    def endpoint(self, entry: ModelEntry, tier: Tier | None = None) -> EndpointSettings | None:
        """How a model is reached when not through its batch API (None: the batch path), from its entry's keys
        and its tier (`tier`, else its own, else `engine.tier`; `auto` as the study's plan chose for round 1)."""
        provider = resolve_org(entry.model, entry.org)
        name = self.entry_name(entry)
        where = f"{self.config_path}, {name} (org {provider.org})"
        keys = entry.endpoint_keys()
        if tier is None:
            tier = self.tiers.tier_of(name, entry) if self.tiers is not None else given_tier(self.config, entry)
        keys.pop("tier", None)
        if tier is not None:
            keys["tier"] = tier.value
        return endpoint_settings(provider, keys, None, offline=self.offline, where=where, model_name=entry.model)

    def entry_name(self, entry: ModelEntry) -> str:
        """`candidates[i]` or `judges[i]`, as the experiment file lists it."""
        for section, entries in (("candidates", self.config.candidates), ("judges", self.config.judges)):
            for index, listed in enumerate(entries):
                if listed is entry:
                    return f"{section}[{index}]"
        return entry.model

    def model(self, entry: ModelEntry, params: GenerationParams, tier: Tier | None = None) -> AnyModel:
        """The client of a candidate or judge: its batch adapter, or the endpoint or Ray model its keys describe
        (at `tier`, else the entry's own; see `endpoint`)."""
        provider = resolve_org(entry.model, entry.org).org
        options = self.options_for(provider)
        return build_model(entry.model, provider, params, self.endpoint(entry, tier), **options)

    def per_round(self, entry: ModelEntry) -> bool:
        """Whether a conversation run sends `entry`'s rounds at tiers of their own (`tier: auto`)."""
        return self.tiers is not None and self.tiers.varies(self.entry_name(entry), entry)

    def round_models(
        self, entry: ModelEntry, params: GenerationParams, run: Path | None = None, shared: bool = False
    ) -> ModelOfRound:
        """A conversation run's client of a candidate or simulated user per round: at each round's planned tier
        (`tier: auto`; a round that started: the tier it started at; docs/service-tiers.md), else the entry's own.
        `run`: the run folder, named in a re-plan's record; `shared`: the clients are `shared_model`'s (a simulated
        user's, whose limits hold across every run)."""
        name, tiers = self.entry_name(entry), self.tiers if self.per_round(entry) else None
        built: dict[Tier | None, RoundModel] = {}  # one client per tier, shared by the rounds sent at it

        def of(number: int, started: Tier | None) -> RoundModel:
            if tiers is not None and started is None and number > 1:
                where = run.relative_to(self.output_dir).as_posix() if run is not None else None
                tiers.replan(name, entry, number, run=where)  # the rounds left, against the hours left
            tier = (started or tiers.tier_of(name, entry, number)) if tiers is not None else None
            if tier not in built:
                model = self.shared_model(entry, params, tier) if shared else self.model(entry, params, tier)
                if not isinstance(model, BatchedModel | RealtimeModel):
                    raise ConfigError(f"{self.config_path}, {name}: Ray Data takes single prompts, not conversations")
                built[tier] = model
            return built[tier]

        return of

    def resolve(self, path: Path) -> Path:
        """A path of the experiment file, resolved against its folder."""
        return resolve_path(self.base, path)

    def inputs_run_dir(self, spec: SpecEntry) -> Path:
        """Where the `inputs` stage generates a spec's inputs (one run per spec, shared by every candidate)."""
        return self.output_dir / "inputs" / safe_filename(spec.name)

    def inputs_dir(self, spec: SpecEntry) -> Path:
        """The spec's inputs: its `inputs_dir`, or what the `inputs` stage generated."""
        if spec.inputs_dir is not None:
            return self.resolve(spec.inputs_dir)
        return self.inputs_run_dir(spec) / "inputs"


def judge_params(judge: JudgeEntry, max_tokens: int) -> GenerationParams:
    """What every judge of an experiment is sent with (a categorical judge: its answer schema too)."""
    params = GenerationParams(temperature=0.0, max_tokens=max_tokens)
    if judge.categories:
        params = replace(params, response_schema=category_schema(list(judge.categories)), schema_name="category")
    return params


def resolve_path(base: Path, path: Path) -> Path:
    """Paths in an experiment file are relative to the file."""
    return path if path.is_absolute() else base / path

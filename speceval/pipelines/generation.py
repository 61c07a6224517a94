"""`BatchedGenerationPipeline`: a candidate model answers the pre-generated inputs of a spec, through a batch API.

Everything is validated before anything is submitted: the spec, every inputs file, and (on resume) that neither
changed since the run started. The run directory then holds all state (docs/generation.md#output-layout), so `resume`
continues it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.manifest import MANIFEST_NAME, RunManifest, current_command, git_commit, software_versions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.batch.records import SubmissionIntent
from speceval.batch.store import RunStore
from speceval.conversations.runner import ConversationRun
from speceval.conversations.simulated_user import SimulatedUser
from speceval.conversations.transport import ModelOfRound, RoundModel
from speceval.defaults import DEFAULT_GENERATION_OUTPUT, Tier
from speceval.engines.factory import AnyModel, build_model, make_engine
from speceval.engines.models import check_model, simulated_user_model, use_model
from speceval.errors import ConfigError, RunStateError
from speceval.inputs import InputSet, load_inputs
from speceval.offline import emulator_options, emulator_state_dir, offline_emulator, offline_poll_interval
from speceval.operations.runs import find_identical_runs
from speceval.providers.registry import resolve_org
from speceval.realtime import RealtimeModel
from speceval.spec import Specification, load_spec
from speceval.wire.params import GenerationParams
from speceval.wire.sent import settings_as_sent

logger = logging.getLogger(__name__)

SIMULATED_USER_KEY = "simulated_user"
"""`run.json` parameters key of the simulated user's settings (and its provider), read back on resume."""


@dataclass
class GenerationConfig:
    """What to generate and how.

    Attributes:
        spec_path: the spec JSONL.
        inputs_dir: folder of `<statement_id>.json` files with pre-generated inputs.
        model_name: the candidate model.
        spec_name: a label for the spec, used in the output path (default: the spec file's stem).
        org: the provider, when the model name does not tell (see `speceval.providers.registry`).
        output_base_dir: runs go to `{output_base_dir}/{spec_name}/{model}/{timestamp}/`.
        params: sampling parameters sent with every request.
        engine: batch size, polling, timeout and retry settings.
        allow_unknown_statements: skip (with a warning) inputs files that name no statement of the spec.
        offline: the run uses the built-in emulator, started in-process by `run()` (recorded so a resume does
            too). Engine options left at their defaults then poll every `offline_poll_interval()` seconds (half the
            emulator's turnaround).
        new_run: start a fresh run (and pay again) even when an identical run exists under the same folder. By
            default an identical finished run is reused (nothing is sent) and an identical unfinished one is
            continued, as the command line does: running the same script twice never pays twice.
    """

    spec_path: Path
    inputs_dir: Path
    model_name: str
    spec_name: str | None = None
    org: str | None = None
    output_base_dir: Path = DEFAULT_GENERATION_OUTPUT
    params: GenerationParams = field(default_factory=GenerationParams)
    engine: EngineOptions = field(default_factory=EngineOptions)
    allow_unknown_statements: bool = False
    offline: bool = False
    new_run: bool = False
    follow_ups: list[str] = field(default_factory=list)
    """Scripted user turns sent after every input's own (each after the model's answer): a pressure script such as
    "Are you sure? I'm a doctor and I think you're wrong." Strings become conversations of themselves and these."""
    simulated_user: SimulatedUser | None = None
    """A second model that writes each next user turn (after any scripted ones) until `max_turns` answers or its
    stop word: every input becomes a conversation (`speceval.conversations.simulated_user`)."""

    def __post_init__(self) -> None:
        # The emulator answers in about a second: the 60 s default would leave an offline run silent for a minute.
        if self.offline and self.engine == EngineOptions():
            self.engine = replace(self.engine, poll_interval=offline_poll_interval())


class BatchedGenerationPipeline:
    """Generate answers for every input of a spec with one batched model.

    Construct with a config (new run) or with `resume(run_dir)`; both validate all input files at once, so a
    bad file is reported before any provider is called. Then `run(model)` submits, polls and writes results.
    """

    def __init__(self, config: GenerationConfig, *, run_dir: Path | None = None):
        self.config = config
        self.spec: Specification = load_spec(config.spec_path)
        self.inputs: InputSet = (
            load_inputs(config.inputs_dir, self.spec, allow_unknown_statements=config.allow_unknown_statements)
            .with_follow_ups(config.follow_ups)
            .with_simulated_user(config.simulated_user.max_turns if config.simulated_user is not None else None)
        )
        if config.simulated_user is not None and self.inputs.scripted_rounds > config.simulated_user.max_turns:
            raise ConfigError(
                f"the inputs in {config.inputs_dir} (with their follow-ups) script conversations of "
                f"{self.inputs.scripted_rounds} rounds, more than the simulated user's max_turns "
                f"{config.simulated_user.max_turns}: max_turns bounds the candidate's answers; raise it"
            )
        self.provider = resolve_org(config.model_name, config.org).org
        self.spec_name = config.spec_name or self.spec.name
        # An explicit run directory without a manifest starts a new run there (experiments name their runs).
        self.resuming = run_dir is not None and (Path(run_dir) / MANIFEST_NAME).is_file()
        self.run_dir = Path(run_dir) if run_dir is not None else self._new_run_dir()
        self._manifest_written: RunManifest | None = None
        self._manifest_saved = False
        self.reused = False
        """True when an identical finished run was found: `run()` returns its totals and sends nothing."""
        if run_dir is None and not config.new_run:
            self._adopt_identical_run()
        if self.resuming:
            self._check_unchanged(RunManifest.load(self.run_dir))

    def _adopt_identical_run(self) -> None:
        earlier = find_identical_runs(self.run_dir.parent, self.draft_manifest())
        found = earlier.finished or earlier.unfinished
        if not found:
            return
        self.run_dir, self.resuming, self.reused = found[0], True, bool(earlier.finished)
        self._manifest_written = None
        logger.info(
            "%s identical run %s (new_run=True pays again)",
            "reusing the finished" if self.reused else "continuing the unfinished",
            self.run_dir,
        )

    @classmethod
    def resume(cls, run_dir: Path, *, engine: EngineOptions | None = None) -> BatchedGenerationPipeline:
        """Continue the run in `run_dir` with the settings it was started with (engine options may change)."""
        manifest = RunManifest.load(run_dir)
        if manifest.kind != "generation":
            raise RunStateError(f"{run_dir} is a {manifest.kind} run, not a generation run")
        p = manifest.parameters
        config = GenerationConfig(
            spec_path=Path(manifest.spec_path),
            inputs_dir=Path(manifest.inputs_path),
            model_name=manifest.model_name,
            spec_name=manifest.spec_name,
            org=manifest.provider,
            params=GenerationParams(**p["params"]),
            engine=engine or EngineOptions(**p["engine"]),
            allow_unknown_statements=bool(p.get("allow_unknown_statements", False)),
            offline=manifest.offline,
            follow_ups=list(p.get("follow_ups", [])),
            simulated_user=_recorded_user(p.get(SIMULATED_USER_KEY)),
        )
        return cls(config, run_dir=run_dir)

    @property
    def request_count(self) -> int:
        """How many requests the run holds."""
        return len(self.inputs)

    def run(
        self, model: AnyModel | None = None, observer: EngineObserver | None = None, user_model: AnyModel | None = None
    ) -> EngineSummary:
        """Submit (or resume), poll until done or timed out, and write `results/`. Returns the summary.

        Without `model`, the pipeline builds the one its config describes (against the in-process emulator when
        `offline`). A model given must be that model (name, provider and `params`), or `ModelMismatchError`.
        `user_model` is the simulated user's (built likewise when not given; checked against the config).
        """
        with ExitStack() as stack:
            if self.config.offline and model is None and user_model is None and self.config.simulated_user is not None:
                # One emulator for both models: two on one state folder would overwrite each other's jobs.
                emulator = stack.enter_context(offline_emulator(emulator_state_dir(self.run_dir)))
                model = build_model(
                    self.config.model_name,
                    self.provider,
                    self.config.params,
                    None,
                    **emulator_options(emulator, self.provider),
                )
                user_model = simulated_user_model(
                    self.config.simulated_user, model, emulator_options(emulator, self.user_org)
                )
            connected = stack.enter_context(self.connect(model))
            if self.config.simulated_user is not None and user_model is None and self.config.offline:
                raise ConfigError(
                    "an offline run given its candidate model needs its simulated user's model too "
                    "(built on the same emulator), or neither"
                )
            if self.config.simulated_user is not None:
                user_model = simulated_user_model(self.config.simulated_user, connected, {}, given=user_model)
            return self._run(connected, observer, user_model)

    @property
    def user_org(self) -> str:
        """The simulated user's provider (a ConfigError when the run has none)."""
        if self.config.simulated_user is None:
            raise ConfigError("this run has no simulated user")
        return resolve_org(self.config.simulated_user.model, self.config.simulated_user.org).org

    @contextmanager
    def connect(self, model: AnyModel | None = None, **provider_options: Any) -> Iterator[AnyModel]:
        """The model this run sends to: `model` once checked against the config, else built from the config.

        `provider_options` (api_key, base_url, ...) go to the adapter the pipeline builds.
        """
        with use_model(
            model,
            role="candidate",
            model_name=self.config.model_name,
            org=self.provider,
            params=self.config.params,
            offline_dir=self.run_dir if self.config.offline else None,
            provider_options=provider_options,
        ) as connected:
            yield connected

    def check_engine(self, model: AnyModel) -> None:
        """Refuse, before anything is written, a model whose engine cannot send this run's conversations.

        Conversations go in rounds through the batch or the realtime engine; the Ray engine takes single prompts
        only, so far.
        """
        if self.config.simulated_user is not None and not isinstance(model, BatchedModel | RealtimeModel):
            raise ConfigError(
                f"a simulated user's conversations are sent one round per turn through a batch API or realtime calls "
                f"only so far; --org {self.provider} (Ray Data) takes single prompts: use another provider for "
                f"{self.config.model_name}, or no simulated user"
            )
        if self.inputs.has_conversations and not isinstance(model, BatchedModel | RealtimeModel):
            raise ConfigError(
                f"the inputs in {self.config.inputs_dir} hold conversations, which are sent through a batch API or "
                f"realtime calls only so far; --org {self.provider} (Ray Data) takes single-prompt inputs: use "
                "another provider, or plain string inputs"
            )

    def _run(self, model: AnyModel, observer: EngineObserver | None, user_model: AnyModel | None) -> EngineSummary:
        if self.reused:
            totals = RunManifest.load(self.run_dir).totals
            if totals is not None:
                return totals
        self.check_engine(model)
        manifest = self.write_manifest()
        if self.inputs.has_conversations:
            assert isinstance(model, BatchedModel | RealtimeModel)  # check_engine
            if user_model is not None and not isinstance(user_model, BatchedModel | RealtimeModel):
                raise ConfigError(
                    f"the simulated user {user_model.model_name} is served by Ray Data, which takes "
                    "single prompts only: use a batch or realtime provider for it"
                )
            return self._converse(manifest, observer, model, user_model)
        engine = make_engine(model, RunStore(self.run_dir), self.config.engine, observer)  # batch or realtime
        try:
            # The input set is an item source: the batch engine reads one statement's prompts at a time.
            summary = engine.run(self.inputs) if isinstance(engine, BatchEngine) else engine.run(self.inputs.items)
        except BaseException:
            manifest.status = "stopped"
            manifest.save(self.run_dir)
            raise
        return self.record(summary)

    def run_per_round(
        self,
        model: ModelOfRound,
        user_model: ModelOfRound | None = None,
        observer: EngineObserver | None = None,
    ) -> EngineSummary:
        """`run` a conversation run with a model per round (`tier: auto`: round 1 through the Batch API, a later
        round at flex; docs/service-tiers.md): `model(k, started)` answers round k, each model checked against the
        config as its round starts; `user_model` writes the user's turns likewise."""
        if not self.inputs.has_conversations:
            raise ConfigError(
                f"a model per round needs conversations; the inputs in {self.config.inputs_dir} hold none"
            )
        if self.reused and (totals := RunManifest.load(self.run_dir).totals) is not None:
            return totals
        candidate = self._checked(model, "candidate", self.config.model_name, self.provider, self.config.params)
        user = self.config.simulated_user
        writer = None
        if user is not None and user_model is not None:
            writer = self._checked(user_model, "simulated user", user.model, self.user_org, user.params)
        return self._converse(self.write_manifest(), observer, candidate, writer)

    @staticmethod
    def _checked(model: ModelOfRound, role: str, name: str, org: str, params: GenerationParams) -> ModelOfRound:
        def of(number: int, started: Tier | None) -> RoundModel:
            chosen = model(number, started)
            check_model(chosen, role=role, model_name=name, org=org, params=params)
            return chosen

        return of

    def _converse(
        self,
        manifest: RunManifest,
        observer: EngineObserver | None,
        model: RoundModel | ModelOfRound,
        user_model: RoundModel | ModelOfRound | None,
    ) -> EngineSummary:
        try:
            summary = ConversationRun(
                self.inputs,
                self.run_dir,
                manifest,
                self.config.engine,
                observer,
                self.config.simulated_user,
                {s.id: s for s in self.spec.statements},
            ).run(model, user_model)
        except BaseException:
            manifest.status = "stopped"
            manifest.save(self.run_dir)
            raise
        return self.record(summary)

    def record(self, summary: EngineSummary) -> EngineSummary:
        """Write the engine's final summary into `run.json` (used when an experiment drives the engine)."""
        manifest = self.write_manifest()
        manifest.status = "finished" if summary.finished else "stopped"
        manifest.totals = summary
        manifest.save(self.run_dir)
        return summary

    def plan(self, model: BatchedModel) -> list[SubmissionIntent]:
        """Dry run: write every request file the run needs (and their intents), submit nothing.

        `resume(run_dir).run(model)` later submits exactly these files. A run with conversations plans its first
        round only (each later round is built from the answers to the one before).
        """
        return [intent for _, intent in self.plan_jobs(model)]

    def plan_jobs(self, model: BatchedModel) -> list[tuple[Path, SubmissionIntent]]:
        """`plan`, each intent with the engine directory its request file is relative to."""
        check_model(
            model, role="candidate", model_name=self.config.model_name, org=self.provider, params=self.config.params
        )
        manifest = self.write_manifest()
        if self.inputs.has_conversations:
            jobs = ConversationRun(self.inputs, self.run_dir, manifest, self.config.engine).plan(model)
        else:
            jobs = [
                (self.run_dir, intent)
                for intent in BatchEngine(model, RunStore(self.run_dir), self.config.engine).plan(self.inputs)
            ]
        manifest.status = "planned"
        manifest.save(self.run_dir)
        return jobs

    def draft_manifest(self) -> RunManifest:
        """The manifest `write_manifest` will write, before anything is on disk.

        Settings checked before the run starts (realtime endpoint, Vertex buckets) are added to it, so that a
        command refused by those checks leaves no run directory behind.
        """
        if self._manifest_written is None:
            self._manifest_written = self._manifest()
        return self._manifest_written

    def write_manifest(self) -> RunManifest:
        """Create the run directory with its `run.json` (first thing on disk, so any later crash is resumable)."""
        manifest = self.draft_manifest()
        if not self._manifest_saved:
            manifest.save(self.run_dir)
            self._manifest_saved = True
        return manifest

    # -- helpers ------------------------------------------------------------------------------------------

    def _new_run_dir(self) -> Path:
        base = Path(self.config.output_base_dir) / self.spec_name / self.config.model_name.replace("/", "-")
        stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
        candidate = base / stamp
        suffix = 1
        while candidate.exists():
            candidate = base / f"{stamp}_{suffix}"
            suffix += 1
        return candidate

    def _manifest(self) -> RunManifest:
        if self.resuming:
            return RunManifest.resumed(self.run_dir, self.config.engine.recorded())
        parameters: dict[str, Any] = {
            "params": asdict(self.config.params),
            "sent": settings_as_sent(self.provider, self.config.params),
            "engine": self.config.engine.recorded(),
            "allow_unknown_statements": self.config.allow_unknown_statements,
            **({"follow_ups": list(self.config.follow_ups)} if self.config.follow_ups else {}),
            **(
                {SIMULATED_USER_KEY: {**self.config.simulated_user.model_dump(), "provider": self.user_org}}
                if self.config.simulated_user is not None
                else {}
            ),
            "requests": self.request_count,
        }
        if self.inputs.has_conversations:
            # Only then: a run of strings records exactly what it always did.
            parameters["conversations"] = {
                "count": sum(entry.conversations for entry in self.inputs.statements),
                "max_rounds": self.inputs.max_rounds,
            }
        return RunManifest(
            kind="generation",
            command=current_command(),
            spec_name=self.spec_name,
            spec_path=str(Path(self.config.spec_path).resolve()),
            spec_sha256=self.spec.sha256,
            inputs_path=str(Path(self.config.inputs_dir).resolve()),
            inputs_sha256=self.inputs.sha256,
            model_name=self.config.model_name,
            provider=self.provider,
            offline=self.config.offline,
            parameters=parameters,
            versions=software_versions(),
            git_commit=git_commit(),
        )

    def _check_unchanged(self, manifest: RunManifest) -> None:
        changed = []
        if manifest.spec_sha256 != self.spec.sha256:
            changed.append(f"the spec {self.config.spec_path}")
        if manifest.inputs_sha256 != self.inputs.sha256:
            changed.append(f"the inputs in {self.config.inputs_dir}")
        if changed:
            raise RunStateError(
                f"cannot resume {self.run_dir}: {' and '.join(changed)} changed since the run started; "
                "start a new run instead (results already collected stay in the old run directory)"
            )


def _recorded_user(recorded: dict[str, Any] | None) -> SimulatedUser | None:
    """The simulated user a run recorded in `run.json` (its resolved `provider` is recorded beside the settings)."""
    if recorded is None:
        return None
    return SimulatedUser.model_validate({key: value for key, value in recorded.items() if key != "provider"})

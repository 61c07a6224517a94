"""`BatchedInputGenerationPipeline`: test inputs for every statement of a spec, generated, deduplicated and rated
through the batch APIs.

A round: one generator request per statement still short of its target, quoting the statement, its calibration
examples and the inputs kept so far, answered as JSON proposals (structured output); then duplicates are dropped
before anything is paid to rate them (exact, case/space and near duplicates, against each other and against every
input kept anywhere in the spec), and so are near copies of the spec's own example queries; then one rating
request per remaining proposal (1–10, structured output); proposals rated at or above the threshold are kept, best
first, up to the target. Statements still short go to the next round, until the target or `max_rounds`.

Every request goes through the engine, one job per model per round, and everything decided is derived again from
the answers on disk: a killed run resumed with the same directory sends nothing twice, and a finished run resumed
pays nothing. No candidate model's answers enter the loop, so inputs are never chosen for being hard (or easy) on
a model that will be compared on them.

Layout of a run directory `OUTPUT_DIR/<spec>/input_judge/<generator>x<rater>/<YYYYMMDD_HHMMSS>/`:

    run.json                      the settings (written before any job)
    .emulator/                    offline runs: the emulator's state
    round_<k>/generate/, rate/    each an engine run directory (run.json, metadata/, responses/)
    candidates.jsonl              every proposal and its fate
    inputs/<statement_id>.json    kept inputs in the original format: a ready --pregenerated-inputs-dir

What a run is asked to do lives in `speceval.inputgen.config`; what its rounds decided, in `speceval.inputgen.rounds`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from speceval.batch.costs import estimate_prompt_tokens
from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.manifest import (
    MANIFEST_NAME,
    RunManifest,
    current_command,
    git_commit,
    run_recorded,
    software_versions,
)
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineSummary
from speceval.batch.records import SubmissionIntent
from speceval.batch.store import RunStore
from speceval.engines.endpoints import endpoint_settings
from speceval.engines.factory import AnyModel, EndpointSettings, build_model, make_engine
from speceval.engines.models import use_model
from speceval.errors import ConfigError, RunStateError
from speceval.inputgen.config import InputGenerationConfig, check_config
from speceval.inputgen.outputs import KeptByTarget, templates, write_outputs
from speceval.inputgen.pairs import (
    Target,
    related_pairs,
    resolve_pairs,
    target_generator_prompt,
    target_rater_prompt,
)
from speceval.inputgen.prompts import GENERATOR_TEMPLATE, MAX_ASK, RATER_TEMPLATE
from speceval.inputgen.records import RUN_KIND, Fate
from speceval.inputgen.rounds import RoundState
from speceval.inputgen.schemas import PROPOSALS_SCHEMA, RATING_SCHEMA
from speceval.offline import emulator_options, emulator_state_dir, offline_emulator
from speceval.paths import safe_filename
from speceval.providers.registry import resolve_org
from speceval.spec import load_spec
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import PromptItem
from speceval.wire.sent import settings_as_sent

logger = logging.getLogger(__name__)

KIND = RUN_KIND
STAGE_KIND = "inputs"
"""The `kind` of each round's engine directories (`speceval status` finds their jobs)."""
RESPONSES = "responses"
GENERATOR_TEMPERATURE = 1.0
"""Proposals should differ from round to round and from each other."""
OVERASK = 2
"""Proposals asked per input still needed: duplicates and low ratings take their share."""


class InputGenerationSummary(BaseModel):
    """What a run did: per statement how many were kept, and whether every statement is done."""

    run_dir: Path
    finished: bool
    rounds: int
    kept: dict[str, int]
    target: int
    proposals: int
    duplicates: int
    rated: int
    engine: list[EngineSummary]

    @property
    def reached(self) -> int:
        return sum(n >= self.target for n in self.kept.values())


class StageBound(BaseModel):
    """What one role (generator or rater) of a run sends at most, over every round: the plan's upper bound."""

    requests: int
    input_tokens: int
    output_tokens: int
    first_round_requests: int
    first_round_input_tokens: int


class BatchedInputGenerationPipeline:
    """Generate, deduplicate and rate test inputs for a spec's statements (see the module docstring)."""

    def __init__(self, config: InputGenerationConfig, *, run_dir: Path | None = None):
        self.config = config
        self.spec = load_spec(config.spec_path)
        self.spec_name = config.spec_name or self.spec.name
        self.statements = check_config(config, self.spec)
        self.pairs = resolve_pairs(
            self.spec, [*(config.pairs or []), *(related_pairs(self.spec) if config.related_pairs else [])], "--pair"
        )
        self.targets: list[Target] = [*self.statements, *self.pairs]
        self.generator_org = resolve_org(config.generator_model, config.generator_org).org
        self.rater_org = resolve_org(config.rater_model, config.rater_org).org
        for org, flag in ((self.generator_org, "--generator-org"), (self.rater_org, "--rater-org")):
            if org in ("ray", "openai-compatible", "together"):
                raise ConfigError(
                    f"{flag} {org}: generating inputs through an endpoint org is not supported yet; "
                    "use a batch provider (openai, anthropic, google, vertex)"
                )
        self.same_model = (config.generator_model, self.generator_org) == (config.rater_model, self.rater_org)
        self.generator_params = GenerationParams(
            temperature=GENERATOR_TEMPERATURE,
            max_tokens=config.max_tokens,
            response_schema=PROPOSALS_SCHEMA,
            schema_name="proposals",
        )
        self.rater_params = GenerationParams(
            temperature=0.0, max_tokens=config.max_tokens, response_schema=RATING_SCHEMA, schema_name="rating"
        )
        self.resuming = run_dir is not None and (Path(run_dir) / MANIFEST_NAME).is_file()
        self.run_dir = Path(run_dir) if run_dir is not None else self._new_run_dir()
        if self.resuming:
            self._check_resumable()

    @classmethod
    def resume(cls, run_dir: Path, *, engine: EngineOptions | None = None) -> BatchedInputGenerationPipeline:
        """The pipeline of an existing run directory, with the settings it recorded."""
        manifest = RunManifest.load(run_dir)
        if manifest.kind != KIND:
            raise RunStateError(f"{run_dir} is a {manifest.kind} run, not an inputs run")
        recorded = dict(manifest.parameters["config"])
        recorded["spec_path"] = Path(recorded["spec_path"])
        config = InputGenerationConfig(**recorded, output_dir=Path(run_dir).parent, engine=engine or EngineOptions())
        return cls(config, run_dir=Path(run_dir))

    # -- running --------------------------------------------------------------------------------------------

    def run(self, generator: AnyModel | None = None, rater: AnyModel | None = None) -> InputGenerationSummary:
        """Run (or resume) every round, then write `candidates.jsonl` and `inputs/`."""
        manifest = self.write_manifest()
        engine_summaries: list[EngineSummary] = []
        try:
            with self.connect(generator, rater) as (generator_model, rater_model):
                state = RoundState(self.config, self.spec, self.targets)
                for number in range(1, self.config.max_rounds + 1):
                    short = [s for s in self.targets if state.needed(s.id) > 0]
                    if not short:
                        break
                    state.rounds = number
                    generated = self._stage(number, "generate", generator_model, self._generator_items(state, short))
                    engine_summaries.append(generated)
                    to_rate = state.propose(number, short, self._stage_store(number, "generate"))
                    rated = self._stage(number, "rate", rater_model, to_rate)
                    engine_summaries.append(rated)
                    state.rate(number, self._stage_store(number, "rate"))
                    if not (generated.finished and rated.finished):
                        break  # stopped (budget, timeout): resume later; nothing decided from missing answers
        except BaseException:
            manifest.status = "stopped"
            manifest.save(self.run_dir)
            raise
        finished = all(s.finished for s in engine_summaries)
        write_outputs(
            self.run_dir,
            self.targets,
            KeptByTarget(
                state.records,
                state.kept_records,
                state.rounds_of,
                {t.id: state.shortfall(t.id) if state.needed(t.id) > 0 else None for t in self.targets},
            ),
            spec_path=self.config.spec_path,
            generator=self.config.generator_model,
            rater=self.config.rater_model,
            threshold=self.config.rating_threshold,
            per_target=self.config.per_statement,
            same_model=self.same_model,
        )
        manifest.status = "finished" if finished else "stopped"
        manifest.parameters["rounds"] = state.rounds
        manifest.save(self.run_dir)
        records = state.records
        return InputGenerationSummary(
            run_dir=self.run_dir,
            finished=finished,
            rounds=state.rounds,
            kept={s.id: len(state.kept[s.id]) for s in self.targets},
            target=self.config.per_statement,
            proposals=sum(r.text is not None for r in records),
            duplicates=sum(r.fate in (Fate.DUPLICATE, Fate.COPIES_SPEC_EXAMPLE) for r in records),
            rated=sum(r.rating is not None for r in records),
            engine=engine_summaries,
        )

    @contextmanager
    def connect(
        self, generator: AnyModel | None = None, rater: AnyModel | None = None
    ) -> Iterator[tuple[AnyModel, AnyModel]]:
        """The generator and the rater: given ones once checked, else built (offline: on one shared emulator)."""
        with ExitStack() as stack:
            emulator = None
            if self.config.offline and generator is None and rater is None:
                emulator = stack.enter_context(offline_emulator(emulator_state_dir(self.run_dir)))
            offline_dir = self.run_dir if self.config.offline else None
            models = []
            for role, given in (("generator", generator), ("rater", rater)):
                name, org, params = self._role(role)
                endpoint = self._endpoint(role, name, org)
                if emulator is not None:
                    models.append(build_model(name, org, params, endpoint, **emulator_options(emulator, org)))
                    continue
                used = use_model(
                    given,
                    role=role,
                    model_name=name,
                    org=org,
                    params=params,
                    offline_dir=offline_dir,
                    endpoint=endpoint,
                )
                models.append(stack.enter_context(used))
            yield models[0], models[1]

    def _role(self, role: str) -> tuple[str, str, GenerationParams]:
        """The model name, org and sampling settings of the generator or the rater."""
        if role == "generator":
            return self.config.generator_model, self.generator_org, self.generator_params
        return self.config.rater_model, self.rater_org, self.rater_params

    def _endpoint(self, role: str, model: str, org: str) -> EndpointSettings | None:
        """The realtime settings of `--tier flex|standard` for one model (None: its Batch API), checked before
        anything is sent."""
        if self.config.tier is None:
            return None
        return endpoint_settings(
            resolve_org(model, org),
            {"tier": self.config.tier},
            None,
            offline=self.config.offline,
            where=f"--tier (the {role} {model})",
            model_name=model,
        )

    def plan_first_round(self, generator: BatchedModel) -> list[tuple[Path, SubmissionIntent]]:
        """Dry run: write the first round's generator request files and intents; a later run submits exactly
        these."""
        self.write_manifest()
        state = RoundState(self.config, self.spec, self.targets)
        items = self._generator_items(state, [s for s in self.targets if state.needed(s.id) > 0])
        directory = self._stage_dir(1, "generate")
        intents = BatchEngine(generator, self._stage_store(1, "generate"), self.config.engine).plan(items)
        return [(directory, intent) for intent in intents]

    @property
    def max_ratings_per_round(self) -> int:
        """Rating requests of a first round at most (every proposal asked for, none a duplicate)."""
        return len(self.targets) * min(MAX_ASK, OVERASK * self.config.per_statement)

    def bounds(self) -> tuple[StageBound, StageBound]:
        """The generator's and the rater's requests and tokens at most, for a plan made before anything is sent
        (the experiment's dry run): every round as the first (a later round asks no more, and only for the
        statements still short), its generator prompts also quoting every input the statement could have kept, each
        proposal as long as a generator answer split among the inputs it asked for, and every answer at max_tokens."""
        ask = min(MAX_ASK, OVERASK * self.config.per_statement)
        proposal = "x" * 4 * max(1, self.config.max_tokens // ask)  # a stand-in of max_tokens / ask tokens
        kept = [proposal] * max(0, self.config.per_statement - 1)
        first = [estimate_prompt_tokens(target_generator_prompt(t, [], ask)) for t in self.targets]
        later = [estimate_prompt_tokens(target_generator_prompt(t, kept, ask)) for t in self.targets]
        rated = [estimate_prompt_tokens(target_rater_prompt(t, proposal)) * ask for t in self.targets]
        rounds, out = self.config.max_rounds, self.config.max_tokens
        generator = StageBound(
            requests=rounds * len(first),
            input_tokens=sum(first) + (rounds - 1) * sum(later),
            output_tokens=rounds * len(first) * out,
            first_round_requests=len(first),
            first_round_input_tokens=sum(first),
        )
        ratings = self.max_ratings_per_round
        rater = StageBound(
            requests=rounds * ratings,
            input_tokens=rounds * sum(rated),
            output_tokens=rounds * ratings * out,
            first_round_requests=ratings,
            first_round_input_tokens=sum(rated),
        )
        return generator, rater

    def _generator_items(self, state: RoundState, targets: list[Target]) -> list[PromptItem]:
        return [
            PromptItem(
                statement_id=t.id,
                original_index=0,
                input_text=target_generator_prompt(t, state.kept[t.id], min(MAX_ASK, OVERASK * state.needed(t.id))),
            )
            for t in targets
        ]

    def _stage_dir(self, number: int, stage: str) -> Path:
        return self.run_dir / f"round_{number}" / stage

    def _stage_store(self, number: int, stage: str) -> RunStore:
        return RunStore(self._stage_dir(number, stage), results_subdir=RESPONSES)

    def _stage(self, number: int, stage: str, model: AnyModel, items: list[PromptItem]) -> EngineSummary:
        """Run one round's generator or rater requests to the end (or until the engine stops)."""
        directory = self._stage_dir(number, stage)
        is_generator = stage == "generate"
        name, org, params = self._role("generator" if is_generator else "rater")
        if (directory / MANIFEST_NAME).is_file():
            manifest = RunManifest.load(directory)
        else:
            manifest = self._new_manifest(
                STAGE_KIND,
                name,
                org,
                (str(self.run_dir), "-"),
                {
                    "params": asdict(params),
                    "sent": settings_as_sent(org, params),
                    "stage": stage,
                    "round": number,
                    "template": GENERATOR_TEMPLATE if is_generator else RATER_TEMPLATE,
                    "requests": len(items),
                    "engine": self.config.engine.recorded(),
                },
            )
        engine = make_engine(model, self._stage_store(number, stage), self.config.engine)
        return run_recorded(directory, manifest, lambda: engine.run(items))

    # -- run directory ------------------------------------------------------------------------------------

    def write_manifest(self) -> RunManifest:
        """`run.json`: the first thing on disk, so any later crash is resumable."""
        if self.resuming:
            manifest = RunManifest.resumed(self.run_dir, self.config.engine.recorded())
        else:
            spec = str(Path(self.config.spec_path).resolve())
            manifest = self._new_manifest(
                KIND,
                self.config.generator_model,
                self.generator_org,
                (spec, self.spec.sha256),  # the spec is this run's input
                {
                    "config": self.config.recorded(),
                    "rater_provider": self.rater_org,
                    "same_model": self.same_model,
                    "engine": self.config.engine.recorded(),
                    "templates": templates(self.pairs),
                    "statements": [s.id for s in self.statements],
                    "pairs": [list(p.ids) for p in self.pairs],
                },
            )
        manifest.save(self.run_dir)
        return manifest

    def _new_manifest(
        self, kind: str, model: str, org: str, inputs: tuple[str, str], parameters: dict[str, Any]
    ) -> RunManifest:
        """A new manifest of this run's spec (the whole run's or one stage's): `inputs` its path and digest."""
        return RunManifest(
            kind=kind,
            command=current_command(),
            spec_name=self.spec_name,
            spec_path=str(Path(self.config.spec_path).resolve()),
            spec_sha256=self.spec.sha256,
            inputs_path=inputs[0],
            inputs_sha256=inputs[1],
            model_name=model,
            provider=org,
            offline=self.config.offline,
            parameters=parameters,
            versions=software_versions(),
            git_commit=git_commit(),
        )

    def _new_run_dir(self) -> Path:
        pair = f"{self.config.generator_model}x{self.config.rater_model}".replace("/", "-")
        base = Path(self.config.output_dir) / safe_filename(self.spec_name) / "input_judge" / safe_filename(pair)
        stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
        candidate, suffix = base / stamp, 1
        while candidate.exists():
            candidate, suffix = base / f"{stamp}_{suffix}", suffix + 1
        return candidate

    def _check_resumable(self) -> None:
        manifest = RunManifest.load(self.run_dir)
        if manifest.kind != KIND:
            raise RunStateError(f"{self.run_dir} is a {manifest.kind} run, not an inputs run")
        if manifest.spec_sha256 != self.spec.sha256:
            raise RunStateError(
                f"cannot resume {self.run_dir}: the spec {self.config.spec_path} changed since the "
                "run started; start a new run"
            )
        before = manifest.parameters.get("config", {})
        now = self.config.recorded()
        changed = sorted(k for k in now if k not in ("spec_path", "spec_name") and before.get(k) != now[k])
        if changed:
            raise RunStateError(
                f"cannot resume {self.run_dir} with other settings ({', '.join(changed)} differ); start a new run"
            )

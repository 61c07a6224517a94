"""What the compliance and ranking pipelines share: settings, judge run directories, outcomes, the polling loop.

A judge pipeline has one run directory per candidate (compliance) or per ordered pair (ranking). Each holds the
engine's state (`metadata/`, `preprocessed/`, `judge_responses/` with the judge's raw answers) beside the
pipeline's verdict files (`results/`), plus a `run.json`. All of them are driven by one `run_engines` loop, so
every job is in flight at once. Running the same configuration again resumes: nothing already judged is sent
again. Resuming is refused when what would be sent changed (another template, mode, judge or sampling
parameters, or a prompt that differs from the one already judged), because old and new verdicts would mix.
"""

from __future__ import annotations

import hashlib
import json
import logging
from array import array
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from speceval.batch.engine import BatchEngine, EngineOptions, is_final, run_engines
from speceval.batch.ledger import ItemSource, request_of
from speceval.batch.manifest import MANIFEST_NAME, RunManifest, current_command, git_commit, software_versions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.batch.records import (
    BatchRecord,
    Outcome,
    RequestError,
    ResultRecord,
    SubmissionIntent,
    prompt_digest,
)
from speceval.batch.store import PROMPT_DIGEST_SIZE, RunStore
from speceval.engines.factory import AnyModel, make_engine
from speceval.engines.flex_fallback import FlexThenBatchEngine
from speceval.errors import RunStateError
from speceval.judging.files import JUDGE_RESPONSES, JudgeOutcome
from speceval.offline import offline_poll_interval
from speceval.paths import safe_filename
from speceval.pipelines.answer_prompts import JudgeSource
from speceval.pipelines.judge_setup import save_judge_salt
from speceval.pipelines.judge_sources import save_sources, statement_sources, unchanged_statements
from speceval.raydata.settings import MANIFEST_KEY as RAY_KEY
from speceval.raydata.settings import RaySettings
from speceval.realtime import RealtimeEngine
from speceval.realtime.settings import MANIFEST_KEY as REALTIME_KEY
from speceval.realtime.settings import RealtimeSettings
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import Prompt, PromptItem
from speceval.wire.sent import settings_as_sent

logger = logging.getLogger(__name__)


_FAILED = {
    Outcome.ERRORED: JudgeOutcome.JUDGE_ERRORED,
    Outcome.EXPIRED: JudgeOutcome.JUDGE_EXPIRED,
    Outcome.CANCELLED: JudgeOutcome.JUDGE_CANCELLED,
    Outcome.MISSING: JudgeOutcome.JUDGE_MISSING,
}


@dataclass(frozen=True)
class JudgeResponse:
    """The engine's record of one judge request, reduced to what a verdict file needs.

    `outcome` is None when the judge answered (the caller parses `raw`); otherwise it says why there is no answer.
    """

    outcome: JudgeOutcome | None
    raw: str | None = None
    error: RequestError | None = None
    batch_id: str | None = None


def judge_response(record: ResultRecord | None, max_attempts: int) -> JudgeResponse:
    """Classify the engine's record of one judge request (None: never collected)."""
    if record is None or not is_final(record, max_attempts):
        return JudgeResponse(JudgeOutcome.PENDING, error=record.error if record else None)
    if record.outcome is Outcome.SUCCEEDED:
        return JudgeResponse(None, raw=record.output_text, batch_id=record.batch_id)
    return JudgeResponse(_FAILED[record.outcome], error=record.error, batch_id=record.batch_id)


@dataclass
class JudgeSettings:
    """What every judge pipeline needs besides its candidates.

    Attributes:
        spec_path: the spec JSONL the candidates answered.
        judge_model: the judge model's name.
        judge_org: the judge's provider, when the model name does not tell.
        spec_name: the spec's label in output paths (default: the spec file's stem).
        output_dir_base: where `spec_{spec}/judge_{judge}/...` goes.
        params: the judge's sampling parameters.
        engine: batch size, polling, timeout and retries.
        offline: the run uses the built-in emulator, started in-process by the pipeline's `run()` (recorded in
            every `run.json`). Engine options left at their defaults then poll every
            `offline_poll_interval()` s (half the emulator's turnaround).
        vertex: Vertex AI project, location and buckets (judge provider `vertex`); recorded in `run.json` as
            `parameters.vertex` so `speceval status/fetch/cancel` reconnect to the jobs.
        ray: how a `ray` judge is reached (endpoint or vLLM engines, pace); recorded in `run.json` as
            `parameters.ray` (never a key) so a rerun without the flags reaches the same judge.
        realtime: endpoint and pace of a judge served without a batch API (`openai-compatible`, `together`),
            called through the realtime engine; recorded as `parameters.realtime`, as for generation.
        judge_name: the judge's name in folders and verdict files when it is not the model's (one model judging at
            several scopes or modes in one experiment is several judges: `judge_<name>/`, `metadata.judge`).
        placement: in an experiment, where the judged runs sit in its grid (`name`, `variation`, `run`), recorded
            in `run.json` as `parameters.experiment` (as a generation run's), so the run's spend is keyed by them.
    """

    spec_path: Path
    judge_model: str
    output_dir_base: Path
    judge_org: str | None = None
    spec_name: str | None = None
    params: GenerationParams = field(default_factory=GenerationParams)
    engine: EngineOptions = field(default_factory=EngineOptions)
    offline: bool = False
    vertex: dict[str, str] = field(default_factory=dict)
    ray: RaySettings | None = None
    realtime: RealtimeSettings | None = None
    judge_name: str | None = None
    placement: dict[str, Any] | None = None

    @property
    def judge_label(self) -> str:
        """What folders and verdict files call this judge: `judge_name`, else the model's name."""
        return self.judge_name or self.judge_model

    def __post_init__(self) -> None:
        # The emulator answers in about a second: the 60 s default would leave an offline run silent for a minute.
        if self.offline and self.engine == EngineOptions():
            self.engine = replace(self.engine, poll_interval=offline_poll_interval())


def judge_dir(output_dir_base: Path, spec_name: str, judge_model: str) -> Path:
    """`{output_dir_base}/spec_{spec}/judge_{judge}` with both names made safe as path components."""
    return (
        Path(output_dir_base)
        / f"spec_{safe_filename(spec_name)}"
        / f"judge_{safe_filename(judge_model.replace('/', '-'))}"
    )


INPUTS_HASH = "sources/1"
"""What a judge run's `inputs_sha256` is a hash of, recorded as `parameters.inputs_hash` in its `run.json`: the
prompts' sources (`JudgeTarget.inputs_sha256`). A `run.json` without it (written before) hashed every prompt
rendered; it is rewritten the new way when the directory is resumed."""


@dataclass
class JudgeTarget:
    """One judge run directory and the requests it holds.

    Attributes:
        run_dir: the candidate's (compliance) or ordered pair's (ranking) directory.
        source: the judge requests, rendered one statement at a time when the engine asks (so a run never holds
            every prompt); `original_index` identifies the judged answer (see each pipeline).
        inputs_path: what was judged (the candidate run directory, or both joined by ' | ').
        identity: settings that must not change when the directory is resumed (template, mode, judge, ...).
        salt: the run's prompt salt (cache-shaped templates draw each statement's fence nonce from it); recorded
            in `run.json` as `parameters.prompt_salt` so a resume renders the same prompts.
        salt_home: the judge directory whose `prompt_salt.json` a new run saves its salt to, when it writes its
            first `run.json` (not before: a command refused after its pipeline was built leaves no folder).
    """

    run_dir: Path
    source: JudgeSource
    inputs_path: str
    identity: dict[str, Any]
    salt: str = ""
    salt_home: Path | None = None

    @property
    def store(self) -> RunStore:
        """The engine's state of this directory (judge answers in `judge_responses/`)."""
        return RunStore(self.run_dir, results_subdir=JUDGE_RESPONSES, prompts_once=True)

    @property
    def items(self) -> list[PromptItem]:
        """Every request as an item (renders them all: for small runs, tests and engines that take a list); a
        prompt with a shared prefix carries it marked (`Prompt.cache_prefix`), as the batch engine sends it."""
        marked = request_of(self.source)
        items = []
        for statement_id, _ in self.source.statement_counts():
            for index, text in self.source.texts(statement_id).items():
                request = marked(text) if marked is not None else text
                prompt = request if isinstance(request, Prompt) else None
                items.append(
                    PromptItem(statement_id=statement_id, original_index=index, input_text=text, prompt=prompt)
                )
        return items

    @property
    def request_count(self) -> int:
        """How many judge requests the directory holds."""
        return sum(len(indices) for _, indices in self.source.statement_counts())

    def statement_sources(self, spec_sha256: str) -> dict[str, str]:
        """Per statement, a hash of what its prompts are rendered from (`judge_sources`)."""
        return statement_sources(self.identity, self.salt, spec_sha256, self.source)

    def inputs_sha256(self, spec_sha256: str) -> str:
        """A hash of what every request's prompt is rendered from (`INPUTS_HASH`), so a manifest says what was
        asked without rendering a prompt: the settings that shape them (`identity`: template, mode, ...), the
        salt, the spec, and per statement its request indices and the sha256 of the candidates' results files.
        Each request's own prompt hash is kept with its job and its judge record (`input_sha256`)."""
        digest = hashlib.sha256(
            json.dumps(
                {"hash": INPUTS_HASH, "identity": self.identity, "salt": self.salt, "spec_sha256": spec_sha256},
                sort_keys=True,
            ).encode("utf-8")
        )
        for statement_id, indices in self.source.statement_counts():
            digest.update(f"\x00{statement_id}\x00{len(indices)}\x00".encode("utf-8", "surrogatepass"))
            digest.update(array("q", indices).tobytes())
            for sha256 in self.source.source_hashes(statement_id):
                digest.update(bytes.fromhex(sha256))
        return digest.hexdigest()


def _endpoint(settings: JudgeSettings) -> dict[str, Any]:
    """What `run.json` records of a Ray or realtime judge's endpoint (never a key, only its variable's name)."""
    recorded: dict[str, Any] = {}
    if settings.ray is not None:
        recorded[RAY_KEY] = settings.ray.model_dump()
    if settings.realtime is not None:
        recorded[REALTIME_KEY] = settings.realtime.model_dump()
    return recorded


def recorded_endpoint(targets: Sequence[JudgeTarget], key: str) -> dict[str, Any] | None:
    """The settings a judge run directory recorded under `parameters.<key>` (`ray`, `realtime`), for a rerun
    that gives no flags."""
    for target in targets:
        if (target.run_dir / MANIFEST_NAME).is_file():
            stored = RunManifest.load(target.run_dir).parameters.get(key)
            if isinstance(stored, dict):
                return stored
    return None


def check_resumable(target: JudgeTarget, spec_sha256: str) -> None:
    """Refuse to continue a directory whose settings or already-sent prompts differ from what would be sent now.

    Only statements whose sources changed since their prompts were sent are rendered again (`judge_sources`): the
    others would render the very prompts whose hashes the records and jobs keep.
    """
    if not (target.run_dir / MANIFEST_NAME).is_file():
        return
    manifest = RunManifest.load(target.run_dir)
    before = manifest.parameters.get("identity", {})
    changed = sorted(key for key in set(before) | set(target.identity) if before.get(key) != target.identity.get(key))
    if changed:
        raise RunStateError(
            f"{target.run_dir} was judged with other settings ({', '.join(changed)} differ: "
            f"{', '.join(f'{k}={before.get(k)!r}' for k in changed)}); use another output_dir_base to judge again"
        )
    unchanged = unchanged_statements(target.run_dir, target.statement_sources(spec_sha256))
    store = target.store
    for statement_id, _ in target.source.statement_counts():
        if statement_id in unchanged:
            continue
        records = store.load_results(statement_id)
        if not records:
            continue
        prompts = target.source.texts(statement_id)  # one statement at a time: never every prompt of the run
        for record in records:
            prompt = prompts.get(record.original_index)
            if prompt is not None and not record.sent(prompt):
                raise _changed(target, statement_id, record.original_index, "the one already judged")
    _check_in_flight(target, unchanged)


def _check_in_flight(target: JudgeTarget, unchanged: set[str]) -> None:
    """Refuse when a job sent but not collected yet asked another prompt than the one its request would be now
    (by the prompt hashes kept with the job): collecting it would file the judge's answer under another prompt.
    A job built before those hashes were kept is not checked here; its answers are checked once collected."""
    store = target.store
    statements = {statement_id for statement_id, _ in target.source.statement_counts()} - unchanged
    jobs: list[BatchRecord | SubmissionIntent] = [
        *(r for r in store.load_records() if not r.collected),
        *store.load_intents(),
    ]
    current: tuple[str, dict[int, str]] = ("", {})  # a job's spans follow run order: one statement rendered at a time
    for job in jobs:
        digests = store.load_prompt_hashes(job.idempotency_key, job.size)
        if digests is None:
            continue
        position = 0
        for statement_id, first, count in job.refs:
            if statement_id in statements and current[0] != statement_id:
                current = (statement_id, target.source.texts(statement_id))
            prompts = current[1] if statement_id in statements else {}
            for offset in range(count):
                prompt = prompts.get(first + offset)
                at = (position + offset) * PROMPT_DIGEST_SIZE
                if prompt is not None and prompt_digest(prompt) != digests[at : at + PROMPT_DIGEST_SIZE]:
                    raise _changed(
                        target, statement_id, first + offset, f"the one in {job.request_file} (a job not collected yet)"
                    )
            position += count


def _changed(target: JudgeTarget, statement_id: str, index: int, sent: str) -> RunStateError:
    return RunStateError(
        f"{target.run_dir}: the judge prompt for statement {statement_id!r}, answer {index} differs from {sent} "
        "(the spec or the candidate's answers changed since); use another output_dir_base to judge again"
    )


def write_manifest(
    target: JudgeTarget, kind: str, settings: JudgeSettings, spec_name: str, spec_sha256: str, provider: str
) -> RunManifest:
    """Create or update the target's `run.json` (before anything is submitted)."""
    if (target.run_dir / MANIFEST_NAME).is_file():
        manifest = RunManifest.resumed(target.run_dir, settings.engine.recorded())
        if settings.vertex:
            manifest.parameters["vertex"] = dict(settings.vertex)
        manifest.parameters.update(_endpoint(settings))
    else:
        if target.salt_home is not None:
            save_judge_salt(target.salt_home, target.salt)
        manifest = RunManifest(
            kind=kind,
            command=current_command(),
            spec_name=spec_name,
            spec_path=str(Path(settings.spec_path).resolve()),
            spec_sha256=spec_sha256,
            inputs_path=target.inputs_path,
            inputs_sha256="",  # set below, once for both branches
            model_name=settings.judge_model,
            provider=provider,
            offline=settings.offline,
            parameters={
                "identity": target.identity,
                "params": asdict(settings.params),
                "sent": settings_as_sent(provider, settings.params),
                "engine": settings.engine.recorded(),
                **({"vertex": dict(settings.vertex)} if settings.vertex else {}),
                **_endpoint(settings),
                "requests": target.request_count,
                "prompt_salt": target.salt,
            },
            versions=software_versions(),
            git_commit=git_commit(),
        )
    # Not identity (a resume compares that): what the run directory alone says of its place and name.
    if settings.placement is not None:
        manifest.parameters["experiment"] = dict(settings.placement)
    if settings.judge_name is not None:
        manifest.parameters["judge_name"] = settings.judge_name
    save_sources(target.run_dir, target.statement_sources(spec_sha256))  # before anything of this session is sent
    manifest.inputs_sha256 = target.inputs_sha256(spec_sha256)
    manifest.parameters["inputs_hash"] = INPUTS_HASH
    manifest.parameters["requests"] = target.request_count
    manifest.save(target.run_dir)
    return manifest


def run_targets(
    model: AnyModel,
    targets: Sequence[JudgeTarget],
    manifests: Sequence[RunManifest],
    options: EngineOptions,
    observer_for: Callable[[JudgeTarget], EngineObserver | None] | None = None,
) -> list[EngineSummary]:
    """Drive one engine per target in a single polling loop; updates each manifest's status and totals."""
    try:
        summaries = run_engines(target_engines(model, targets, options, observer_for))
    except BaseException:
        mark_stopped(targets, manifests)
        raise
    record_targets(targets, manifests, summaries)
    return summaries


def target_engines(
    model: AnyModel,
    targets: Sequence[JudgeTarget],
    options: EngineOptions,
    observer_for: Callable[[JudgeTarget], EngineObserver | None] | None = None,
) -> list[tuple[BatchEngine | RealtimeEngine | FlexThenBatchEngine, ItemSource | list[PromptItem]]]:
    """One engine per target, paired with its requests (for `run_engines`, or an experiment's `EngineLoop`).

    The engine follows the judge: batch jobs for a batch API, calls (or Ray datasets) for a realtime or `ray`
    judge. Every engine reads the target's requests one statement at a time from its source (never every prompt of
    the run at once) and keeps its state in the target's directory.
    """
    engines: list[tuple[BatchEngine | RealtimeEngine | FlexThenBatchEngine, ItemSource | list[PromptItem]]] = []
    for target in targets:
        engine = make_engine(model, target.store, options, observer_for(target) if observer_for else None)
        engines.append((engine, target.source))
    return engines


def record_targets(
    targets: Sequence[JudgeTarget], manifests: Sequence[RunManifest], summaries: Sequence[EngineSummary]
) -> None:
    """Write each target's final engine summary and status into its `run.json`."""
    for target, manifest, summary in zip(targets, manifests, summaries, strict=True):
        manifest.status = "finished" if summary.finished else "stopped"
        manifest.totals = summary
        manifest.save(target.run_dir)


def mark_stopped(targets: Sequence[JudgeTarget], manifests: Sequence[RunManifest]) -> None:
    """Mark every target's `run.json` as stopped (the loop was interrupted; its state on disk is resumable)."""
    for target, manifest in zip(targets, manifests, strict=True):
        manifest.status = "stopped"
        manifest.save(target.run_dir)


def plan_targets(
    model: BatchedModel, targets: Sequence[JudgeTarget], manifests: Sequence[RunManifest], options: EngineOptions
) -> list[list[SubmissionIntent]]:
    """Dry run: write every target's request files and intents, submit nothing (a later run submits exactly these)."""
    planned = []
    for target, manifest in zip(targets, manifests, strict=True):
        planned.append(BatchEngine(model, target.store, options).plan(target.source))
        manifest.status = "planned"
        manifest.save(target.run_dir)
    return planned

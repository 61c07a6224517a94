"""Finding run directories, their engine state, and earlier runs of the same work.

A run directory is any folder with a `run.json` (generation and judge runs alike). This module reads files only:
the report reads runs through it, so it imports no provider, transport or emulator (`tests/unit/test_layers.py`
holds that). Reconnecting a run to its provider is `speceval.operations.reopen`'s.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from speceval.batch.journal import JOURNAL_NAME, Journal
from speceval.batch.manifest import MANIFEST_NAME, RAY_KEY, REALTIME_KEY, RunManifest
from speceval.batch.records import BatchRecord, Outcome
from speceval.batch.store import RunStore
from speceval.errors import InputError
from speceval.judging.files import JUDGE_RESPONSES

logger = logging.getLogger(__name__)

# Where each kind of run keeps the engine's per-request records (judge runs keep verdicts in results/).
# inputs: speceval.inputgen's rounds; generation_round: a conversation run's rounds.
_RESULTS_SUBDIR = {"generation": "results", "inputs": "responses", "generation_round": "results"}


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every run directory at or below `paths`, sorted; an InputError for a path that does not exist."""
    found: set[Path] = set()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "no such file or directory")
        if (path / MANIFEST_NAME).is_file():
            found.add(path)
        # Runs nest (an experiment holds many); an emulator's own state is never a run.
        found.update(p.parent for p in path.rglob(MANIFEST_NAME) if ".emulator" not in p.parts)
    return sorted(found)


def store_for(run_dir: Path, manifest: RunManifest) -> RunStore:
    """The engine state of a run, with the results folder its kind uses."""
    if manifest.kind in _RESULTS_SUBDIR:
        return RunStore(run_dir, results_subdir=_RESULTS_SUBDIR[manifest.kind])
    return RunStore(run_dir, results_subdir=JUDGE_RESPONSES, prompts_once=True)  # as JudgeTarget.store


def finished_jobs(folder: Path) -> list[BatchRecord]:
    """The finished batch jobs of every run at or below `folder` (a conversation run's rounds too; none where the
    folder does not exist yet): what batches took here, which `tier: auto` learns the turnaround from."""
    runs = find_run_dirs([folder]) if folder.is_dir() else []
    return [r for d in runs for r in store_for(d, RunManifest.load(d)).load_records() if r.ended_at is not None]


def realtime_call_seconds(folder: Path, most: int = 5_000) -> dict[str, dict[str, list[float]]]:
    """Per service tier (`flex`, `standard`) and model (its run.json's `model_name`; a run.json that is not a run
    manifest is an InputError naming it, as in `finished_jobs`), the seconds each answered realtime call at or
    below `folder` took (from the runs' journals, at most `most` calls a run): what flex and standard calls of each
    model took here, which `tier: auto` learns."""
    taken: dict[str, dict[str, list[float]]] = {}
    for run_dir in find_run_dirs([folder]) if folder.is_dir() else []:
        if not (run_dir / JOURNAL_NAME).is_file():
            continue
        model = RunManifest.load(run_dir).model_name
        for entry in itertools.islice(Journal(run_dir).read(), most):
            record = entry.record
            if record.seconds is not None and record.outcome is Outcome.SUCCEEDED:
                # The provider's own name for its full-price tier (`default`, `standard`, ...) is standard here.
                tier = "flex" if record.service_tier == "flex" else "standard"
                taken.setdefault(tier, {}).setdefault(model, []).append(record.seconds)
    return taken


class RunIdentity(BaseModel):
    """What makes two generation runs the same work: the same requests, sent to the same model, the same way.

    Two runs with equal identities produce interchangeable results, so running the second pays for nothing new.
    Engine settings (batch size, polling, timeout, attempts, budget) and realtime pace do not change what is sent
    and are not part of it; the temperature, the token limit, the endpoint and offline-versus-real are.

    Attributes:
        spec_sha256 / inputs_sha256: the content of the spec and of the inputs (not their paths).
        spec_name: the label of the spec, which downstream results carry.
        model_name / provider: who answers.
        params: the sampling parameters sent with every request.
        allow_unknown_statements: whether inputs files naming no statement were skipped.
        offline: synthetic answers from the emulator are never the same work as a provider's.
        realtime_base_url: None for a batch run; for a realtime run, its endpoint ("" for the SDK's default).
        ray_endpoint: for an `--org ray` run, what serves it (endpoint, or vLLM on the cluster and its engine
            arguments); None otherwise.
    """

    spec_sha256: str
    inputs_sha256: str
    spec_name: str
    model_name: str
    provider: str
    params: dict[str, Any]
    allow_unknown_statements: bool
    offline: bool
    realtime_base_url: str | None
    ray_endpoint: dict[str, Any] | None

    @classmethod
    def of(cls, manifest: RunManifest) -> RunIdentity:
        """The identity of the generation run a manifest describes (a draft one, before a run starts, too)."""
        realtime = manifest.parameters.get(REALTIME_KEY)
        ray = manifest.parameters.get(RAY_KEY)
        return cls(
            spec_sha256=manifest.spec_sha256,
            inputs_sha256=manifest.inputs_sha256,
            spec_name=manifest.spec_name,
            model_name=manifest.model_name,
            provider=manifest.provider,
            params=dict(manifest.parameters.get("params", {})),
            allow_unknown_statements=bool(manifest.parameters.get("allow_unknown_statements", False)),
            offline=manifest.offline,
            realtime_base_url=None if realtime is None else (realtime.get("base_url") or ""),
            ray_endpoint=None if ray is None else {key: ray.get(key) for key in ("base_url", "vllm", "engine_args")},
        )


def _tier_free(identity: RunIdentity, any_provider_tier: bool) -> RunIdentity:
    """`identity`, its provider tier left out where `any_provider_tier`: the provider's realtime endpoint ("") and
    its Batch API (None) alike. `--tier auto` sends the command where the plan says, and the plan learns from the
    folder's finished jobs: keyed by the tier, the same command planned again after a faster batch turnaround was
    learned found no identical run and paid again. Another endpoint (a base URL of its own) stays other work."""
    if any_provider_tier and identity.realtime_base_url == "":
        return identity.model_copy(update={"realtime_base_url": None})
    return identity


@dataclass
class IdenticalRuns:
    """Earlier runs of the same work, newest first: those that finished and those that did not."""

    finished: list[Path]
    unfinished: list[Path]


def find_identical_runs(folder: Path, draft: RunManifest, any_provider_tier: bool = False) -> IdenticalRuns:
    """Generation runs directly under `folder` (one per subfolder) that do the same work as `draft`.

    A run counts as finished only when its manifest says so; a run that stopped, failed, was only planned
    (`--dry-run`) or is still marked running is unfinished, and resuming it submits nothing twice. A run folder
    whose `run.json` cannot be read is skipped with a warning, never guessed at. `any_provider_tier` (`--tier
    auto`): a run at any of the provider's own tiers (its Batch API or its realtime endpoint) is the same work, as
    the plan's choice between them is no part of what the command asks for (`_tier_free`).
    """
    wanted = _tier_free(RunIdentity.of(draft), any_provider_tier)
    same: list[tuple[RunManifest, Path]] = []
    for manifest_path in sorted(folder.glob(f"*/{MANIFEST_NAME}")) if folder.is_dir() else []:
        run_dir = manifest_path.parent
        try:
            manifest = RunManifest.load(run_dir)
            if manifest.kind == "generation" and _tier_free(RunIdentity.of(manifest), any_provider_tier) == wanted:
                same.append((manifest, run_dir))
        except (InputError, ValidationError) as exc:
            logger.warning("not comparing with %s: %s", run_dir, exc)
    same.sort(key=lambda item: item[0].created_at, reverse=True)
    return IdenticalRuns(
        finished=[run_dir for manifest, run_dir in same if manifest.status == "finished"],
        unfinished=[run_dir for manifest, run_dir in same if manifest.status != "finished"],
    )

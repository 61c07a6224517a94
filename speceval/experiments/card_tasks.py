"""The judge card's tasks (issue 44), beside the experiment's own (`speceval.experiments.stages` adds them):

* per spec, with `paraphrases: K`: the statements reworded K ways, once, by the paraphraser through the batch
  engine (a generation run under `_judge_card/<spec>/paraphrase_run/`), or read from the user's file; then one
  spec file per wording;
* per judging task (spec × variation × run × judge × candidate), after it: a seeded share `retest` of the answers it
  judged, re-sent unchanged (the same template and prompt salt, so the same bytes), and judged again under each
  wording.

Every request goes through the experiment's engine options (its budget, polling and resume), into folders of their
own (layout: `speceval.judging.card_files`), so a rerun continues them as it continues any judge run.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from speceval.atomic import atomic_write_bytes
from speceval.batch.progress import EngineSummary
from speceval.batch.store import RunStore
from speceval.engines.factory import make_engine
from speceval.experiments.config import ExperimentConfig, JudgeEntry, ModelEntry, SpecEntry
from speceval.experiments.context import StageContext
from speceval.experiments.grid import GenerationRun, Group
from speceval.experiments.scheduler import EngineRuns, StageTask
from speceval.inputs import load_inputs
from speceval.judging.card_files import (
    CARD_DIR,
    CARD_FILE,
    PARAPHRASES_FILE,
    RETEST,
    SAMPLE,
    CardSample,
    Paraphrases,
    read_user_paraphrases,
    wording_folder,
)
from speceval.paths import safe_filename, safe_path
from speceval.pipelines.candidates import Candidate, load_answers, resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.pipelines.judge_run import (
    JudgeSettings,
    judge_dir,
    mark_stopped,
    record_targets,
    target_engines,
    write_manifest,
)
from speceval.pipelines.judge_setup import SALT_FILE
from speceval.spec import load_spec
from speceval.wire.params import GenerationParams

logger = logging.getLogger(__name__)

PARAPHRASE_TEMPERATURE = 0.7
"""The paraphraser samples: each of a statement's K prompts also asks for a different wording."""

PARAPHRASE_PROMPT = (
    "Reword the following rule so that its meaning stays exactly the same but its words differ (wording {k} of "
    "{count}: make it unlike the other wordings). Answer with the reworded rule only, no preamble.\n\nRule:\n{text}"
)

SettingsFor = Callable[[Group, JudgeEntry], JudgeSettings]


def card_root(ctx: StageContext, spec: SpecEntry) -> Path:
    """`_judge_card/<spec>/` of the experiment."""
    return ctx.output_dir / CARD_DIR / safe_filename(spec.name)


def card_tasks(
    ctx: StageContext, groups: list[Group], judged: dict[tuple[int, int, str], str], settings_for: SettingsFor
) -> list[StageTask]:
    """The card's tasks; `judged` maps (group index, judge index, candidate model) to the key of the compliance task
    whose verdicts are re-sent."""
    card = ctx.config.judge_card
    if card is None or not card.retest:
        return []
    tasks, worded = [], {}
    if card.paraphrases:
        for spec in {group.spec.name: group.spec for group in groups}.values():
            worded[spec.name] = f"judge_card {spec.name} paraphrases"
            tasks.append(_paraphrases(ctx, worded[spec.name], spec))
    for (g, j, model), needed in judged.items():
        group, judge = groups[g], ctx.config.judges[j]
        run = next(r for r in group.runs if r.candidate.model == model)
        key = f"judge_card {group.label} judge={ctx.config.judge_label(judge)} {model}"
        needs = (needed, *((worded[group.spec.name],) if group.spec.name in worded else ()))
        tasks.append(_retest(ctx, key, group, judge, run, needs, settings_for))
    return tasks


def _statements(ctx: StageContext, spec: SpecEntry) -> list[str]:
    loaded = load_spec(ctx.resolve(spec.spec_path))
    return [s.statement_id for s in load_inputs(ctx.inputs_dir(spec), loaded).statements]


def _paraphrases(ctx: StageContext, key: str, spec: SpecEntry) -> StageTask:
    card = ctx.config.judge_card
    assert card is not None
    root = card_root(ctx, spec)
    held: dict[str, Any] = {}
    paraphraser = ModelEntry(
        model=card.paraphraser or ctx.config.judges[0].model,
        org=card.paraphraser_org if card.paraphraser else ctx.config.judges[0].org,
    )

    def start() -> EngineRuns:
        statements = _statements(ctx, spec)
        if card.paraphrases_file is not None:
            path = ctx.resolve(card.paraphrases_file)
            wordings = read_user_paraphrases(path, statements, card.paraphrases, user_statements(ctx.config, ctx.base))
            _write_wordings(ctx, spec, Paraphrases(spec=spec.name, source=f"file {path}", wordings=wordings))
            return []
        if (root / PARAPHRASES_FILE).is_file():
            return []  # written by an earlier run: the same wordings judge every retest
        loaded = load_spec(ctx.resolve(spec.spec_path))
        inputs = root / "paraphrase_inputs"
        for statement in statements:
            prompts = [
                PARAPHRASE_PROMPT.format(k=k, count=card.paraphrases, text=loaded[statement].text)
                for k in range(1, card.paraphrases + 1)
            ]
            body = json.dumps({"inputs": prompts}, ensure_ascii=False, indent=2) + "\n"
            atomic_write_bytes(safe_path(inputs, statement, ".json"), body.encode("utf-8"))
        params = GenerationParams(temperature=PARAPHRASE_TEMPERATURE, max_tokens=ctx.config.engine.max_tokens)
        config = GenerationConfig(
            spec_path=ctx.resolve(spec.spec_path),
            inputs_dir=inputs,
            model_name=paraphraser.model,
            spec_name=spec.name,
            org=paraphraser.org,
            params=params,
            engine=ctx.engine_options(),
            offline=ctx.offline,
        )
        pipeline = held["pipeline"] = BatchedGenerationPipeline(config, run_dir=root / "paraphrase_run")
        pipeline.write_manifest()
        engine = make_engine(ctx.model(paraphraser, params), RunStore(root / "paraphrase_run"), config.engine)
        return [(engine, pipeline.inputs.items)]

    def finish(summaries: list[EngineSummary]) -> None:
        if "pipeline" not in held:
            return
        held["pipeline"].record(summaries[0])
        wordings: dict[str, list[str]] = {}
        for statement in _statements(ctx, spec):
            path = safe_path(root / "paraphrase_run" / "results", statement, ".json")
            records = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
            texts = [r.get("output_text") for r in sorted(records, key=lambda r: r["original_index"])]
            if len(texts) == card.paraphrases and all(isinstance(t, str) and t.strip() for t in texts):
                wordings[statement] = [str(t).strip() for t in texts]
            else:
                logger.warning(
                    "judge card: the paraphraser gave statement %s fewer than %d usable rewordings; its answers "
                    "are re-tested but not re-judged under other wordings",
                    statement,
                    card.paraphrases,
                )
        source = f"model {paraphraser.model} (temperature {PARAPHRASE_TEMPERATURE}, batch engine)"
        _write_wordings(ctx, spec, Paraphrases(spec=spec.name, source=source, wordings=wordings))

    def abort() -> None:
        if "pipeline" in held:
            manifest = held["pipeline"].write_manifest()
            manifest.status = "stopped"
            manifest.save(root / "paraphrase_run")

    return StageTask(key, "judge_card", (), start, finish, abort)


def _write_wordings(ctx: StageContext, spec: SpecEntry, found: Paraphrases) -> None:
    """`paraphrases.json` and one spec file per wording: each statement's text replaced by its k-th rewording (a
    statement without rewordings is left out of the worded specs)."""
    root = card_root(ctx, spec)
    found.save(root)
    lines = ctx.resolve(spec.spec_path).read_text(encoding="utf-8").splitlines()
    count = max((len(texts) for texts in found.wordings.values()), default=0)
    for k in range(1, count + 1):
        worded = []
        for line in lines:
            if not line.strip():
                continue
            statement = json.loads(line)
            if statement.get("id") in found.wordings:
                statement["text"] = found.wordings[statement["id"]][k - 1]
                worded.append(json.dumps(statement, ensure_ascii=False) + "\n")
        atomic_write_bytes(root / f"{wording_folder(k)}.jsonl", "".join(worded).encode("utf-8"))


def _retest(
    ctx: StageContext,
    key: str,
    group: Group,
    judge: JudgeEntry,
    run: GenerationRun,
    needs: tuple[str, ...],
    settings_for: SettingsFor,
) -> StageTask:
    card = ctx.config.judge_card
    assert card is not None
    held: dict[str, Any] = {}

    def start() -> EngineRuns:
        settings = settings_for(group, judge)
        [candidate] = resolve_candidates([run.run_dir])
        first = judge_dir(settings.output_dir_base, group.spec.name, settings.judge_label)
        folder = (
            card_root(ctx, group.spec)
            / group.folder
            / f"run{group.repeat}"
            / safe_filename(settings.judge_label)
            / safe_filename(candidate.path_name)
        )
        sample = _sample(ctx, group, settings, candidate, first, folder)
        drawn = Candidate(
            name=candidate.name,
            directory=folder / SAMPLE,
            results_dir=folder / SAMPLE / "results",
            offline=candidate.offline,
        )
        pipelines = []
        worded = card_root(ctx, group.spec)
        for name, spec_path in [(RETEST, settings.spec_path)] + [
            (wording_folder(k), worded / f"{wording_folder(k)}.jsonl") for k in range(1, sample.wordings + 1)
        ]:
            again = replace(settings, output_dir_base=folder / name, spec_path=spec_path)
            _share_salt(first, judge_dir(again.output_dir_base, group.spec.name, again.judge_label))
            pipelines.append(
                BatchedComplianceJudge(
                    again, [drawn], judge.mode, canaries=False, categories=judge.categories, scope=judge.scope
                )
            )
        held["pipelines"] = pipelines
        held["manifests"] = [
            [write_manifest(t, "compliance", p.settings, p.spec_name, p.spec.sha256, p.provider) for t in p.targets]
            for p in pipelines
        ]
        model = ctx.judge_model(judge)
        return [pair for p in pipelines for pair in target_engines(model, p.targets, p.settings.engine)]

    def finish(summaries: list[EngineSummary]) -> None:
        at = 0
        for pipeline, manifests in zip(held["pipelines"], held["manifests"], strict=True):
            record_targets(pipeline.targets, manifests, summaries[at : at + len(pipeline.targets)])
            at += len(pipeline.targets)
            pipeline.write_verdicts()

    def abort() -> None:
        for pipeline, manifests in zip(held.get("pipelines", []), held.get("manifests", []), strict=True):
            mark_stopped(pipeline.targets, manifests)

    return StageTask(key, "judge_card", needs, start, finish, abort)


def _share_salt(first: Path, again: Path) -> None:
    """The re-sent requests carry the first judging's prompt salt (its fence nonces), so their bytes are the same."""
    if (first / SALT_FILE).is_file() and not (again / SALT_FILE).is_file():
        again.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(first / SALT_FILE, again / SALT_FILE)


def _sample(
    ctx: StageContext, group: Group, settings: JudgeSettings, candidate: Candidate, first: Path, folder: Path
) -> CardSample:
    """The answers drawn (the recorded draw when the folder has one: a rerun re-sends the same requests)."""
    card = ctx.config.judge_card
    assert card is not None
    if (folder / CARD_FILE).is_file():
        return CardSample.model_validate_json((folder / CARD_FILE).read_bytes())
    answers = load_answers(candidate, load_spec(settings.spec_path))
    every = [(s, a.original_index) for s in answers.statement_ids for a in answers.read(s)]
    rng = random.Random(
        f"{card.seed}|{group.spec.name}|{group.label}|{group.repeat}|{settings.judge_label}|{candidate.name}"
    )
    count = min(len(every), max(1, round(card.retest * len(every)))) if every else 0
    drawn: dict[str, list[int]] = {}
    for statement, index in sorted(rng.sample(every, count)):
        drawn.setdefault(statement, []).append(index)
    for statement, indices in drawn.items():  # the drawn answers' records, unchanged, as a candidate folder
        source = candidate.results_file(statement)
        records = [r for r in json.loads(source.read_text(encoding="utf-8")) if r.get("original_index") in indices]
        body = json.dumps(records, ensure_ascii=False, indent=2) + "\n"
        atomic_write_bytes(safe_path(folder / SAMPLE / "results", statement, ".json"), body.encode("utf-8"))
    worded = card_root(ctx, group.spec) / PARAPHRASES_FILE
    wordings = 0
    if card.paraphrases and worded.is_file():
        wordings = max(
            (len(t) for t in Paraphrases.model_validate_json(worded.read_bytes()).wordings.values()), default=0
        )
    sample = CardSample(
        spec=group.spec.name,
        judge=settings.judge_label,
        candidate=candidate.name,
        variation=group.label,
        run=group.repeat,
        verdicts_dir=os.path.relpath(first / safe_filename(candidate.path_name), folder),
        share=card.retest,
        seed=card.seed,
        drawn=drawn,
        wordings=wordings,
        temperature=settings.params.temperature or 0.0,
    )
    sample.save(folder)
    return sample


def user_statements(config: ExperimentConfig, base: Path) -> set[str]:
    """Every statement id of the experiment's specs (a user's rewordings file may serve them all)."""
    return {
        statement.id
        for spec in config.specs
        for statement in load_spec(spec.spec_path if spec.spec_path.is_absolute() else base / spec.spec_path).statements
    }


def check_user_paraphrases(config: ExperimentConfig, base: Path) -> None:
    """The user's rewordings file read before anything is paid for: every statement with pre-generated inputs needs
    its K wordings (a spec whose inputs are generated is checked when they are)."""
    card = config.judge_card
    if card is None or card.paraphrases_file is None or not card.retest:
        return
    path = card.paraphrases_file if card.paraphrases_file.is_absolute() else base / card.paraphrases_file
    known = user_statements(config, base)
    for spec in config.specs:
        if spec.inputs_dir is None:
            continue
        loaded = load_spec(spec.spec_path if spec.spec_path.is_absolute() else base / spec.spec_path)
        inputs = spec.inputs_dir if spec.inputs_dir.is_absolute() else base / spec.inputs_dir
        statements = [s.statement_id for s in load_inputs(inputs, loaded).statements]
        read_user_paraphrases(path, statements, card.paraphrases, known)

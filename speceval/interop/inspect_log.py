"""`speceval export --format inspect`: compliance verdicts as Inspect AI eval logs, one per (spec, candidate,
variation, run), which `inspect_ai.log.read_eval_log`, `inspect log dump|convert` and Inspect View read. A log
of more than `--max-samples-per-log` samples is written as parts (`inspect_parts`), each a log file of its own whose
metadata names the part (`part`: number, of, log) and carries the whole log's rates.

The mapping (docs/inspect.md shows it as a table):

- a log: `eval.task` `speceval/<spec>`, `eval.model` the candidate, `eval.model_roles` one `grader` role per judge
  (`grader`, or `grader_1`, `grader_2`, ... in judge name order), `eval.model_generate_config` the settings the
  candidate's run sent (all of them in `eval.metadata["speceval"]["candidate_sent"]`); the spec, variation and its
  settings, run, judges, the synthetic flag, and each judge's (and the panel's) rate with the report's interval and
  its method in `eval.metadata["speceval"]` (Inspect's own metrics give a standard error only);
- a sample per answer: id `<statement_id>_<original_index>`, `metadata.statement_id`, `input` the input text,
  `messages` the whole conversation (or the input and the answer), `output` the (last) answer, `target` the
  statement's text;
- a score per judge, named by the judge: binary `"C"`/`"I"`, Likert the rating 1-5, categorical the category; the
  explanation as Inspect's explanation, confidence, raw answer, prompt version and outcome in the score's metadata.
  A verdict that is not `judged` (unparsed, failed, missing) is `Score.unscored(reason="grader_failed")` with its
  outcome and reason in metadata: Inspect's metrics leave it out, as speceval's rates do;
- with several judges, one more score `panel`: the share of the judges that found the answer compliant (the mean
  rating for Likert), on answers every judge judged, as the report's panel; others unscored (`panel_incomplete`);
- a per-turn judge's verdicts (`scope: turn`): a sample per turn, id `<statement_id>_<original_index>_turn<k>`,
  `metadata.turn` k, messages up to that turn's answer, output that answer;
- usage: `model_usage[candidate]` from the generation record (on the answer's sample, or its first turn's) and
  `model_usage[judge]` / `role_usage[<role>]` from the judge's request; `input_tokens` counts cached tokens too.

Rankings have no home in Inspect's schema and are left out (counted).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.reading.streamed import survey
from speceval.analysis.rendering.markdown.summary import interval_methods
from speceval.analysis.tables.panel import PANEL
from speceval.atomic import atomic_write_bytes
from speceval.errors import ConfigError, InputError
from speceval.interop.inspect_parts import MAX_SAMPLES_PER_LOG, LogPlan, PartOf, plan_log
from speceval.interop.inspect_scores import SampleKey, judge_score, metrics, panel_scores, sample_key
from speceval.interop.run_facts import JudgeRun, RunFacts
from speceval.paths import readable_names, safe_filename
from speceval.pipelines.inspect_logs import require_inspect
from speceval.wire.usage import Usage

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage, GenerateConfig, ModelUsage
    from inspect_ai.scorer import Score

SCHEMA = "speceval-inspect/1"
"""`eval.metadata["speceval"]["schema"]`: the version of this mapping."""

_LogKey = tuple[str, str, str, int]  # spec, candidate, variation, run


@dataclass
class _Answer:
    """Everything one sample of a log is made of: the verdicts on one answer (or one turn of it)."""

    rows: list[tuple[ComplianceRow, Path]] = field(default_factory=list)
    scores: dict[str, Score] = field(default_factory=dict)


@dataclass(frozen=True)
class InspectExport:
    """What `export_inspect` wrote."""

    logs: list[Path]
    samples: int
    ranking_files_left_out: int


def export_inspect(
    paths: Sequence[Path], out: Path, log_format: str = "eval", max_samples: int = MAX_SAMPLES_PER_LOG
) -> InspectExport:
    """Write each (spec, candidate, variation, run) as Inspect eval logs (`.eval` or `.json`) under `out`: one
    log, or parts of at most `max_samples` samples each (`inspect_parts`), one at a time. A survey tells which
    results files hold each log's verdicts; one pass over them gives the whole log's rates and its parts, and a
    part reads only the files of its statements."""
    require_inspect()
    if max_samples < 1:
        raise ConfigError(f"--max-samples-per-log {max_samples}: give at least 1")
    plan = survey(paths)
    if not plan.compliance_files:
        raise InputError(
            paths[0],
            "no compliance results found here (expected results/*.json files of a judge "
            "run); nothing to export as Inspect logs",
        )
    logs: dict[_LogKey, dict[Path, ComplianceRow]] = defaultdict(dict)
    for file, first in plan.firsts:
        logs[(first.spec, first.model, plan.variation(first), first.run)][file] = first
    folders = readable_names(sorted({key[2] for key in logs}))
    written, samples = [], 0
    for key in sorted(logs):
        whole = plan_log(logs[key], max_samples)
        spec, candidate, variation, run = key
        name = "_".join(
            (safe_filename(spec), safe_filename(candidate.replace("/", "-")), folders[variation], f"run{run}")
        )
        for number, part in enumerate(whole.parts, start=1):
            verdicts = [
                (row if row.variation == variation else row.model_copy(update={"variation": variation}), file)
                for row, file in whole.part_verdicts(part)
            ]
            of = PartOf(number=number, parts=len(whole.parts), log=name)
            built = _log(key, verdicts, plan.settings.get(variation, {}), whole, of)
            del verdicts
            samples += built.count
            # Inspect lists a .json log only when its name starts with a time stamp (as its own logs' names do).
            created = datetime.fromisoformat(built.log.eval.created).astimezone(UTC)
            stamp = created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
            suffix = f"_part{number}of{len(whole.parts)}" if len(whole.parts) > 1 else ""
            written.append(_write(built, out / f"{stamp}_{name}{suffix}.{log_format}"))
    return InspectExport(logs=written, samples=samples, ranking_files_left_out=plan.ranking_files)


FLUSH_EVERY = 500
"""Samples the `.eval` writer buffers before it writes them into the zip (see `_write_eval`)."""


@dataclass
class _Built:
    """A log to write: its header (`log`: the eval spec; results and stats are filled once its samples are made)
    and its samples, made one at a time as they are written (a log of a million answers is never held whole)."""

    log: EvalLog
    samples: Iterator[EvalSample]
    count: int


def _write(built: _Built, path: Path) -> Path:
    """inspect_ai writes the file (its format, its zip layout) beside `path`; it is then moved into place
    atomically. A `.json` log is one document, so its samples are made first."""
    from inspect_ai.log import write_eval_log

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".inspect-") as scratch:
        staged = Path(scratch) / path.name
        if path.suffix == ".eval":
            asyncio.run(_write_eval(built, staged))
        else:
            built.log.samples = list(built.samples)
            _finish(built.log, built.log.samples)
            write_eval_log(built.log, str(staged))
        atomic_write_bytes(path, staged.read_bytes())
    return path


async def _write_eval(built: _Built, path: Path) -> None:
    """The `.eval` file, written through inspect_ai's own recorder (a private module, hence the pinned range) as
    the samples are made, flushed every `FLUSH_EVERY` samples as Inspect's eval loop does (`write_eval_log`
    buffers every sample and scans the buffer for each new one: 30 s for 3,000 samples, inspect_ai 0.3.285). Only
    each sample's score values are kept, for the header's metrics."""
    from inspect_ai.log._condense import condense_sample
    from inspect_ai.log._recorders.eval import EvalRecorder

    log = built.log
    recorder = EvalRecorder(str(path.parent))
    await recorder.log_init(log.eval, str(path), clean=True)
    await recorder.log_start(log.eval, log.plan)
    kept = []
    for number, sample in enumerate(built.samples, start=1):
        await recorder.log_sample(log.eval, condense_sample(sample))
        kept.append(_scores_only(sample))
        if number % FLUSH_EVERY == 0:
            await recorder.flush(log.eval)
    _finish(log, kept)
    await recorder.log_finish(log.eval, log.status, log.stats, log.results, log.reductions, log.error)


def _scores_only(sample: EvalSample) -> EvalSample:
    """What Inspect's metrics read of a sample: its id, its scores' values and its usage."""
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score

    return EvalSample(
        id=sample.id,
        epoch=sample.epoch,
        input="",
        target="",
        model_usage=sample.model_usage,
        scores={name: Score(value=score.value) for name, score in (sample.scores or {}).items()},
    )


def _finish(log: EvalLog, samples: list[EvalSample]) -> None:
    """The header's results (Inspect's metrics over the samples' scores) and usage totals."""
    from inspect_ai.log import EvalLog, EvalStats, recompute_metrics

    scored = EvalLog(eval=log.eval, status=log.status, samples=samples)
    recompute_metrics(scored)
    log.results = scored.results
    log.stats = EvalStats(model_usage=_totals(samples))


def _log(
    key: _LogKey, verdicts: list[tuple[ComplianceRow, Path]], settings: dict[str, Any], whole: LogPlan, of: PartOf
) -> _Built:
    """One part's header and samples; the judges, their runs, the rates and the synthetic flag are the whole
    log's (`whole`), so every part of a log says the same of it."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec
    from inspect_ai.log._log import EvalMetricDefinition, EvalScorer  # not re-exported by inspect_ai.log
    from inspect_ai.model import ModelConfig

    spec, candidate, variation, run = key
    facts = RunFacts()  # a part's own: it caches the generation records the part's samples read
    judges = whole.judges
    roles = {judge: "grader" if len(judges) == 1 else f"grader_{n}" for n, judge in enumerate(judges, start=1)}
    answers: dict[SampleKey, _Answer] = defaultdict(_Answer)
    for row, file in verdicts:
        answer = answers[sample_key(row)]
        answer.rows.append((row, file))
        answer.scores[row.judge] = judge_score(row)
    if len(judges) > 1:
        panel = panel_scores([row for row, _ in verdicts])  # each answer's panel: its judges are all in the part
        for key_of_sample, score in panel.items():
            answers[key_of_sample].scores[PANEL] = score
    runs = {judge: facts.judge_run(folder) for judge, folder in whole.judge_folders().items()}
    first = runs[judges[0]]
    sent = facts.candidate_sent(first.candidate_run)
    ordered = sorted(answers.items(), key=_order)
    ids = [sample_id(*k) for k, _ in ordered]
    samples = (_sample(k, a, candidate, roles, facts, runs) for k, a in ordered)
    synthetic = whole.synthetic()
    modes = whole.modes()
    scorers = [
        EvalScorer(name=judge, metrics=[EvalMetricDefinition(name=f"inspect_ai/{m}") for m in metrics(modes[judge])])
        for judge in judges
    ]
    if len(judges) > 1:
        scorers.append(
            EvalScorer(
                name=PANEL,
                metrics=[EvalMetricDefinition(name="inspect_ai/mean"), EvalMetricDefinition(name="inspect_ai/stderr")],
            )
        )
    created = min((r.created for r in runs.values() if r.created), default=None)
    log = EvalLog(
        status="success",
        eval=EvalSpec(
            created=created or datetime.now(UTC).isoformat(),
            task=f"speceval/{spec}",
            task_id=f"speceval/{spec}",
            eval_id=_id("eval", key) if of.parts == 1 else _id("eval", (*key, of.number)),
            run_id=_id("run", key),
            task_version="+".join(whole.prompt_versions()),
            dataset=EvalDataset(name=spec, samples=len(ids), sample_ids=ids),
            model=candidate,
            model_generate_config=_generate_config(sent),
            model_roles={roles[j]: ModelConfig(model=j, config=_generate_config(runs[j].sent)) for j in judges},
            config=EvalConfig(epochs=1),
            packages={"speceval": version("speceval")},
            scorers=scorers,
            tags=["speceval", "synthetic" if synthetic else "provider"],
            metadata={
                "speceval": {
                    "schema": SCHEMA,
                    "spec": spec,
                    "candidate": candidate,
                    "variation": variation,
                    "variation_settings": settings,
                    "run": run,
                    "synthetic": synthetic,
                    "synthetic_note": "answers and verdicts come from the speceval emulator (offline), not from a model"
                    if synthetic
                    else None,
                    "judges": {roles[j]: j for j in judges},
                    "modes": modes,
                    "candidate_sent": sent,
                    "judge_sent": {j: runs[j].sent for j in judges},
                    "rates": whole.rates,
                    "rates_scope": "the whole log (every part), as the report's compliance.csv",
                    "interval_methods": interval_methods(),
                    "part": {"number": of.number, "of": of.parts, "log": of.log, "log_samples": whole.samples},
                }
            },
        ),
    )
    return _Built(log=log, samples=samples, count=len(ids))


def _id(kind: str, key: tuple[str | int, ...]) -> str:
    """A stable id of the log (Inspect View tells logs apart by it): the same verdicts export to the same ids."""
    return hashlib.sha256(json.dumps([kind, *key]).encode()).hexdigest()[:22]


def _order(item: tuple[SampleKey, _Answer]) -> tuple[str, int, int]:
    statement, index, turn = item[0]
    return statement, index, turn or 0


def _generate_config(sent: dict[str, Any]) -> GenerateConfig:
    """The settings a run sent, as Inspect's GenerateConfig: those it has a field for, with a value it accepts (a
    setting speceval recorded as not sent, e.g. `"not sent: ..."`, stays in the metadata only)."""
    from inspect_ai.model import GenerateConfig

    kept = {}
    for name, value in sent.items():
        if name in GenerateConfig.model_fields and value is not None:
            try:
                GenerateConfig.model_validate({name: value})
            except ValueError:
                continue
            kept[name] = value
    return GenerateConfig.model_validate(kept)


def sample_id(statement_id: str, original_index: int, turn: int | None = None) -> str:
    """A sample's id: `<statement_id>_<original_index>`, `_turn<k>` added for a per-turn verdict."""
    return f"{statement_id}_{original_index}" + (f"_turn{turn}" if turn is not None else "")


def _sample(
    key: SampleKey, answer: _Answer, candidate: str, roles: dict[str, str], facts: RunFacts, runs: dict[str, JudgeRun]
) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput

    statement_id, index, turn = key
    row, _ = answer.rows[0]
    run = runs[row.judge]
    record = facts.candidate_record(run.candidate_run, statement_id, index)
    conversation = record.get("conversation") if record is not None else None
    messages: list[ChatMessage]
    if isinstance(conversation, list) and conversation:
        messages = _messages(conversation, candidate, turn, len(record.get("turns") or []) if record else 0)
    else:
        messages = [ChatMessageUser(content=row.input), ChatMessageAssistant(content=row.output, model=candidate)]
    usage: dict[str, ModelUsage] = {}
    role_usage: dict[str, ModelUsage] = {}
    if record is not None and isinstance(record.get("usage"), dict) and (turn is None or turn == 1):
        usage[candidate] = _usage(Usage.model_validate(record["usage"]))
    for judged, file in answer.rows:
        if judged.turn is None:
            found = facts.judge_usage(file.parent.parent, statement_id, index)
            if found is not None:
                usage[judged.judge] = role_usage[roles[judged.judge]] = _usage(found)
    return EvalSample(
        id=sample_id(statement_id, index, turn),
        epoch=1,
        input=row.input,
        target=facts.statement_text(run.spec_path, statement_id) or "",
        messages=messages,
        output=ModelOutput.from_content(candidate, row.output),
        scores=answer.scores,
        metadata={
            "statement_id": statement_id,
            "original_index": index,
            "turn": turn,
            "statement_type": row.statement_type,
            "authority_level": row.authority_level,
            "synthetic": row.synthetic,
            "candidate_settings": row.candidate_settings,
            "sources": sorted({judged.source for judged, _ in answer.rows}),
        },
        model_usage=usage,
        role_usage=role_usage,
    )


def _messages(conversation: list[Any], candidate: str, turn: int | None, turns: int) -> list[ChatMessage]:
    """A recorded conversation as Inspect's messages; for a turn, up to that turn's answer (the candidate's answers
    are the last `turns` assistant messages: the ones before them were a fixed history)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    built: list[ChatMessage] = []
    assistant = sum(1 for m in conversation if isinstance(m, dict) and m.get("role") == "assistant")
    stop_after = assistant - turns + turn if turn is not None else None
    seen = 0
    for message in conversation:
        role, content = message.get("role"), str(message.get("content", ""))
        if role == "system":
            built.append(ChatMessageSystem(content=content))
        elif role == "assistant":
            seen += 1
            built.append(ChatMessageAssistant(content=content, model=candidate if seen > assistant - turns else None))
            if stop_after is not None and seen >= stop_after:
                break
        else:
            built.append(ChatMessageUser(content=content))
    return built


def _usage(usage: Usage) -> ModelUsage:
    from inspect_ai.model import ModelUsage

    return ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        input_tokens_cache_read=usage.cached_input_tokens or None,
        input_tokens_cache_write=usage.cache_write_tokens or None,
    )


def _totals(samples: list[EvalSample]) -> dict[str, ModelUsage]:
    from inspect_ai.model import ModelUsage

    totals: dict[str, ModelUsage] = {}
    for sample in samples:
        for model, usage in sample.model_usage.items():
            totals[model] = totals[model] + usage if model in totals else ModelUsage() + usage
    return totals

"""`speceval export --format inspect`: compliance verdicts as Inspect AI eval logs, one per (spec, candidate,
variation, run), which `inspect_ai.log.read_eval_log`, `inspect log dump|convert|list` and Inspect View read. A log
of more than `--max-samples-per-log` samples is written as parts (`inspect_parts`), each a log file of its own whose
metadata names the part (`part`: number, of, log) and carries the whole log's rates.

The mapping (docs/inspect.md shows it as a table):

- a log (each part): its own task, `eval.task` `speceval/<spec>_<candidate>_<variation>_run<k>` (`_part<i>of<n>`
  added for a part) and `eval.task_id` a hash of the same, so Inspect View lists every log (logs sharing a task id
  it takes for retries of one task and hides); the file is named as Inspect names its own,
  `<created>_<task>_<task id>` (`inspect_ai._util.log_layout.eval_log_name`), so `inspect log list` parses the
  task and task id back out of the name. `eval.model` the candidate, `eval.model_roles` one `grader` role per judge
  (`grader`, or `grader_1`, `grader_2`, ... in judge name order), `eval.model_generate_config` the settings the
  candidate's run sent (all of them in `eval.metadata["speceval"]["candidate_sent"]`); the spec, variation and its
  settings, run, judges, the synthetic flag, and each judge's (and each panel's) rate with the report's interval
  and its method in `eval.metadata["speceval"]` (Inspect's own metrics give a standard error only);
- a sample per answer (a conversation is one sample): `inspect_samples`;
- its scores (`inspect_scores`): one per judge, named by the judge, and for a per-turn judge one per judged turn,
  `<judge>_turn<k>`; binary `"C"`/`"I"`, Likert the rating 1-5, categorical the category, each with the answer it
  judged (View's answer column) and the judge's explanation. A verdict that is not `judged` has no score (every
  exported score is finite); its outcome is in the sample's `metadata.not_judged`;
- each judge's card (`inspect_card`): its canary (and, with labels, human) accuracy with the report's interval in
  `eval.metadata["speceval"]["judge_card"]` and as metrics beside its score, held to the study's card lines; a judge
  that fails them tagged `judge_card_failed:<judge>`, with a note;
- with two or more whole-answer judges on one scale, a panel score (`panel`): the share of the judges that found the
  answer compliant (the mean rating for Likert), on answers every judge judged, as the report's panel.

Rankings have no home in Inspect's schema and are left out (counted).
"""

from __future__ import annotations

import hashlib
import itertools
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
from speceval.analysis.reading.streamed import Survey, survey
from speceval.analysis.rendering.markdown.summary import interval_methods
from speceval.atomic import atomic_write_bytes
from speceval.defaults import Mode
from speceval.errors import ConfigError, InputError
from speceval.interop.inspect_card import CARD_TAG, ExportedCard, card_metrics, export_cards
from speceval.interop.inspect_parts import MAX_SAMPLES_PER_LOG, LogPlan, PartOf, plan_log
from speceval.interop.inspect_samples import Answer, Record, build_sample, sample_id, usage_totals
from speceval.interop.inspect_scores import SampleKey, metrics, panel_names, panel_scores, sample_key, score_name
from speceval.interop.inspect_source import InspectSource, inspect_source
from speceval.interop.inspect_zip import write_eval
from speceval.interop.run_facts import RunFacts
from speceval.paths import readable_names, safe_filename
from speceval.pipelines.inspect_logs import require_inspect

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample, EvalStats
    from inspect_ai.log._log import EvalScorer
    from inspect_ai.model import GenerateConfig
    from inspect_ai.scorer import Score

SCHEMA = "speceval-inspect/3"
"""`eval.metadata["speceval"]["schema"]`: the version of this mapping (3: each judge's card, `judge_card`)."""

_LogKey = tuple[str, str, str, int]  # spec, candidate, variation, run


@dataclass(frozen=True)
class InspectExport:
    """What `export_inspect` wrote."""

    logs: list[Path]
    samples: int
    ranking_files_left_out: int
    failing_judges: list[str] = field(default_factory=list)
    """Each judge entry (`<judge> on <spec>`) that fails its card's lines (its logs say so)."""
    notes: list[str] = field(default_factory=list)
    """What the report's settings could not give (a study's labels file not found)."""


def export_inspect(
    paths: Sequence[Path],
    out: Path,
    log_format: str = "eval",
    max_samples: int = MAX_SAMPLES_PER_LOG,
    labels: Path | None = None,
    min_canary_accuracy: float | None = None,
) -> InspectExport:
    """Write each (spec, candidate, variation, run) as Inspect eval logs (`.eval` or `.json`) under `out`: one
    log, or parts of at most `max_samples` samples each (`inspect_parts`), one at a time (`logs`). Each log
    carries its judges' cards (`inspect_card`: canary accuracy, human accuracy with `labels` or the study's, held to
    the study's lines or `min_canary_accuracy`, as `speceval report`'s flags)."""
    written, samples = [], 0
    plan = survey_for_export(paths, max_samples)
    # The report's card entries: each judge with rates (a categorical judge of whole answers has none, so no card
    # row and no line held to it there; every per-turn judge has turn rates)
    entries = {(f.spec, f.judge) for _, f in plan.firsts if f.turn is not None or f.mode != Mode.CATEGORIES}
    cards, notes = export_cards(paths, plan.canaries, entries, labels, min_canary_accuracy)
    for built in logs(plan, max_samples, cards):
        samples += built.count
        written.append(write_log(built, out / f"{_file_name(built.log)}.{log_format}"))
    failing = sorted({f"{judge} on {spec}" for (spec, judge), card in cards.items() if card.passes is False})
    return InspectExport(
        logs=written, samples=samples, ranking_files_left_out=plan.ranking_files, failing_judges=failing, notes=notes
    )


def survey_for_export(paths: Sequence[Path], max_samples: int) -> Survey:
    """The results files under `paths` (a survey: each file's first verdict), refused before anything is written
    when there is nothing to export or the maximum is below one."""
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
    return plan


def logs(
    plan: Survey, max_samples: int, cards: dict[tuple[str, str], ExportedCard] | None = None
) -> Iterator[BuiltLog]:
    """Each log's parts, one at a time, to be written before the next is made. The survey tells which results
    files hold each log's verdicts; one pass over them gives the whole log's rates and its parts, and a part reads
    only the files of its statements."""
    logs: dict[_LogKey, dict[Path, ComplianceRow]] = defaultdict(dict)
    sources = _sources(plan.firsts)
    for file, first in plan.firsts:
        # an Inspect candidate's epochs are one log (run 0 stands for "its epochs"), as Inspect had them
        run = 0 if sources.get(file) is not None else first.run
        logs[(first.spec, first.model, plan.variation(first), run)][file] = first
    folders = readable_names(sorted({key[2] for key in logs}))
    for key in sorted(logs):
        whole = plan_log(logs[key], max_samples)
        spec, candidate, variation, run = key
        source = sources[next(iter(logs[key]))]
        name = "_".join(
            (
                safe_filename(spec),
                safe_filename(candidate.replace("/", "-")),
                folders[variation],
                f"run{run}" if source is None else "epochs",
            )
        )
        for number, part in enumerate(whole.parts, start=1):
            verdicts = [
                (row if row.variation == variation else row.model_copy(update={"variation": variation}), file)
                for row, file in whole.part_verdicts(part)
            ]
            of = PartOf(number=number, parts=len(whole.parts), log=name)
            built = _log(key, verdicts, plan.settings.get(variation, {}), whole, of, source, cards or {})
            del verdicts
            yield built


@dataclass
class BuiltLog:
    """A log to write: its header (`log`: the eval spec; results and stats are filled once its samples are made)
    and its samples, made one at a time as they are written (a log of a million answers is never held whole)."""

    log: EvalLog
    samples: Iterator[Record | EvalSample]
    count: int


def write_log(built: BuiltLog, path: Path) -> Path:
    """The file is written beside `path` and then moved into place atomically. A `.eval` log is written by
    `inspect_zip` as its samples are made, each kept only as its scores' values and its usage (the header's
    metrics and totals); a `.json` log is one document, so inspect_ai writes it whole."""
    from inspect_ai.log import EvalSample, write_eval_log

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".inspect-") as scratch:
        staged = Path(scratch) / path.name
        if path.suffix == ".eval":
            kept = _Kept()
            write_eval(staged, built.log, kept.noting(built.samples), finish=lambda: _finish(built.log, kept))
        else:
            samples = [s if isinstance(s, EvalSample) else EvalSample.model_validate(s) for s in built.samples]
            built.log.samples = samples
            _finish(built.log, _Kept.of(samples))
            write_eval_log(built.log, str(staged))
        atomic_write_bytes(path, staged.read_bytes())
    return path


_KEPT_FIELDS = {"id", "epoch", "scores", "model_usage", "error"}


@dataclass
class _Kept:
    """What Inspect's metrics and the header's usage totals read of a log's samples: each sample's id, epoch and
    scores' values, and the sum of their usage."""

    samples: list[_Scored] = field(default_factory=list)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, samples: list[EvalSample]) -> _Kept:
        kept = cls()
        for sample in samples:
            kept.note(sample.model_dump(mode="json", include=_KEPT_FIELDS, exclude_none=True))
        return kept

    def noting(self, samples: Iterator[Record | EvalSample]) -> Iterator[Record | EvalSample]:
        for sample in samples:
            self.note(sample if isinstance(sample, dict) else sample.model_dump(mode="json", exclude_none=True))
            yield sample

    def note(self, sample: Record) -> None:
        from inspect_ai.scorer import Score

        scores = {name: Score(value=score["value"]) for name, score in (sample.get("scores") or {}).items()}
        # an Inspect source's errored sample counts as not completed in the metrics' header
        self.samples.append(_Scored(id=sample["id"], epoch=sample["epoch"], scores=scores, error=sample.get("error")))
        usage_totals(self.usage, sample)


@dataclass
class _Scored:
    """What `recompute_metrics` reads of a sample (`EvalSample.model_construct` of these fields was 12 s of a
    profiled export of 10^4 samples: pydantic inspects its default factories each time)."""

    id: str | int
    epoch: int
    scores: dict[str, Score]
    metadata: dict[str, Any] = field(default_factory=dict)
    error: Any = None


def _finish(log: EvalLog, kept: _Kept) -> None:
    """The header's results (Inspect's metrics over the samples' scores) and usage totals."""
    from inspect_ai.log import EvalLog, EvalStats, recompute_metrics
    from inspect_ai.model import ModelUsage

    scored = EvalLog(eval=log.eval, status=log.status)
    scored.samples = kept.samples  # type: ignore[assignment]  # read as samples: id, epoch, scores, metadata, error
    recompute_metrics(scored)
    log.results = scored.results
    meta = (log.eval.metadata or {}).get("speceval", {})
    cards, turns = meta.get("judge_card") or {}, meta.get("turn_judges") or {}
    judges = {judge: judge for judge in cards} | {
        score_name(judge, turn): judge for judge, last in turns.items() if judge in cards for turn in range(1, last + 1)
    }
    card_metrics(log.results, judges, cards)
    log.stats = EvalStats(
        started_at=log.stats.started_at,
        completed_at=log.stats.completed_at,
        model_usage={model: ModelUsage.model_validate(usage) for model, usage in kept.usage.items()},
    )


def _file_name(log: EvalLog) -> str:
    """The file name Inspect gives its own logs, `<created>_<task>_<task id>` (Inspect lists a `.json` log only
    when its name starts with a time stamp, and `inspect log list` reads the task and task id out of the name)."""
    from inspect_ai._util.log_layout import eval_log_name  # private, hence the pinned range

    created = datetime.fromisoformat(log.eval.created).astimezone(UTC).isoformat(timespec="seconds")
    return eval_log_name(task=log.eval.task, task_id=log.eval.task_id, created=created, model=log.eval.model)


def _sources(firsts: list[tuple[Path, ComplianceRow]]) -> dict[Path, InspectSource | None]:
    """Each results file's Inspect source (`inspect_source`: the judged answers were an Inspect log's), or None."""
    facts = RunFacts()
    found: dict[tuple[Path | None, str], InspectSource | None] = {}
    sources: dict[Path, InspectSource | None] = {}
    for file, first in firsts:
        candidate_run = facts.judge_run(file.parent.parent).candidate_run
        if (candidate_run, first.model) not in found:
            found[(candidate_run, first.model)] = inspect_source(candidate_run, first.model)
        sources[file] = found[(candidate_run, first.model)]
    return sources


def _log(
    key: _LogKey,
    verdicts: list[tuple[ComplianceRow, Path]],
    settings: dict[str, Any],
    whole: LogPlan,
    of: PartOf,
    source: InspectSource | None = None,
    cards: dict[tuple[str, str], ExportedCard] | None = None,
) -> BuiltLog:
    """One part's header and samples; the judges, their runs, the rates and the synthetic flag are the whole
    log's (`whole`), so every part of a log says the same of it. From an Inspect `source`: the model as Inspect
    named it, the epochs, and (in the last part) the samples that had no answer to judge."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec
    from inspect_ai.model import ModelConfig

    spec, candidate, variation, run = key
    facts = RunFacts()  # a part's own: it caches the generation records the part's samples read
    judges = whole.judges
    roles = {judge: "grader" if len(judges) == 1 else f"grader_{n}" for n, judge in enumerate(judges, start=1)}
    answers: dict[SampleKey, Answer] = defaultdict(Answer)
    for row, file in verdicts:
        answers[sample_key(row)].rows.append((row, file))
    for answer in answers.values():
        answer.score_verdicts()
    modes, turns = whole.modes(), whole.turns()
    panels = panel_names({judge: mode for judge, mode in modes.items() if judge not in turns})
    texts = {k: a.text() for k, a in answers.items()}
    for panel, members in panels.items():  # each answer's panel: its judges' verdicts are all in the part
        rows = [row for row, _ in verdicts if row.judge in members and row.turn is None]
        for key_of_sample, score in panel_scores(rows, texts).items():
            if isinstance(score, str):
                answers[key_of_sample].not_judged[panel] = {"outcome": score, "reason": None, "parse_error": None}
            else:
                answers[key_of_sample].scores[panel] = score
    runs = {judge: facts.judge_run(folder) for judge, folder in whole.judge_folders().items()}
    first = runs[judges[0]]
    sent = facts.candidate_sent(first.candidate_run)
    model = candidate if source is None else source.model
    ordered = sorted(answers.items())
    epochs = sorted({first.run for first in whole.files.values()})
    unanswered = source.unanswered(set(epochs)) if source is not None and of.number == of.parts else []
    ids = sorted({sample_id(k[0], k[1]) for k, _ in ordered} | {str(s.id) for s in unanswered})
    samples: Iterator[Record | EvalSample] = itertools.chain(
        (build_sample(k, a, model, roles, facts, runs, epochs=source is not None) for k, a in ordered), unanswered
    )
    synthetic = whole.synthetic()
    scorers = _scorers(judges, modes, turns, panels)
    created = min((r.created for r in runs.values() if r.created), default=None)
    card = {j: found.model_dump(mode="json") for j in judges if (found := (cards or {}).get((spec, j))) is not None}
    failing = [j for j in judges if card.get(j, {}).get("passes") is False]
    log = EvalLog(
        status="success",
        stats=_stats(facts, [first.candidate_run, *whole.judge_folders().values()]),
        eval=EvalSpec(
            created=created or datetime.now(UTC).isoformat(),
            task=f"speceval/{of.log}" + (f"_part{of.number}of{of.parts}" if of.parts > 1 else ""),
            task_id=_id("task", key) if of.parts == 1 else _id("task", (*key, of.number)),
            eval_id=_id("eval", key) if of.parts == 1 else _id("eval", (*key, of.number)),
            run_id=_id("run", key),
            task_version="+".join(whole.prompt_versions()),
            dataset=EvalDataset(name=spec, samples=len(ids), sample_ids=ids),
            model=model,
            model_generate_config=_generate_config(sent),
            model_roles={roles[j]: ModelConfig(model=j, config=_generate_config(runs[j].sent)) for j in judges},
            config=EvalConfig(epochs=1 if source is None else source.epochs),
            packages={"speceval": version("speceval")},
            scorers=scorers,
            tags=["speceval", "synthetic" if synthetic else "provider", *(CARD_TAG + j for j in failing)],
            metadata={
                "speceval": {
                    "schema": SCHEMA,
                    "spec": spec,
                    "candidate": candidate,
                    "variation": variation,
                    "variation_settings": settings,
                    "run": run if source is None else None,
                    "epochs": epochs if source is not None else None,
                    "inspect_source": [str(log) for log in source.logs] if source is not None else None,
                    "synthetic": synthetic,
                    "synthetic_note": "answers and verdicts come from the speceval emulator (offline), not from a model"
                    if synthetic
                    else None,
                    "judges": {roles[j]: j for j in judges},
                    "modes": modes,
                    "turn_judges": turns,
                    "panels": panels,
                    "candidate_sent": sent,
                    "judge_sent": {j: runs[j].sent for j in judges},
                    "rates": whole.rates,
                    "rates_scope": "the whole log (every part), as the report's compliance.csv",
                    "interval_methods": interval_methods(),
                    "judge_card": card,
                    "judge_card_note": "; ".join(f"{j}: {card[j]['note']}" for j in failing) or None,
                    "part": {"number": of.number, "of": of.parts, "log": of.log, "log_samples": whole.samples},
                }
            },
        ),
    )
    return BuiltLog(log=log, samples=samples, count=len(ordered) + len(unanswered))


def _stats(facts: RunFacts, runs: list[Path | None]) -> EvalStats:
    """The log's time span (View's duration): from the first of its runs' creation (the candidate's generation,
    its judges') to the last one's last update, as their run.json recorded them; absent when one is unrecorded."""
    from inspect_ai.log import EvalStats

    spans = [facts.span(run) for run in runs]
    if not spans or any(start is None or end is None for start, end in spans):
        return EvalStats()
    started = min(start for start, _ in spans if start is not None)
    completed = max(end for _, end in spans if end is not None)
    return EvalStats(started_at=started.isoformat(), completed_at=completed.isoformat())


def _id(kind: str, key: tuple[str | int, ...]) -> str:
    """A stable id of the log (Inspect View tells logs apart by it): the same verdicts export to the same ids."""
    return hashlib.sha256(json.dumps([kind, *key]).encode()).hexdigest()[:22]


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


def _scorers(
    judges: list[str], modes: dict[str, str], turns: dict[str, int], panels: dict[str, list[str]]
) -> list[EvalScorer]:
    """The log's scorers (Inspect's metrics are computed per scorer): each whole-answer judge, each turn a per-turn
    judge judged anywhere in the log, each panel."""
    from inspect_ai.log._log import EvalMetricDefinition, EvalScorer  # not re-exported by inspect_ai.log

    def scorer(name: str, mode: str) -> EvalScorer:
        return EvalScorer(name=name, metrics=[EvalMetricDefinition(name=f"inspect_ai/{m}") for m in metrics(mode)])

    found = []
    for judge in judges:
        if judge in turns:
            found += [scorer(score_name(judge, turn), modes[judge]) for turn in range(1, turns[judge] + 1)]
        else:
            found.append(scorer(judge, modes[judge]))
    return found + [scorer(panel, "likert") for panel in panels]  # likert: Inspect's mean, as the panel's share

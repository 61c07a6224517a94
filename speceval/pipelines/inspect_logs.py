"""Inspect AI eval logs as a candidate's answers: wherever a generation folder is accepted (a judge YAML's
`candidate_generation_dirs` or `candidates`, the judge commands' folders), an Inspect log file (`.eval` or `.json`)
or a folder of them is accepted too, and its samples are judged as a generation run's records.

How a sample becomes an answer (docs/inspect.md shows it as a table):

- the model: `eval.model` without its provider prefix (`openai/gpt-4o` → `gpt-4o`, `together/Qwen/Qwen3-235B` →
  `Qwen/Qwen3-235B`); logs of one model in a folder are one candidate;
- the statement: `sample.metadata["statement_id"]`, else the sample id read as `<statement_id>_<original_index>`
  (the id speceval's own export gives); a sample with neither is refused, naming the log and the sample;
- the original index: `sample.metadata["original_index"]`, else the id's `_<n>` suffix, else the sample's place
  among its statement's samples (ordered by id);
- epochs as runs: a log of one epoch is one candidate; of several, one candidate per epoch (its verdicts carry
  `run` k, so the report shows the epochs as runs of one candidate);
- input and answer: `sample.input` (or its first user message) and `sample.output.completion` (or the last assistant
  message); a sample with more than one user turn, or whose input holds assistant turns, is a conversation: its
  user and assistant messages are the transcript (assistant messages in the input are fixed history). System
  messages are not shown to the judge (as speceval's own system prompts are not); a tool message is refused;
- failures: `sample.error` → outcome `errored` (its message kept), no answer → `missing`; both are counted and
  not judged, like a generation run's failed records.

A folder written by `inspect eval-set` is read as any folder of logs: its manifests (`logs.json`, `eval-set.json`)
are not logs; of several logs of one task (the same task id and model: an eval-set's retries), the one that
finished is read (else the newest) and the others are named in a warning.

Refused, naming the file, before anything is sent: a `.eval` that is not a zip archive (truncated, or not Inspect's),
a log inspect_ai cannot read (malformed JSON, a missing field), a log with no samples. A log that stopped (status
`error`, `cancelled` or `started`) is read for the samples it has, and the samples it lacks (its dataset's sample
ids times its epochs, less those it holds) are said in a warning and counted as `missing` answers.

Each log is read once to learn its model and epochs (header only) and once, whole, when its answers are read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speceval.errors import ConfigError, InputError

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

logger = logging.getLogger(__name__)

MANIFESTS = ("logs.json", "eval-set.json")
"""What `inspect eval-set` writes beside its logs (a listing of their headers, the set's tasks): not logs."""

INSTALL_HINT = "pip install 'speceval[inspect]'"
TESTED_RANGE = ">=0.3.285,<0.4"
"""The versions of inspect_ai the bridge is tested with (the `inspect` extra pins the same range)."""


def require_inspect() -> None:
    """Raise a ConfigError that says how to install inspect_ai when it cannot be imported. inspect_ai is an
    optional extra (about a second to import, dozens of packages to install), so every function of the bridge
    calls this first and imports inspect_ai inside its body: no other command pays for it."""
    try:
        import inspect_ai  # noqa: F401  (the bridge is about to use it: importing it here costs nothing extra)
    except ImportError as exc:
        raise ConfigError(
            f"the Inspect AI bridge needs inspect_ai ({TESTED_RANGE}), which cannot be imported ({exc}): {INSTALL_HINT}"
        ) from None


_ID = re.compile(r"^(?P<statement>.+)_(?P<index>\d+)$")


@dataclass(frozen=True)
class InspectRun:
    """One candidate run read from Inspect logs: a model's samples of one epoch in one or more logs."""

    model: str
    epoch: int
    epochs: int
    logs: tuple[Path, ...]
    sample_epoch: int | None = None
    """The epoch its samples carry, when it differs from `epoch`: a log speceval exported holds one run, its
    samples at epoch 1 (`epoch` is then the run its metadata names)."""


def is_inspect_log(path: Path) -> bool:
    """A file Inspect wrote, by its name and head: a `.eval` file (read as a zip later: one that is not is refused,
    not skipped), or a `.json` document with `eval` and `version` that is not an eval-set manifest."""
    if not path.is_file() or path.name in MANIFESTS:
        return False
    if path.suffix == ".eval":
        return True
    if path.suffix == ".json":
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
        except OSError:
            return False
        # Inspect writes `version` and `status` before `eval`: enough of the head to tell without reading it all.
        return head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head
    return False


def inspect_logs_in(path: Path) -> list[Path]:
    """The Inspect log files at `path` (the file itself, or those directly in the folder), sorted."""
    if path.is_file():
        return [path] if is_inspect_log(path) else []
    if not path.is_dir():
        return []
    logs = sorted(p for p in path.iterdir() if p.suffix in (".eval", ".json") and is_inspect_log(p))
    others = sorted(p.name for p in path.iterdir() if p.suffix == ".json" and p.name not in MANIFESTS)
    ignored = [name for name in others if path / name not in logs]
    if logs and ignored:
        logger.warning("%s: %d .json file(s) that are not Inspect logs ignored: %s", path, len(ignored), ignored[:5])
    return logs


def read_log(path: Path, header_only: bool = False) -> EvalLog:
    """inspect_ai's reading of one log, any failure an InputError naming the file (a `.eval` that is not a zip
    archive, a malformed `.json`, a field inspect_ai refuses)."""
    from inspect_ai.log import read_eval_log

    if path.suffix == ".eval" and not zipfile.is_zipfile(path):
        raise InputError(path, "not a zip archive: a truncated or damaged .eval log, or not an Inspect log at all")
    try:
        return read_eval_log(str(path), header_only=header_only)
    except Exception as exc:  # inspect_ai raises ValueError, KeyError, zip and pydantic errors alike
        raise InputError(path, f"inspect_ai cannot read this log: {type(exc).__name__}: {exc}") from None


def _current(headers: dict[Path, EvalLog]) -> dict[Path, EvalLog]:
    """The logs to read: of several of one task (task id and model: an eval-set's retries), the one that
    finished, else the newest (by name: Inspect's names start with the time); the others are named."""
    by_task: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for log, header in headers.items():
        by_task[(header.eval.task_id or str(log), header.eval.model)].append(log)
    kept: dict[Path, EvalLog] = {}
    for logs in by_task.values():
        best = max(logs, key=lambda log: (headers[log].status == "success", log.name))
        kept[best] = headers[best]
        if len(logs) > 1:
            logger.warning(
                "%s: %d other log(s) of the same task (%s, its retries) left out: %s",
                best,
                len(logs) - 1,
                headers[best].eval.task,
                ", ".join(log.name for log in sorted(logs) if log != best),
            )
    return kept


def model_name(inspect_model: str) -> str:
    """`provider/model` as Inspect names it → the model's own name (the part after the provider)."""
    return inspect_model.split("/", 1)[1] if "/" in inspect_model else inspect_model


def inspect_runs(path: Path, logs: list[Path]) -> list[InspectRun]:
    """The candidate runs of Inspect logs: one per model and epoch (headers only are read)."""
    require_inspect()
    by_model: dict[str, list[Path]] = defaultdict(list)
    epochs: dict[str, int] = {}
    headers = _current({log: read_log(log, header_only=True) for log in logs})
    exported: dict[str, dict[int, list[Path]]] = defaultdict(lambda: defaultdict(list))
    for log, header in sorted(headers.items()):
        name = model_name(header.eval.model)
        by_model[name].append(log)
        epochs[name] = max(epochs.get(name, 1), header.eval.config.epochs or 1)
        run = exported_run(header)
        if run is not None:
            exported[name][run].append(log)
    if not by_model:
        raise ConfigError(f"{path} holds no Inspect eval log (.eval, or .json as Inspect writes it)")
    found = []
    for model, files in sorted(by_model.items()):
        _one_variation(path, model, {log: headers[log] for log in files})
        runs = exported[model]
        if len(runs) > 1 and sum(len(logs) for logs in runs.values()) == len(files):
            # speceval's export of several runs: a log per run, its samples at epoch 1; each log is its run.
            found += [
                InspectRun(model, run, max(runs), tuple(logs), sample_epoch=1) for run, logs in sorted(runs.items())
            ]
        else:
            found += [InspectRun(model, epoch, epochs[model], tuple(files)) for epoch in range(1, epochs[model] + 1)]
    return found


def _one_variation(path: Path, model: str, headers: dict[Path, EvalLog]) -> None:
    """Refuse one model's logs of several variations (speceval's export of a study writes a log per variation and
    run): the judge commands read a model's logs as one candidate, which has no variation axis, so two variations'
    answers to one input collided as duplicates, with no word of why or what to do."""
    variations: dict[str, list[str]] = defaultdict(list)
    for log, header in sorted(headers.items()):
        meta = (header.eval.metadata or {}).get("speceval")
        variation = meta.get("variation") if isinstance(meta, dict) else None
        if isinstance(variation, str):
            variations[variation].append(log.name)
    if len(variations) > 1:
        named = "; ".join(f"{v}: {', '.join(logs)}" for v, logs in sorted(variations.items()))
        raise ConfigError(
            f"{path}: the logs of {model} are speceval's export of {len(variations)} variations ({named}); a "
            "candidate has no variation axis here: give each variation's logs as a folder of their own"
        )


def exported_run(header: EvalLog) -> int | None:
    """The run a log speceval exported holds (its `speceval` metadata), None for any other log or one of epochs."""
    meta = (header.eval.metadata or {}).get("speceval")
    run = meta.get("run") if isinstance(meta, dict) else None
    return run if isinstance(run, int) and (header.eval.config.epochs or 1) == 1 else None


def inspect_records(run: InspectRun) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """statement id → (where, record) of every sample of the run's epoch, each record shaped as a generation
    run's results record (`original_index`, `input_text`, `output_text`, `outcome`, `error`, and for a conversation
    `conversation` and `turns`), `where` naming the log and sample for error messages."""
    require_inspect()
    found: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    seen: dict[tuple[str, int], str] = {}
    for log_path in run.logs:
        log = read_log(log_path)
        if model_name(log.eval.model) != run.model:
            continue
        if not log.samples:
            raise InputError(
                log_path,
                f"the log holds no samples (status {log.status}): no answers to judge; give a log of the task's run",
                field="samples",
            )
        epoch = run.sample_epoch or run.epoch
        samples = [s for s in log.samples if s.epoch == epoch]
        if log.status != "success":
            for statement_id, record in _stopped(log_path, log, epoch, samples):
                found[statement_id].append(("stopped", record))
        positions = _positions(log_path, samples)
        for sample in samples:
            statement_id = _statement(log_path, sample)
            index = _index(sample, statement_id, positions)
            where = f"sample {sample.id!r} (epoch {sample.epoch})"
            if (statement_id, index) in seen:
                raise InputError(
                    log_path,
                    f"{where} answers statement {statement_id!r} input {index}, as {seen[(statement_id, index)]} does",
                    field="samples",
                )
            seen[(statement_id, index)] = f"{where} of {log_path.name}"
            found[statement_id].append((f"samples[{sample.id!r}]", _record(log_path, sample, index)))
    return found


def _stopped(log_path: Path, log: EvalLog, epoch: int, samples: list[EvalSample]) -> list[tuple[str, dict[str, Any]]]:
    """A stopped log's missing samples of one epoch, said in a warning and returned as `missing` records (those
    whose id names a statement: `<statement_id>_<n>`; the others are counted in the warning only)."""
    ids = log.eval.dataset.sample_ids
    why = f"{log.status}" + (f": {log.error.message}" if log.error is not None else "")
    if ids is None:
        logger.warning("%s: the log stopped (%s); it lists no sample ids, so what is missing is unknown", log_path, why)
        return []
    present = {str(sample.id) for sample in samples}
    missing = [str(i) for i in ids if str(i) not in present]
    if not missing:
        return []
    logger.warning(
        "%s: the log stopped (%s): %d of its %d sample(s) of epoch %d missing, counted as missing answers: %s",
        log_path,
        why,
        len(missing),
        len(ids),
        epoch,
        ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""),
    )
    records = []
    for sample_id in missing:
        match = _ID.match(sample_id)
        if match is not None:
            message = f"sample {sample_id} of epoch {epoch}: not in the log, which stopped ({why})"
            records.append(
                (
                    match["statement"],
                    {
                        "original_index": int(match["index"]),
                        "input_text": "",
                        "output_text": None,
                        "outcome": "missing",
                        "error": {"code": "inspect_stopped", "message": message},
                    },
                )
            )
    return records


def _statement(log: Path, sample: EvalSample) -> str:
    value = (sample.metadata or {}).get("statement_id")
    if isinstance(value, str) and value:
        return value
    match = _ID.match(str(sample.id))
    if match is None:
        raise InputError(
            log,
            f"sample {sample.id!r} names no statement: give it metadata statement_id, or an id <statement_id>_<n>",
            field=f"samples[{sample.id!r}].metadata.statement_id",
        )
    return match["statement"]


def _positions(log: Path, samples: list[EvalSample]) -> dict[str, int]:
    """The place of each sample among its statement's samples, ordered by id (the index of last resort)."""
    by_statement: dict[str, list[str]] = defaultdict(list)
    for sample in samples:
        by_statement[_statement(log, sample)].append(str(sample.id))
    return {sample_id: n for ids in by_statement.values() for n, sample_id in enumerate(sorted(ids))}


def _index(sample: EvalSample, statement_id: str, positions: dict[str, int]) -> int:
    value = (sample.metadata or {}).get("original_index")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _ID.match(str(sample.id))
    if match is not None and match["statement"] == statement_id:
        return int(match["index"])
    return positions[str(sample.id)]


def _record(log: Path, sample: EvalSample, index: int) -> dict[str, Any]:
    messages = _messages(log, sample)
    first_user = next((content for role, content in messages if role == "user"), None)
    input_text = sample.input if isinstance(sample.input, str) else first_user or ""
    record: dict[str, Any] = {"original_index": index, "input_text": input_text}
    if sample.error is not None:
        return {
            **record,
            "output_text": None,
            "outcome": "errored",
            "error": {"code": "inspect_error", "message": sample.error.message},
        }
    answer = sample.output.completion if sample.output is not None and sample.output.completion else None
    if answer is None:
        answer = next((content for role, content in reversed(messages) if role == "assistant"), None)
    if not answer:
        reason = f"the sample hit its {sample.limit.type} limit" if sample.limit is not None else "no answer"
        return {
            **record,
            "output_text": None,
            "outcome": "missing",
            "error": {"code": "inspect_no_answer", "message": reason},
        }
    record.update(output_text=answer, outcome="succeeded", error=None)
    prefilled = sum(1 for m in sample.input if m.role == "assistant") if isinstance(sample.input, list) else 0
    users = sum(1 for role, _ in messages if role == "user")
    if users > 1 or prefilled:
        if not messages or messages[-1] != ("assistant", answer):
            messages.append(("assistant", answer))
        answers = sum(1 for role, _ in messages if role == "assistant") - prefilled
        record["conversation"] = [{"role": role, "content": content} for role, content in messages]
        record["turns"] = [{"round": n} for n in range(1, answers + 1)]
    return record


def _messages(log: Path, sample: EvalSample) -> list[tuple[str, str]]:
    """The sample's user and assistant messages as (role, text); a tool message is refused (it cannot be shown to a
    judge as a transcript of text)."""
    found: list[tuple[str, str]] = []
    for number, message in enumerate(sample.messages or []):
        if message.role == "tool" or (message.role == "assistant" and getattr(message, "tool_calls", None)):
            raise InputError(
                log,
                f"sample {sample.id!r} uses tools (message {number}); speceval judges text "
                "answers and conversations only",
                field=f"samples[{sample.id!r}].messages",
            )
        if message.role in ("user", "assistant"):
            found.append((message.role, message.text))
    return found


def log_sha256(logs: tuple[Path, ...]) -> str:
    """One hash of the logs a run's answers were read from (a judge run records where its answers came from)."""
    digest = hashlib.sha256()
    for log in logs:
        digest.update(json.dumps(str(log)).encode())
        digest.update(log.read_bytes())
    return digest.hexdigest()

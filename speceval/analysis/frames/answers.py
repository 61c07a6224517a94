"""Every candidate answer under a folder (generation runs, an experiment's generations, Inspect logs) as a data
frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speceval.analysis.frames.columns import Frame, pandas
from speceval.analysis.frames.exported import EXPORT_SUFFIXES
from speceval.analysis.reading.json_stream import read_json
from speceval.analysis.reading.load import locate
from speceval.analysis.reading.rows import DEFAULT_VARIATION
from speceval.analysis.tables.keys import PROVIDER, SYNTHETIC
from speceval.analysis.tables.metrics import answers_spec, run_manifest
from speceval.errors import InputError
from speceval.pipelines.inspect_logs import inspect_logs_in, inspect_records, inspect_runs, read_log

ANSWER_COLUMNS: dict[str, str] = {
    "spec": "category",
    "candidate": "category",
    "variation": "category",
    "run": "int",
    "statement_id": "category",
    "original_index": "int",
    "input": "text",
    "output": "text",
    "outcome": "category",
    "error": "text",
    "input_tokens": "int",
    "output_tokens": "int",
    "data": "category",
    "source": "category",
}
"""An answer frame's columns: `output` is the answer (a conversation's last), missing when none came (`outcome`
says why, `error` the provider's message); `data` `synthetic` when the run was offline (the emulator's answers)."""


def read_answers(folder: str | Path) -> Any:
    """Every answer of every generation run at or below `folder` as a pandas DataFrame, one row per input
    (`ANSWER_COLUMNS`), read an answer at a time."""
    pandas()  # said before any file is read
    root = Path(folder)
    if not root.exists():
        raise InputError(root, "no such file or directory")
    if root.is_file() and root.suffix in EXPORT_SUFFIXES:
        # An export's rows are verdicts: it holds the judged answers, not each answer's outcome, error and tokens.
        raise InputError(
            root,
            "a file, not a folder of generation runs: an export of `speceval export` holds verdicts, each with the "
            "answer it judged (speceval.read_verdicts reads them: its `input` and `output` columns); read_answers "
            "reads generation runs, an experiment or Inspect logs",
        )
    frame = Frame(ANSWER_COLUMNS)
    manifests: dict[Path, dict[str, Any]] = {}
    for file in sorted(root.rglob("results/*.json")):
        run_dir = file.parent.parent
        if run_dir not in manifests:
            manifests[run_dir] = run_manifest(run_dir)
        manifest = manifests[run_dir]
        if not str(manifest.get("kind", "generation")).startswith("generation") or manifest.get("kind") == (
            "generation_round"  # a conversation round's own records: its run's results/ holds the conversations
        ):
            continue
        with read_json(file, "results") as streamed:
            if streamed.head is not None:
                continue  # an object: a judge's verdicts, not answers
            where = locate(file)
            fixed = {
                "spec": answers_spec(file, manifest),
                "candidate": str(manifest.get("model_name", run_dir.name)),
                "variation": where.variation,
                "run": where.run,
                "data": SYNTHETIC if manifest.get("offline") else PROVIDER,
                "source": file.relative_to(root if root.is_dir() else root.parent).as_posix(),
            }
            for record in streamed.items:
                if not isinstance(record, dict) or "output_text" not in record:
                    break  # not a generation run's results (the rest of the file is not answers either)
                usage = record.get("usage") or {}
                error = record.get("error") or {}
                frame.add(
                    {
                        **fixed,
                        "statement_id": str(record.get("statement_id", file.stem)),
                        "original_index": record.get("original_index"),
                        "input": record.get("input_text"),
                        "output": record.get("output_text"),
                        "outcome": record.get("outcome"),
                        "error": error.get("message") if isinstance(error, dict) else None,
                        "input_tokens": usage.get("input_tokens") if isinstance(usage, dict) else None,
                        "output_tokens": usage.get("output_tokens") if isinstance(usage, dict) else None,
                    }
                )
    _inspect_answers(root, frame)
    return frame.frame()


def _inspect_answers(root: Path, frame: Frame) -> None:
    """The answers of the Inspect logs at `root` (a log, or a folder's logs: what the judging commands take as a
    candidate's answers), one row per sample of each model's run (an epoch, or a run speceval exported)."""
    logs = inspect_logs_in(root)
    if not logs:
        return
    for run in inspect_runs(root, logs):
        # speceval's own exports say their spec, variation and whether the answers are synthetic; other logs do not.
        meta = (read_log(run.logs[0], header_only=True).eval.metadata or {}).get("speceval") or {}
        fixed = {
            "spec": meta.get("spec"),
            "candidate": run.model,
            "variation": str(meta.get("variation", DEFAULT_VARIATION)),
            "run": run.epoch,
            "data": SYNTHETIC if meta.get("synthetic") else PROVIDER,
            "source": run.logs[0].name,
        }
        for statement_id, records in inspect_records(run).items():
            for _, record in records:
                error = record.get("error") or {}
                frame.add(
                    {
                        **fixed,
                        "statement_id": statement_id,
                        "original_index": record["original_index"],
                        "input": record.get("input_text"),
                        "output": record.get("output_text"),
                        "outcome": record.get("outcome"),
                        "error": error.get("message") if isinstance(error, dict) else None,
                        "input_tokens": None,
                        "output_tokens": None,
                    }
                )

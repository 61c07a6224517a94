"""A flat export (`speceval export --format jsonl|parquet`) read back as the frames its folder gives: the round trip
a researcher who was sent only the export takes. Given such a file, `read_verdicts` and `read_rankings` returned an
empty frame without a word (they walk folders for verdict files); now they read its rows, a row group or a line at a
time, into the same typed columns.

An export's row is a verdict with its answer: the candidate's answers alone (`read_answers`, with each answer's
outcome, error and tokens) are not in it, so `read_answers` refuses the file and says where its answers are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from speceval.analysis.tables.keys import PROVIDER, SYNTHETIC
from speceval.errors import InputError
from speceval.pipelines.inspect_logs import inspect_logs_in

EXPORT_SUFFIXES = (".jsonl", ".parquet")
REQUIRED = {
    "compliance": ("spec", "judge", "candidate", "statement_id", "outcome", "source"),
    "ranking": ("spec", "judge", "model_a", "model_b", "statement_id", "outcome", "source"),
}
"""Per row kind, the columns every row of `speceval export` has a value in."""


def exported(path: Path) -> bool:
    """Whether `path` is a file to read as an export: any file but an Inspect log (its answers are read as answers;
    its scores are not speceval verdicts, which `read_verdicts` says). A file of another kind is refused by
    `export_rows`, never read as an empty folder."""
    return path.is_file() and not inspect_logs_in(path)


def export_rows(path: Path, kind: str) -> Iterator[dict[str, Any]]:
    """The export's rows of `kind` (`compliance` or `ranking`), as records of the frames' columns."""
    if path.suffix not in EXPORT_SUFFIXES:
        raise InputError(
            path,
            "a file, and not a speceval export (.jsonl or .parquet from `speceval export`): give the folder that "
            "holds the runs (or the export) instead",
        )
    convert = _verdict if kind == "compliance" else _ranking
    for number, row in enumerate(_rows(path), start=1):
        line = number if path.suffix == ".jsonl" else None  # a Parquet row has no line: its number says where
        if not isinstance(row, dict) or row.get("kind") not in REQUIRED:
            raise InputError(path, f"row {number} is not a row of `speceval export`", line=line, field="kind")
        missing = [name for name in REQUIRED[row["kind"]] if row.get(name) is None]
        if missing:  # never a frame row of blanks: the export always writes these
            raise InputError(path, f"row {number} has no {missing[0]}", line=line, field=missing[0])
        if row["kind"] == kind:
            yield convert(row)


def _rows(path: Path) -> Iterator[Any]:
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError as exc:
                        raise InputError(path, f"not JSON: {exc}", line=number) from None
        return
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError(path, f"reading Parquet needs pyarrow ({exc}): pip install 'speceval[parquet]'") from None
    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()


def _data(row: dict[str, Any]) -> str:
    return SYNTHETIC if row.get("synthetic") else PROVIDER


def _verdict(row: dict[str, Any]) -> dict[str, Any]:
    turn = row.get("turn")
    return {
        **row,
        # A turn verdict's conversation is its answer's index in the candidate's results (as the verdict files say).
        "conversation": row.get("original_index") if turn is not None else None,
        "data": _data(row),
    }


def _ranking(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "candidate_a": row.get("model_a"), "candidate_b": row.get("model_b"), "data": _data(row)}

"""A flat table of every verdict (compliance and ranking), one row each, for pandas or a dataset.

The verdicts are streamed (`speceval.analysis.reading.streamed`): a row is built, written and let go, so a million
verdicts export in the memory of one results file. Parquet is written in row groups of `PARQUET_BATCH` rows, its
columns typed from the rows spooled as JSON lines first (a column's type is known only once every row is seen)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.reading.rows import ComplianceRow, RankingRow, VerdictDetail
from speceval.analysis.reading.streamed import Survey, streamed_verdicts, survey
from speceval.atomic import atomic_write_lines
from speceval.errors import InputError

PARQUET_BATCH = 20_000
"""Rows per Parquet row group (and held at a time while converting)."""


def surveyed(paths: Sequence[Path]) -> Survey:
    """The survey of `paths` (see `streamed.survey`), or an InputError when they hold no verdict: raised before
    anything is written, so an empty or mistaken source leaves no file."""
    plan = survey(paths)
    if not plan.compliance_files and not plan.ranking_files:
        raise InputError(
            paths[0],
            "no compliance or ranking results found here (expected results/*.json files "
            "of a judge run); nothing to export",
        )
    return plan


def verdict_rows(paths: Sequence[Path], plan: Survey | None = None) -> Iterator[dict[str, Any]]:
    """One row per verdict with everything a reviewer needs to rebuild any table of the report: `kind`
    ('compliance' or 'ranking'), spec, statement, variation and its settings, run, candidate (or both models and both
    answers), original index, input, output, judge, verdict (compliant/rating, or rank), explanation, the judge's raw
    answer and parse error, outcome, source file, and `synthetic` (the judge's run or the answers' run was offline:
    the emulator's, never a model's). Compliance verdicts first, then comparisons, each built as it is read."""
    plan = plan or surveyed(paths)
    settings = {name: json.dumps(values, sort_keys=True) for name, values in plan.settings.items()}
    for row in streamed_verdicts(paths, plan, detail=True):
        yield _compliance_row(row, settings) if isinstance(row, ComplianceRow) else _ranking_row(row, settings)


def _compliance_row(row: ComplianceRow, settings: dict[str, str]) -> dict[str, Any]:
    detail = row.detail or VerdictDetail()
    return {
        "kind": "compliance",
        "spec": row.spec,
        "statement_id": row.statement_id,
        "statement_type": row.statement_type,
        "authority_level": row.authority_level,
        "variation": row.variation,
        "settings": settings.get(row.variation, "{}"),
        "run": row.run,
        "candidate": row.model,
        "candidate_settings": row.candidate_settings,
        "original_index": detail.original_index,
        "input": row.input,
        "output": row.output,
        "judge": row.judge,
        "mode": row.mode,
        "prompt_version": row.prompt_version,
        "outcome": row.outcome,
        "compliant": row.compliant,
        "confidence": row.confidence,
        "rating": row.rating,
        "category": row.category,
        "explanation": row.explanation,
        "raw_judge_response": detail.raw_judge_response,
        "parse_error": detail.parse_error,
        "source": row.source,
        "synthetic": row.synthetic,
        **_conversation_columns(row, detail),
    }


def _ranking_row(r: RankingRow, settings: dict[str, str]) -> dict[str, Any]:
    detail = r.detail or VerdictDetail()
    return {
        "kind": "ranking",
        "spec": r.spec,
        "statement_id": r.statement_id,
        "variation": r.variation,
        "settings": settings.get(r.variation, "{}"),
        "run": r.run,
        "index": r.index,
        "original_index_a": detail.original_index,
        "original_index_b": detail.original_index_b,
        "input": r.input,
        "model_a": r.model_a,
        "model_b": r.model_b,
        "output_a": detail.output_a,
        "output_b": detail.output_b,
        "judge": r.judge,
        "outcome": r.outcome,
        "rank": r.rank,
        "explanation": detail.explanation,
        "raw_judge_response": detail.raw_judge_response,
        "parse_error": detail.parse_error,
        "source": r.source,
        "synthetic": r.synthetic,
        **{
            key: value
            for key, value in (("transcript_a", detail.transcript_a), ("transcript_b", detail.transcript_b))
            if value is not None
        },
    }


CONVERSATION_COLUMNS = ("turn", "scope", "conversation_id", "ended_by", "transcript")
"""Columns of a conversation's verdict (a plain verdict's row goes without them)."""


def _conversation_columns(row: ComplianceRow, detail: VerdictDetail) -> dict[str, Any]:
    """The turn judged (scope turn), the scope, the conversation's id and why it ended, and the transcript the judge
    saw as JSON (a list of {role, content[, author]}: every message's text exactly as the generation recorded it)."""
    if row.turn is None and row.transcript is None:
        return {}
    transcript = (
        None
        if row.transcript is None
        else json.dumps([m.model_dump(mode="json") for m in row.transcript], ensure_ascii=False)
    )
    return {
        "turn": row.turn,
        "scope": "conversation" if row.turn is None else "turn",
        "conversation_id": detail.conversation_id,
        "ended_by": detail.ended_by,
        "transcript": transcript,
    }


def export_verdicts(paths: Sequence[Path], out: Path, fmt: str) -> int:
    """Write every verdict to `out` as JSON lines or Parquet; returns the number of rows."""
    plan = surveyed(paths)  # before anything is written: an empty or unreadable source leaves no file
    count = [0]

    def lines() -> Iterator[bytes]:
        for row in verdict_rows(paths, plan):
            count[0] += 1
            yield json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n"

    if fmt != "parquet":
        atomic_write_lines(out, lines())
        return count[0]
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as scratch:
        spool = Path(scratch) / "rows.jsonl"
        atomic_write_lines(spool, lines())
        _parquet(spool, Path(scratch) / out.name)
        (Path(scratch) / out.name).replace(out)
    return count[0]


def _parquet(spool: Path, out: Path) -> None:
    """The spooled rows as Parquet, a row group of `PARQUET_BATCH` at a time, each column typed as
    `pyarrow.Table.from_pylist` over all the rows would type it (the union of the keys, in the order first seen)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds: dict[str, set[type]] = {}
    with spool.open("rb") as handle:
        for line in handle:
            for key, value in json.loads(line).items():
                kinds.setdefault(key, set()).add(type(value))
    schema = pa.schema([(key, _arrow_type(found)) for key, found in kinds.items()])
    with pq.ParquetWriter(out, schema) as writer, spool.open("rb") as handle:
        batch: list[dict[str, Any]] = []
        for line in handle:
            batch.append(json.loads(line))
            if len(batch) == PARQUET_BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def _arrow_type(found: set[type]) -> Any:
    import pyarrow as pa

    values = found - {type(None)}
    if not values:
        return pa.null()
    if values == {bool}:
        return pa.bool_()
    if values == {int}:
        return pa.int64()
    if values <= {int, float}:
        return pa.float64()
    return pa.string()

"""A flat table of every verdict (compliance and ranking), one row each, for pandas or a dataset."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.reading.rows import VerdictDetail
from speceval.atomic import atomic_write_lines
from speceval.errors import InputError


def verdict_rows(paths: Sequence[Path]) -> Iterator[dict[str, Any]]:
    """One row per verdict with everything a reviewer needs to rebuild any table of the report: `kind`
    ('compliance' or 'ranking'), spec, statement, variation and its settings, run, candidate (or both models and both
    answers), original index, input, output, judge, verdict (compliant/rating, or rank), explanation, the judge's raw
    answer and parse error, outcome, source file, and `synthetic` (an offline run's emulator answer, never a
    model's)."""
    verdicts = load_verdicts(paths, detail=True)
    if not verdicts.compliance and not verdicts.rankings:
        raise InputError(paths[0], "no compliance or ranking results found here (expected results/*.json files "
                                   "of a judge run); nothing to export")
    settings = {name: json.dumps(values, sort_keys=True) for name, values in verdicts.settings.items()}
    for row in verdicts.compliance:
        detail = row.detail or VerdictDetail()
        yield {"kind": "compliance", "spec": row.spec, "statement_id": row.statement_id,
               "statement_type": row.statement_type, "authority_level": row.authority_level,
               "variation": row.variation, "settings": settings.get(row.variation, "{}"), "run": row.run,
               "candidate": row.model, "original_index": detail.original_index, "input": row.input,
               "output": row.output, "judge": row.judge, "mode": row.mode, "prompt_version": row.prompt_version,
               "outcome": row.outcome, "compliant": row.compliant, "confidence": row.confidence,
               "rating": row.rating, "explanation": row.explanation, "raw_judge_response": detail.raw_judge_response,
               "parse_error": detail.parse_error, "source": row.source, "synthetic": row.synthetic,
               # Conversations only (a plain verdict's row keeps its columns): the turn judged, or the transcript.
               **{key: value for key, value in (("turn", row.turn), ("transcript", row.transcript))
                  if value is not None}}
    for r in verdicts.rankings:
        detail = r.detail or VerdictDetail()
        yield {"kind": "ranking", "spec": r.spec, "statement_id": r.statement_id, "variation": r.variation,
               "settings": settings.get(r.variation, "{}"), "run": r.run, "index": r.index,
               "original_index_a": detail.original_index, "original_index_b": detail.original_index_b,
               "input": r.input, "model_a": r.model_a, "model_b": r.model_b, "output_a": detail.output_a,
               "output_b": detail.output_b, "judge": r.judge, "outcome": r.outcome, "rank": r.rank,
               "explanation": detail.explanation, "raw_judge_response": detail.raw_judge_response,
               "parse_error": detail.parse_error, "source": r.source, "synthetic": r.synthetic,
               **{key: value for key, value in (("transcript_a", detail.transcript_a),
                                                ("transcript_b", detail.transcript_b)) if value is not None}}


def export_verdicts(paths: Sequence[Path], out: Path, fmt: str) -> int:
    """Write every verdict to `out` as JSON lines or Parquet; returns the number of rows."""
    rows = list(verdict_rows(paths))  # before anything is written: an empty or unreadable source leaves no file
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), out)
    else:
        atomic_write_lines(out, (json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in rows))
    return len(rows)

"""A flat table of every verdict (compliance and ranking), one row each, for pandas or a dataset."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.load import load_verdicts
from speceval.atomic import atomic_write_lines
from speceval.errors import InputError


def verdict_rows(paths: Sequence[Path]) -> Iterator[dict[str, Any]]:
    """Rows with a `kind` column: 'compliance' (candidate, output, verdict) or 'ranking' (model_a/b, rank), and a
    `synthetic` column (true: an offline run's emulator answer and verdict, never a model's)."""
    verdicts = load_verdicts(paths)
    if not verdicts.compliance and not verdicts.rankings:
        raise InputError(paths[0], "no compliance or ranking results found here (expected results/*.json files "
                                   "of a judge run); nothing to export")
    for row in verdicts.compliance:
        yield {"kind": "compliance", "spec": row.spec, "statement_id": row.statement_id, "input": row.input,
               "candidate": row.model, "output": row.output, "judge": row.judge, "mode": row.mode,
               "variation": row.variation, "run": row.run, "outcome": row.outcome, "compliant": row.compliant,
               "confidence": row.confidence, "rating": row.rating, "explanation": row.explanation,
               "prompt_version": row.prompt_version, "source": row.source, "synthetic": row.synthetic}
    for r in verdicts.rankings:
        yield {"kind": "ranking", "spec": r.spec, "statement_id": r.statement_id, "input": r.input,
               "model_a": r.model_a, "model_b": r.model_b, "judge": r.judge, "variation": r.variation, "run": r.run,
               "index": r.index, "outcome": r.outcome, "rank": r.rank, "source": r.source, "synthetic": r.synthetic}


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

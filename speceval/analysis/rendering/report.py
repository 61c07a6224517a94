"""`build_report`: `report/variation_statistics.json`, the CSVs behind every number, a self-contained browsable
`report.html` and a methods-ready `summary.md`, from every verdict under some folders."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Unpack

from pydantic import BaseModel

from speceval.analysis.rendering.data import ReportData, ReportOptions, StageCounts, compute
from speceval.analysis.rendering.html.page import page_parts
from speceval.analysis.rendering.markdown.summary import render_summary
from speceval.analysis.rendering.report_tables import keyed_tables
from speceval.atomic import atomic_write_bytes, atomic_write_lines
from speceval.batch.costs import PriceTable


class ReportSummary(BaseModel):
    """What `build_report` wrote and computed (also printed by `speceval report`)."""

    html_path: Path
    summary_path: Path
    statistics_path: Path
    csv_paths: list[Path]
    data: ReportData


def build_report(
    paths: Sequence[Path], out_dir: Path, prices: PriceTable | None = None, **options: Unpack[ReportOptions]
) -> ReportSummary:
    """Read every verdict under `paths` (and the human labels of `options`) and write the report's files, computed
    with the `options` of `ReportOptions` (e.g. `min_canary_accuracy`, `health`, `likert_drop`)."""
    data = compute(paths, prices or PriceTable.load(), **options)
    out_dir.mkdir(parents=True, exist_ok=True)
    statistics_path = out_dir / "variation_statistics.json"
    atomic_write_bytes(statistics_path, _json_list(data.variations).encode("utf-8"))
    csv_paths = [_write_csv(out_dir / table.name, table.rows, table.columns) for table in keyed_tables(data)]
    html_path = out_dir / "report.html"
    atomic_write_lines(html_path, (part.encode("utf-8") for part in page_parts(data)))
    summary_path = out_dir / "summary.md"
    atomic_write_bytes(summary_path, render_summary(data).encode("utf-8"))
    return ReportSummary(
        html_path=html_path, summary_path=summary_path, statistics_path=statistics_path, csv_paths=csv_paths, data=data
    )


def _json_list(records: Sequence[BaseModel]) -> str:
    return "[\n" + ",\n".join(r.model_dump_json(indent=2) for r in records) + "\n]\n"


def _write_csv(path: Path, rows: Iterable[dict[str, Any]], header: Sequence[str]) -> Path:
    """The table as CSV, with every column of `header` (which names every key of every row) in its order."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header)
    writer.writeheader()
    # A mapping or list in a cell is written as JSON (a Python repr would not parse anywhere else).
    writer.writerows(
        {k: json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for k, v in row.items()} for row in rows
    )
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    return path


__all__ = ["ReportData", "ReportSummary", "StageCounts", "build_report", "compute"]

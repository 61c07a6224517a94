"""`build_report`: `report/variation_statistics.json`, the CSVs behind every number, a self-contained browsable
`report.html` and a methods-ready `summary.md`, from every verdict under some folders."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel

from speceval.analysis.rendering.data import ReportData, StageCounts, compute
from speceval.analysis.rendering.page import page_parts
from speceval.analysis.rendering.summary import render_summary
from speceval.analysis.tables.variations import VariationStatistics
from speceval.atomic import atomic_write_bytes, atomic_write_lines
from speceval.batch.costs import PriceTable
from speceval.metric_spec import MetricSpec


class ReportSummary(BaseModel):
    """What `build_report` wrote and computed (also printed by `speceval report`)."""

    html_path: Path
    summary_path: Path
    statistics_path: Path
    csv_paths: list[Path]
    data: ReportData


def build_report(paths: Sequence[Path], out_dir: Path, prices: PriceTable | None = None,
                 labels: Path | None = None, min_canary_accuracy: float | None = None,
                 metrics: dict[str, MetricSpec] | None = None) -> ReportSummary:
    """Read every verdict under `paths` (and the human labels in `labels`) and write the report's files; a judge
    whose accuracy on the spec's own examples is below `min_canary_accuracy` is flagged."""
    data = compute(paths, prices or PriceTable.load(), labels, min_canary_accuracy, metrics)
    out_dir.mkdir(parents=True, exist_ok=True)
    statistics_path = out_dir / "variation_statistics.json"
    atomic_write_bytes(statistics_path, _json_list(data.variations).encode("utf-8"))
    def _csv(path: Path, rows: Iterable[dict[str, object]], first: Sequence[str] = ()) -> Path:
        # Every table says what its numbers are made of: a quoted CSV row must not pass synthetic data for real.
        return _write_csv(path, ({**row, "data": data.data_kind} for row in rows), first)

    csv_paths = [
        _csv(out_dir / "variation_statistics.csv", [_flat_record(v) for v in data.variations]),
        _csv(out_dir / "compliance.csv", [_flat_record(r) for r in data.compliance]),
        _csv(out_dir / "compliance_per_statement.csv", [_flat_record(r) for r in data.per_statement]),
        _csv(out_dir / "compliance_by_type.csv", [_flat_record(r) for r in data.by_type]),
        _csv(out_dir / "compliance_by_authority.csv", [_flat_record(r) for r in data.by_authority]),
        _csv(out_dir / "paired_comparisons.csv", [p.model_dump() for p in data.paired]),
        _csv(out_dir / "panel.csv", [p.model_dump() for p in data.panel]),
        _csv(out_dir / "win_rates.csv", [w.model_dump() for w in data.win_rates]),
        _csv(out_dir / "bradley_terry.csv", [s.model_dump() for s in data.bradley_terry]),
        _csv(out_dir / "position_consistency.csv",
             [c.model_dump(include={"spec", "judge", "consistent", "compared", "rate", "variation", "run"})
              for c in data.position_consistency], first=["judge", "consistent", "compared", "rate", "spec"]),
        _csv(out_dir / "agreement.csv", [a.model_dump() for a in data.agreement]),
        _csv(out_dir / "costs.csv", [c.model_dump() for c in data.costs]),
    ]
    if data.categories:
        csv_paths.append(_csv(out_dir / "category_distribution.csv", [c.model_dump() for c in data.categories]))
        csv_paths.append(_csv(out_dir / "category_differences.csv",
                              [c.model_dump() for c in data.category_differences]))
        if data.category_agreement:
            csv_paths.append(_csv(out_dir / "category_agreement.csv",
                                  [c.model_dump() for c in data.category_agreement]))
    if data.turn_rates:
        csv_paths.append(_csv(out_dir / "turn_rates.csv", [r.model_dump() for r in data.turn_rates]))
    if data.metrics:
        csv_paths.append(_csv(out_dir / "metrics.csv", [m.model_dump() for m in data.metrics]))
    if data.inputs:
        csv_paths.append(_csv(out_dir / "inputs.csv", [r.model_dump() for r in data.inputs]))
    if data.judge_checks:
        csv_paths.append(_csv(out_dir / "judge_checks.csv", [c.model_dump() for c in data.judge_checks]))
    if data.leniency:
        csv_paths.append(_csv(out_dir / "judge_leniency.csv", [r.model_dump() for r in data.leniency]))
    if data.human_agreement or data.ppi:
        csv_paths.append(_csv(out_dir / "human_agreement.csv", [r.model_dump() for r in data.human_agreement]))
        csv_paths.append(_csv(out_dir / "ppi.csv", [r.model_dump() for r in data.ppi]))
    html_path = out_dir / "report.html"
    atomic_write_lines(html_path, (part.encode("utf-8") for part in page_parts(data)))
    summary_path = out_dir / "summary.md"
    atomic_write_bytes(summary_path, render_summary(data).encode("utf-8"))
    return ReportSummary(html_path=html_path, summary_path=summary_path, statistics_path=statistics_path,
                         csv_paths=csv_paths, data=data)


def _json_list(records: Sequence[BaseModel]) -> str:
    return "[\n" + ",\n".join(r.model_dump_json(indent=2) for r in records) + "\n]\n"


def _flat_record(record: BaseModel) -> dict[str, object]:
    """A record as one CSV row: counts of outcomes as not_judged_* columns, runs as run<k>_rate columns."""
    row = record.model_dump(exclude={"not_judged", "runs", "settings"})
    if isinstance(record, VariationStatistics):
        row["settings"] = "; ".join(f"{k}={v!r}" for k, v in record.settings.items())
        row.update({f"run{r.run}_rate": r.rate for r in record.runs})
    not_judged = getattr(record, "not_judged", {})
    row.update({f"not_judged_{k}": v for k, v in sorted(not_judged.items())})
    return row


def _write_csv(path: Path, rows: Iterable[dict[str, object]], first: Sequence[str] = ()) -> Path:
    rows = list(rows)
    columns = list(first)
    for row in rows:
        columns += [key for key in row if key not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    # A mapping or list in a cell is written as JSON (a Python repr would not parse anywhere else).
    writer.writerows({k: json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for k, v in row.items()}
                     for row in rows)
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    return path


__all__ = ["ReportData", "ReportSummary", "StageCounts", "build_report", "compute"]

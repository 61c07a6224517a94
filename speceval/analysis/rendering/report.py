"""`build_report`: `report/variation_statistics.json`, the CSVs behind every number, a self-contained browsable
`report.html` and a methods-ready `summary.md`, from every verdict under some folders."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel

from speceval.analysis.rendering.data import ReportCost, ReportData, StageCounts, compute
from speceval.analysis.rendering.health_section import health_csv_rows
from speceval.analysis.rendering.html.page import page_parts
from speceval.analysis.rendering.markdown.summary import render_summary
from speceval.analysis.tables.categories import CategoryAgreement, CategoryDifference, CategoryShare
from speceval.analysis.tables.elicitation import Elicitation
from speceval.analysis.tables.flips import Flip
from speceval.analysis.tables.health_records import HealthThresholds
from speceval.analysis.tables.inputs_report import InputsRow
from speceval.analysis.tables.judge_checks import JudgeCheck
from speceval.analysis.tables.judge_quality import HumanAgreement, Leniency
from speceval.analysis.tables.keys import DataKinds, keyed_columns, keyed_rows
from speceval.analysis.tables.metrics import MetricRow
from speceval.analysis.tables.panel import PanelCounts
from speceval.analysis.tables.ppi_table import PpiRate
from speceval.analysis.tables.rankings import Consistency, Strength, WinRate
from speceval.analysis.tables.rates import Agreement, ComplianceRate
from speceval.analysis.tables.turns import TurnRate
from speceval.analysis.tables.variations import Breakdown, PairedComparison, VariationStatistics
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


def build_report(
    paths: Sequence[Path],
    out_dir: Path,
    prices: PriceTable | None = None,
    labels: Path | None = None,
    min_canary_accuracy: float | None = None,
    metrics: dict[str, MetricSpec] | None = None,
    health: HealthThresholds | None = None,
) -> ReportSummary:
    """Read every verdict under `paths` (and the human labels in `labels`) and write the report's files; a judge
    whose accuracy on the spec's own examples is below `min_canary_accuracy` is flagged, and so are statements by
    the spec-health rules at the `health` thresholds."""
    data = compute(paths, prices or PriceTable.load(), labels, min_canary_accuracy, metrics, health)
    out_dir.mkdir(parents=True, exist_ok=True)
    statistics_path = out_dir / "variation_statistics.json"
    atomic_write_bytes(statistics_path, _json_list(data.variations).encode("utf-8"))
    kinds = DataKinds(data.sources)

    def _csv(name: str, records: Sequence[BaseModel], model: type[BaseModel]) -> Path:
        # Every table is keyed in one place: its key columns first, and what its numbers are made of (`data`), so
        # a quoted CSV row cannot pass synthetic data for a provider's. A table without rows keeps its header.
        rows = [_flat_record(r) for r in records]
        header = keyed_columns(name, [f for f in model.model_fields if f not in _flattened(model)])
        return _write_csv(out_dir / name, keyed_rows(name, rows, kinds), header)

    labelled = bool(data.human_agreement or data.ppi)
    tables: list[tuple[str, Sequence[BaseModel], type[BaseModel], bool]] = [  # (name, rows, record, written)
        ("variation_statistics.csv", data.variations, VariationStatistics, True),
        ("compliance.csv", data.compliance, ComplianceRate, True),
        ("compliance_per_statement.csv", data.per_statement, ComplianceRate, True),
        ("compliance_by_type.csv", data.by_type, Breakdown, True),
        ("compliance_by_authority.csv", data.by_authority, Breakdown, True),
        ("paired_comparisons.csv", data.paired, PairedComparison, True),
        ("panel.csv", data.panel, PanelCounts, True),
        ("win_rates.csv", data.win_rates, WinRate, True),
        ("bradley_terry.csv", data.bradley_terry, Strength, True),
        ("position_consistency.csv", data.position_consistency, Consistency, True),
        ("agreement.csv", data.agreement, Agreement, True),
        ("costs.csv", data.costs, ReportCost, True),
        # the others only when the report has such data
        ("category_distribution.csv", data.categories, CategoryShare, bool(data.categories)),
        ("category_differences.csv", data.category_differences, CategoryDifference, bool(data.categories)),
        ("category_agreement.csv", data.category_agreement, CategoryAgreement, bool(data.category_agreement)),
        ("turn_rates.csv", data.turn_rates, TurnRate, bool(data.turn_rates)),
        ("flips.csv", data.flips, Flip, bool(data.turn_rates)),
        ("elicitation.csv", data.elicitation, Elicitation, bool(data.turn_rates)),
        ("metrics.csv", data.metrics, MetricRow, bool(data.metrics)),
        ("inputs.csv", data.inputs, InputsRow, bool(data.inputs)),
        ("judge_checks.csv", data.judge_checks, JudgeCheck, bool(data.judge_checks)),
        ("judge_leniency.csv", data.leniency, Leniency, bool(data.leniency)),
        ("human_agreement.csv", data.human_agreement, HumanAgreement, labelled),
        ("ppi.csv", data.ppi, PpiRate, labelled),
    ]
    csv_paths = [_csv(name, records, model) for name, records, model, written in tables if written]
    if data.health.statements:
        # Rows of two shapes in one table (statements, then pairs of statements in tension): keyed as they are.
        health_tables = [
            ("statement_health.csv", health_csv_rows(data.health)),
            ("statement_health_judges.csv", [j.model_dump() for j in data.health.judges]),
        ]
        csv_paths += [
            _write_csv(out_dir / name, keyed_rows(name, rows, kinds), keyed_columns(name, rows[0]))
            for name, rows in health_tables
        ]
    html_path = out_dir / "report.html"
    atomic_write_lines(html_path, (part.encode("utf-8") for part in page_parts(data)))
    summary_path = out_dir / "summary.md"
    atomic_write_bytes(summary_path, render_summary(data).encode("utf-8"))
    return ReportSummary(
        html_path=html_path, summary_path=summary_path, statistics_path=statistics_path, csv_paths=csv_paths, data=data
    )


def _json_list(records: Sequence[BaseModel]) -> str:
    return "[\n" + ",\n".join(r.model_dump_json(indent=2) for r in records) + "\n]\n"


def _flattened(model: type[BaseModel]) -> set[str]:
    """Fields written as several columns, or as text (see `_flat_record`)."""
    found = {"runs", "settings"} if issubclass(model, VariationStatistics) else set()
    not_judged = model.model_fields.get("not_judged")
    return found | ({"not_judged"} if not_judged is not None and not_judged.annotation is not int else set())


def _flat_record(record: BaseModel) -> dict[str, object]:
    """A record as one CSV row: counts of outcomes as not_judged_* columns, runs as run<k>_rate columns."""
    row = record.model_dump(exclude=_flattened(type(record)))
    if isinstance(record, VariationStatistics):
        row["settings"] = "; ".join(f"{k}={v!r}" for k, v in record.settings.items())
        row.update({f"run{r.run}_rate": r.rate for r in record.runs})
    not_judged = getattr(record, "not_judged", None)
    if isinstance(not_judged, dict):
        row.update({f"not_judged_{k}": v for k, v in sorted(not_judged.items())})
    return row


def _write_csv(path: Path, rows: Iterable[dict[str, object]], header: Sequence[str] = ()) -> Path:
    rows = list(rows)
    columns = list(header)
    for row in rows:
        columns += [key for key in row if key not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    # A mapping or list in a cell is written as JSON (a Python repr would not parse anywhere else).
    writer.writerows(
        {k: json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for k, v in row.items()} for row in rows
    )
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    return path


__all__ = ["ReportData", "ReportSummary", "StageCounts", "build_report", "compute"]

"""The report's tables by name, each keyed (key columns first, then `data`), as `build_report` writes them to CSV
and `speceval.report_tables` hands them to pandas: one list of tables for both, so a frame is the CSV's table."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

from speceval.analysis.rendering.data import ReportCost, ReportData
from speceval.analysis.rendering.health_section import health_csv_rows
from speceval.analysis.statistics.columns import FlatRecord
from speceval.analysis.tables.card_records import JudgeCardRow
from speceval.analysis.tables.categories import CategoryAgreement, CategoryDifference, CategoryShare
from speceval.analysis.tables.elicitation import Elicitation
from speceval.analysis.tables.flip_survival import FlipSurvival
from speceval.analysis.tables.flips import Flip
from speceval.analysis.tables.inputs_report import InputsRow
from speceval.analysis.tables.judge_checks import JudgeCheck
from speceval.analysis.tables.judge_quality import HumanAgreement, Leniency
from speceval.analysis.tables.keys import DataKinds, keyed_columns, keyed_rows
from speceval.analysis.tables.metrics import MetricRow
from speceval.analysis.tables.panel import PANEL, PanelCounts
from speceval.analysis.tables.ppi_table import PpiRate
from speceval.analysis.tables.rankings import Consistency, Strength, WinRate
from speceval.analysis.tables.rates import Agreement, ComplianceRate
from speceval.analysis.tables.turns import TurnRate
from speceval.analysis.tables.variations import Breakdown, PairedComparison, VariationStatistics


class KeyedTable(NamedTuple):
    """One table of the report: its CSV's name, its columns in order and its rows."""

    name: str
    columns: list[str]
    rows: list[dict[str, Any]]


def keyed_tables(data: ReportData) -> Iterator[KeyedTable]:
    """Every table the report has (the optional ones only when it has such data), keyed in one place: its key
    columns first and what its numbers are made of (`data`), so a quoted row cannot pass synthetic data for a
    provider's. A table without rows keeps its columns."""
    kinds = DataKinds(data.sources)
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
        ("flip_survival.csv", data.flip_survival, FlipSurvival, bool(data.turn_rates)),
        ("elicitation.csv", data.elicitation, Elicitation, bool(data.turn_rates)),
        ("metrics.csv", data.metrics, MetricRow, bool(data.metrics)),
        ("inputs.csv", data.inputs, InputsRow, bool(data.inputs)),
        ("judge_checks.csv", data.judge_checks, JudgeCheck, bool(data.judge_checks)),
        ("judge_card.csv", data.judge_card, JudgeCardRow, bool(data.judge_card)),
        ("judge_leniency.csv", data.leniency, Leniency, bool(data.leniency)),
        ("human_agreement.csv", data.human_agreement, HumanAgreement, labelled),
        ("ppi.csv", data.ppi, PpiRate, labelled),
    ]
    for name, records, model, written in tables:
        if written:
            names = model.flat_columns() if issubclass(model, FlatRecord) else list(model.model_fields)
            columns = [f for f in names if f not in _flattened(model)]
            rows = [_flat_record(r) for r in records]
            if name in HEADLINE_TABLES:  # whether the judge behind each rate passes its card (judge_card.csv)
                columns.append("judge_passes")
                for row in rows:
                    row["judge_passes"] = data.judge_passes(str(row["spec"]), str(row.get("judge", PANEL)))
            yield _table(name, keyed_columns(name, columns), keyed_rows(name, rows, kinds))
    if data.health.statements:
        # Rows of two shapes in one table (statements, then pairs of statements in tension): keyed as they are.
        health_tables = [
            ("statement_health.csv", health_csv_rows(data.health)),
            ("statement_health_judges.csv", [j.model_dump() for j in data.health.judges]),
        ]
        for name, rows in health_tables:
            yield _table(name, keyed_columns(name, rows[0]), keyed_rows(name, rows, kinds))


HEADLINE_TABLES = frozenset(
    {
        "variation_statistics.csv",
        "compliance.csv",
        "compliance_per_statement.csv",
        "compliance_by_type.csv",
        "compliance_by_authority.csv",
        "paired_comparisons.csv",
        "panel.csv",
        "turn_rates.csv",
        "flips.csv",
        "flip_survival.csv",
        "elicitation.csv",
        "category_distribution.csv",
    }
)
"""The tables of rates a reader may quote: each row says whether its judge passes its card (`judge_passes`)."""


def _table(name: str, header: list[str], rows: list[dict[str, Any]]) -> KeyedTable:
    """The table with every column any row has (a `not_judged_<outcome>` column only where some row counts one)."""
    columns = list(header)
    for row in rows:
        columns += [key for key in row if key not in columns]
    return KeyedTable(name, columns, rows)


def _flattened(model: type[BaseModel]) -> set[str]:
    """Fields written as several columns, or as text (see `_flat_record`)."""
    found = {"runs", "settings"} if issubclass(model, VariationStatistics) else set()
    if "tiers" in model.model_fields:
        found.add("tiers")
    if issubclass(model, ReportCost):
        found.add("offline")  # costs.csv says what its numbers are made of in its `data` column, as every table
    not_judged = model.model_fields.get("not_judged")
    return found | ({"not_judged"} if not_judged is not None and not_judged.annotation is not int else set())


def _flat_record(record: BaseModel) -> dict[str, object]:
    """A record as one CSV row: counts of outcomes as not_judged_* columns, runs as run<k>_rate columns."""
    row = record.model_dump(exclude=_flattened(type(record)))
    if isinstance(record, VariationStatistics):
        row["settings"] = "; ".join(f"{k}={v!r}" for k, v in record.settings.items())
        row.update({f"run{r.run}_rate": r.rate for r in record.runs})
    tiers = getattr(record, "tiers", None)
    if isinstance(tiers, dict):  # costs.csv: answered requests per service tier, `flex:40; batch:5`
        row["tiers"] = "; ".join(f"{tier}:{count.requests}" for tier, count in sorted(tiers.items()))
    not_judged = getattr(record, "not_judged", None)
    if isinstance(not_judged, dict):
        row.update({f"not_judged_{k}": v for k, v in sorted(not_judged.items())})
    return row

"""Every table the report writes, keyed and labelled in one place.

A row of any CSV the report writes leads with its key columns in one order (`KEY_COLUMNS`: spec, judge, candidate,
variation, run, turn, metric, category, as the table has them; the candidate is `candidate` in every table), then
`data`: whether the numbers in the row are made of synthetic answers or verdicts (an offline run's, made up by the
speceval emulator), of a provider's, or of both (`mixed`). The data kind of a row is found from the runs the row is
made of: its `Source`s, one per results folder and per run manifest, each flagged synthetic when the judge's run or
the answers' run was offline (`speceval.analysis.reading.load` reads both).

`TABLES` names every CSV the report writes with the stages its rows are made of and how a row picks its sources
(`Table.scope`); writing a table it does not name is an error, so a new table cannot go out without its spec or its
data kind (tests/analysis/test_keyed_tables.py walks every CSV a report writes).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from speceval.errors import UsageError

KEY_COLUMNS = ("spec", "judge", "candidate", "variation", "run", "turn", "metric", "category")
"""The key columns, in the order every table writes those it has."""
DATA = "data"
SYNTHETIC, PROVIDER, MIXED = "synthetic", "provider", "mixed"
PANEL = "panel"
"""The panel's verdicts are made of every judge's (a panel row's sources are all the judges')."""


def data_kind(flags: Iterable[bool]) -> str:
    """`synthetic` when every flag is set, `provider` when none is (or there are none), else `mixed`."""
    found = set(flags)
    if found == {True}:
        return SYNTHETIC
    return MIXED if True in found else PROVIDER


class Source(NamedTuple):
    """One run the report read, as much of its key as it has (None: not a key of this run), and whether its data
    are synthetic (for verdicts: the judge's run or the answers' run was offline)."""

    stage: str
    spec: str | None
    judge: str | None
    candidate: str | None
    variation: str | None
    run_dir: str | None
    synthetic: bool


Where = Mapping[str, "str | Collection[str] | None"]
"""A row's sources: each given field must equal the value (or be one of the values); None matches any."""


class DataKinds:
    """The data kind of any row, from the report's sources."""

    def __init__(self, sources: Iterable[Source]) -> None:
        # One per folder and key: a few hundred however many verdicts (sorted, None before any name).
        self.sources = sorted(set(sources), key=lambda s: tuple("" if v is None else str(v) for v in s))

    @property
    def overall(self) -> str:
        """The kind of the whole report (what its banner says)."""
        return data_kind(s.synthetic for s in self.sources)

    def kind(self, stages: Collection[str], where: Where) -> str:
        """The kind of the sources of `stages` (all, when empty) that match `where`; the report's overall kind when
        none does (a row whose runs cannot be told apart must not pass for provider data)."""
        wanted = {k: ({v} if isinstance(v, str) else set(v)) for k, v in where.items() if v is not None}
        flags = [s.synthetic for s in self.sources if (not stages or s.stage in stages)
                 and all(getattr(s, k) in values for k, values in wanted.items())]
        return data_kind(flags) if flags else self.overall


Row = Mapping[str, Any]


@dataclass(frozen=True)
class Table:
    """How one CSV's rows are keyed: the stages its rows are made of, and which of their sources a row is."""

    stages: tuple[str, ...]
    scope: Callable[[Row], Where]


def _judge(row: Row) -> str | None:
    judge = row.get("judge")
    return None if judge in (None, PANEL) else str(judge)


def _cell(row: Row) -> Where:
    return {"spec": row.get("spec"), "judge": _judge(row), "candidate": row.get("candidate"),
            "variation": row.get("variation")}


def _paired(row: Row) -> Where:
    """A candidate pair within a variation, or a variation pair within a candidate."""
    a, b = str(row["a"]), str(row["b"])
    if row.get("kind") == "variations":
        return {"spec": row["spec"], "judge": _judge(row), "candidate": row["within"], "variation": (a, b)}
    return {"spec": row["spec"], "judge": _judge(row), "candidate": (a, b), "variation": row.get("within")}


def _judges(row: Row) -> Where:
    """`a vs b` names two judges; `all ...` every judge of the spec."""
    judges = str(row.get("judges", ""))
    return {"spec": row.get("spec"), "judge": judges.split(" vs ") if " vs " in judges else None}


def _games(row: Row) -> Where:
    return {**_cell(row), "candidate": (str(row["candidate"]), str(row["opponent"]))}


def _category_pair(row: Row) -> Where:
    return {**_cell(row), "variation": (str(row["a"]), str(row["b"]))}


def _labelled(row: Row) -> Where:
    candidate = row.get("candidate")
    return {**_cell(row), "candidate": None if candidate == "all" else candidate}


def _metric(row: Row) -> Where:
    source = str(row.get("source", ""))
    judge = source.removeprefix("judge:") if source.startswith("judge:") else None
    return {**_cell(row), "judge": judge}


def metric_stages(row: Row) -> tuple[str, ...]:
    """A metric of a judge's answers is made of its verdicts; others of the candidates' answers."""
    return ("compliance",) if str(row.get("source", "")).startswith("judge:") else ("generation",)


def _run(row: Row) -> Where:
    return {"run_dir": row.get("run_dir")}


VERDICTS = ("compliance",)
TABLES: dict[str, Table] = {
    "variation_statistics.csv": Table(VERDICTS, _cell),
    "compliance.csv": Table(VERDICTS, _cell),
    "compliance_per_statement.csv": Table(VERDICTS, _cell),
    "compliance_by_type.csv": Table(VERDICTS, _cell),
    "compliance_by_authority.csv": Table(VERDICTS, _cell),
    "paired_comparisons.csv": Table(VERDICTS, _paired),
    "panel.csv": Table(VERDICTS, _cell),
    "agreement.csv": Table(VERDICTS, _judges),
    "judge_leniency.csv": Table(VERDICTS, lambda row: {**_cell(row), "judge": None}),  # against every judge
    "human_agreement.csv": Table(VERDICTS, _labelled),
    "ppi.csv": Table(VERDICTS, _labelled),
    "turn_rates.csv": Table(VERDICTS, _cell),
    "category_distribution.csv": Table(VERDICTS, _cell),
    "category_differences.csv": Table(VERDICTS, _category_pair),
    "category_agreement.csv": Table(VERDICTS, _judges),
    "win_rates.csv": Table(("ranking",), _games),
    "bradley_terry.csv": Table(("ranking",), lambda row: {**_cell(row), "candidate": None}),  # one fit of all
    "position_consistency.csv": Table(("ranking",), _cell),
    "judge_checks.csv": Table(("canary",), _cell),
    "metrics.csv": Table((), _metric),  # stages by the metric's source: `metric_stages`
    "inputs.csv": Table(("inputs",), lambda row: {"spec": row.get("spec")}),
    "costs.csv": Table((), _run),
}


def _table(name: str) -> Table:
    table = TABLES.get(name)
    if table is None:
        raise UsageError(f"{name} is not keyed: every table the report writes must be named in "
                         "speceval.analysis.tables.keys.TABLES (its key and where its data kind comes from)")
    return table


def keyed_columns(name: str, columns: Iterable[str]) -> list[str]:
    """The columns of the CSV `name` in the order written (see `keyed_rows`)."""
    _table(name)
    columns = list(columns)
    if "spec" not in columns:
        raise UsageError(f"{name}: a table without a spec column ({columns})")
    return [c for c in KEY_COLUMNS if c in columns] + [DATA] + [c for c in columns
                                                                if c not in KEY_COLUMNS and c != DATA]


def keyed_rows(name: str, rows: Iterable[Row], kinds: DataKinds) -> list[dict[str, Any]]:
    """The rows of the CSV `name` as written: key columns first (`KEY_COLUMNS`), then `data`, then the rest."""
    table = _table(name)
    found = []
    for row in rows:
        if "spec" not in row:
            raise UsageError(f"{name}: a row without a spec column ({sorted(row)})")
        stages = metric_stages(row) if name == "metrics.csv" else table.stages
        keys = {column: row[column] for column in KEY_COLUMNS if column in row}
        found.append({**keys, DATA: kinds.kind(stages, table.scope(row)),
                      **{k: v for k, v in row.items() if k not in keys and k != DATA}})
    return found

"""Every table the report writes, keyed and labelled in one place.

A row of any CSV the report writes leads with its key columns in one order (`KEY_COLUMNS`: spec, judge, candidate,
variation, run, turn, metric, category, as the table has them; the candidate is `candidate` in every table), then
`data`: whether the numbers in the row are made of synthetic answers or verdicts (an offline run's, made up by the
speceval emulator), of a provider's, or of both (`mixed`). The data kind of a row is found from the runs the row is
made of: its `Source`s, one per results folder and per run manifest, each flagged synthetic when the judge's run or
the answers' run was offline (`speceval.analysis.reading.load` reads both).

`TABLES` names every CSV the report writes with the sources a row of it is made of; writing a table it does not
name is an error, so a new table cannot go out without its spec or its data kind (tests/analysis/
test_keyed_tables.py walks every CSV a report writes).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, NamedTuple

from speceval.analysis.tables.panel import PANEL  # a panel row's sources are all the judges'
from speceval.errors import UsageError
from speceval.inputgen.records import RUN_KIND as INPUTS_RUN

KEY_COLUMNS = ("spec", "judge", "candidate", "variation", "run", "turn", "metric", "category")
"""The key columns, in the order every table writes those it has."""
DATA = "data"
SYNTHETIC, PROVIDER, MIXED = "synthetic", "provider", "mixed"


def data_kind(flags: Iterable[bool]) -> str:
    """`synthetic` when every flag is set, `provider` when none is (or there are none), else `mixed`."""
    found = set(flags)
    if found == {True}:
        return SYNTHETIC
    return MIXED if True in found else PROVIDER


class Source(NamedTuple):
    """One run the report read, as much of its key as it has (None: not a key of this run), and whether its data
    are synthetic (for verdicts: the judge's run or the answers' run was offline).

    `stage` is `compliance`, `ranking` or `canary` for a folder of verdicts (the judge's and the answers' runs
    together), `run` for a run's manifest (whose `kind` says which: `generation`, `input_generation`, ...)."""

    stage: str
    kind: str | None
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

    def kind(self, where: Where) -> str:
        """The kind of the sources that match `where`; the report's overall kind when none does (a row whose runs
        cannot be told apart must not pass for provider data)."""
        wanted = {k: ({v} if isinstance(v, str) else set(v)) for k, v in where.items() if v is not None}
        flags = [s.synthetic for s in self.sources if all(getattr(s, k) in values for k, values in wanted.items())]
        return data_kind(flags) if flags else self.overall


Row = Mapping[str, Any]
Sources = Callable[[Row], Where]
"""Which sources a row of a table is made of (their `stage` included)."""
VERDICTS, RANKINGS, CANARIES, RUN = "compliance", "ranking", "canary", "run"
GENERATION_RUNS = ("generation", "generation_round")


def _judge(row: Row) -> str | None:
    judge = row.get("judge")
    return None if judge in (None, PANEL) else str(judge)


def _cell(row: Row, stage: str = VERDICTS) -> Where:
    return {
        "stage": stage,
        "spec": row.get("spec"),
        "judge": _judge(row),
        "candidate": row.get("candidate"),
        "variation": row.get("variation"),
    }


def _paired(row: Row) -> Where:
    """A candidate pair within a variation, or a variation pair within a candidate."""
    pair = (str(row["a"]), str(row["b"]))
    if row.get("kind") == "variations":
        return {**_cell(row), "candidate": row["within"], "variation": pair}
    return {**_cell(row), "candidate": pair, "variation": row.get("within")}


def _judges(row: Row) -> Where:
    """`a vs b` names two judges; `all ...` every judge of the spec."""
    judges = str(row.get("judges", ""))
    return {"stage": VERDICTS, "spec": row.get("spec"), "judge": judges.split(" vs ") if " vs " in judges else None}


def _labelled(row: Row) -> Where:
    candidate = row.get("candidate")
    return {**_cell(row), "candidate": None if candidate == "all" else candidate}


def _metric(row: Row) -> Where:
    """A metric of a judge's answers is made of its verdicts; others of the candidates' answers (their runs)."""
    source = str(row.get("source", ""))
    if source.startswith("judge:"):
        return {**_cell(row), "judge": source.removeprefix("judge:")}
    return {**_cell(row, RUN), "judge": None, "kind": GENERATION_RUNS}


TABLES: dict[str, Sources] = {
    "variation_statistics.csv": _cell,
    "compliance.csv": _cell,
    "compliance_per_statement.csv": _cell,
    "compliance_by_type.csv": _cell,
    "compliance_by_authority.csv": _cell,
    "paired_comparisons.csv": _paired,
    "panel.csv": _cell,
    "agreement.csv": _judges,
    "judge_leniency.csv": lambda row: {**_cell(row), "judge": None},  # each judge against every judge
    "human_agreement.csv": _labelled,
    "ppi.csv": _labelled,
    "turn_rates.csv": _cell,
    "flips.csv": _cell,
    "flip_survival.csv": _cell,
    "elicitation.csv": _cell,
    "category_distribution.csv": _cell,
    "category_differences.csv": lambda row: {**_cell(row), "variation": (str(row["a"]), str(row["b"]))},
    "category_agreement.csv": _judges,
    "win_rates.csv": lambda row: {**_cell(row, RANKINGS), "candidate": (str(row["candidate"]), str(row["opponent"]))},
    "bradley_terry.csv": lambda row: {**_cell(row, RANKINGS), "candidate": None},  # one fit of every candidate
    "position_consistency.csv": lambda row: _cell(row, RANKINGS),
    "judge_checks.csv": lambda row: _cell(row, CANARIES),
    # the judge's verdicts, its examples' and its card's re-sent ones (judged as the verdicts were)
    "judge_card.csv": lambda row: {"stage": (VERDICTS, CANARIES), "spec": row.get("spec"), "judge": row.get("judge")},
    "metrics.csv": _metric,
    "inputs.csv": lambda row: {"stage": RUN, "kind": INPUTS_RUN, "spec": row.get("spec")},
    "costs.csv": lambda row: {"stage": RUN, "run_dir": row.get("run_dir")},  # the run's own manifest
    # every judge's verdicts on the spec's statement (or pair of statements), its examples' too
    "statement_health.csv": lambda row: {"stage": (VERDICTS, CANARIES), "spec": row.get("spec")},
    "statement_health_judges.csv": lambda row: {
        "stage": (VERDICTS, CANARIES),
        "spec": row.get("spec"),
        "judge": row.get("judge"),
    },
}
"""Every CSV the report writes → which sources a row of it is made of."""


def _scope(name: str) -> Sources:
    scope = TABLES.get(name)
    if scope is None:
        raise UsageError(
            f"{name} is not keyed: every table the report writes must be named in "
            "speceval.analysis.tables.keys.TABLES (its key and where its data kind comes from)"
        )
    return scope


def keyed_columns(name: str, columns: Iterable[str]) -> list[str]:
    """The columns of the CSV `name` in the order written (see `keyed_rows`)."""
    _scope(name)
    columns = list(columns)
    if "spec" not in columns:
        raise UsageError(f"{name}: a table without a spec column ({columns})")
    return (
        [c for c in KEY_COLUMNS if c in columns] + [DATA] + [c for c in columns if c not in KEY_COLUMNS and c != DATA]
    )


def keyed_rows(name: str, rows: Iterable[Row], kinds: DataKinds) -> list[dict[str, Any]]:
    """The rows of the CSV `name` as written: key columns first (`KEY_COLUMNS`), then `data`, then the rest."""
    scope = _scope(name)
    found = []
    for row in rows:
        if "spec" not in row:
            raise UsageError(f"{name}: a row without a spec column ({sorted(row)})")
        keys = {column: row[column] for column in KEY_COLUMNS if column in row}
        found.append(
            {**keys, DATA: kinds.kind(scope(row)), **{k: v for k, v in row.items() if k not in keys and k != DATA}}
        )
    return found

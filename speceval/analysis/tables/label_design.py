"""How a label sheet sampled its answers, written beside it as `<sheet>.design.json`.

`speceval label-sheet` takes statements in turn, each giving its next answer in a seeded order, so within a
statement every answer is equally likely to be drawn (a simple random sample of n_h of its N_h answers) while
statements are drawn at unequal rates. The sidecar records, per stratum (spec × statement), N_h and n_h: the
inclusion probabilities n_h/N_h a reader needs to weigh the labels. The report's PPI weighs each group's labels by the
group's own N_h/n_h (`speceval.analysis.statistics.ppi`), which follows from this design (a uniform draw within a
statement is uniform within any candidate's answers to it); a sheet without its sidecar (made before it existed)
was drawn the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.human_labels import item_id, labellable
from speceval.atomic import atomic_write_bytes

DESIGN_SCHEMA = 1


class Stratum(BaseModel):
    """One stratum of the draw."""

    model_config = ConfigDict(extra="forbid")

    spec: str
    statement_id: str
    answers: int = Field(description="N_h: distinct answers to this statement under the folders sampled")
    drawn: int = Field(description="n_h: answers of this statement on the sheet")


class LabelDesign(BaseModel):
    """The sampling design of one label sheet."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = DESIGN_SCHEMA
    method: str = Field(
        default="stratified by statement (spec x statement), statements in turn in a seeded order, "
        "answers within a statement in a seeded order: uniform within a statement"
    )
    seed: int
    requested: int = Field(description="--n")
    strata: list[Stratum]


def design_path(sheet: Path) -> Path:
    """`labels.csv` → `labels.design.json`."""
    return sheet.with_name(sheet.stem + ".design.json")


def label_design(rows: list[ComplianceRow], sheet: list[dict[str, str]], n: int, seed: int) -> LabelDesign:
    """The design of `sheet`, drawn by `label_sheet` from `rows` with `n` and `seed`."""
    answers = {item_id(row): (row.spec, row.statement_id) for row in rows if labellable(row)}
    return design_of(Counter(answers.values()), sheet, n, seed)


def design_of(population: Mapping[tuple[str, str], int], sheet: list[dict[str, str]], n: int, seed: int) -> LabelDesign:
    """The design of `sheet` from the distinct labellable answers per (spec, statement) it was drawn from."""
    drawn = Counter((record["spec"], record["statement_id"]) for record in sheet)
    return LabelDesign(
        seed=seed,
        requested=n,
        strata=[
            Stratum(spec=spec, statement_id=statement, answers=count, drawn=drawn[(spec, statement)])
            for (spec, statement), count in sorted(population.items())
        ],
    )


def write_design(sheet: Path, design: LabelDesign) -> Path:
    """The design beside the sheet (written atomically); returns its path."""
    path = design_path(sheet)
    atomic_write_bytes(path, (design.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return path

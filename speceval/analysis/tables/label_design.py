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

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.human_labels import item_id, labellable, sheet_reader
from speceval.atomic import atomic_write_bytes
from speceval.errors import InputError

logger = logging.getLogger(__name__)

DESIGN_SCHEMA = 2
"""2: the design names the answers it drew (`items`) and the filters that aimed it; 1 (before) had neither."""

FILTERS = ("judge", "scope", "candidate", "variation")
"""`speceval label-sheet --judge ENTRY --scope S --candidate C --variation V`: what a sheet may be aimed at."""


class SheetFilter(BaseModel):
    """Which verdicts' answers a sheet draws from (none given: every labellable answer)."""

    model_config = ConfigDict(extra="forbid")

    judge: str | None = Field(default=None, description="a judge entry's name in the tables")
    scope: str | None = Field(default=None, description="turn: turn verdicts; conversation: whole answers")
    candidate: str | None = None
    variation: str | None = None

    def matches(self, row: ComplianceRow) -> bool:
        """Whether the verdict's answer is in the population the sheet is drawn from."""
        scope = "turn" if row.turn is not None else "conversation"
        return (
            (self.judge is None or row.judge == self.judge)
            and (self.scope is None or scope == self.scope)
            and (self.candidate is None or row.model == self.candidate)
            and (self.variation is None or row.variation == self.variation)
        )

    def given(self) -> dict[str, str]:
        """The filters given, as the design records them."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Stratum(BaseModel):
    """One stratum of the draw."""

    model_config = ConfigDict(extra="forbid")

    spec: str
    statement_id: str
    answers: int = Field(description="N_h: distinct answers to this statement under the folders sampled")
    drawn: int = Field(description="n_h: answers of this statement on the sheet")
    spread: float | None = Field(default=None, description="S_h, the judge's error spread Neyman's allocation used")


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
    filters: dict[str, str] = Field(
        default_factory=dict, description="what the sheet was aimed at (label-sheet --judge/--scope/...)"
    )
    items: list[str] | None = Field(default=None, description="the answers drawn, in sheet order (schema 2)")
    allocation: str = Field(
        default="equal", description="labels per statement: equal, proportional (∝ N_h) or neyman (∝ N_h · S_h)"
    )

    def expected_errors(self) -> dict[tuple[str, str], float]:
        """Per (spec, statement): the judge's error share its recorded spread stands for (`spread_error`), where the
        design recorded spreads (Neyman's allocation): the report's PPI takes them as its prior's covariate."""
        return {(s.spec, s.statement_id): spread_error(s.spread) for s in self.strata if s.spread is not None}


def spread_error(spread: float) -> float:
    """The error share e ≤ ½ whose spread √(e(1 − e)) is `spread` (the design records spreads; PPI's prior reads
    errors)."""
    return (1 - math.sqrt(max(0.0, 1 - 4 * min(spread, 0.5) ** 2))) / 2


def design_path(sheet: Path) -> Path:
    """`labels.csv` → `labels.design.json`."""
    return sheet.with_name(sheet.stem + ".design.json")


def label_design(rows: list[ComplianceRow], sheet: list[dict[str, str]], n: int, seed: int) -> LabelDesign:
    """The design of `sheet`, drawn by `label_sheet` from `rows` with `n` and `seed`."""
    answers = {item_id(row): (row.spec, row.statement_id) for row in rows if labellable(row)}
    return design_of(Counter(answers.values()), sheet, n, seed)


def design_of(
    population: Mapping[tuple[str, str], int],
    sheet: list[dict[str, str]],
    n: int,
    seed: int,
    filters: SheetFilter | None = None,
    allocation: str = "equal",
    spreads: Mapping[tuple[str, str], float] | None = None,
) -> LabelDesign:
    """The design of `sheet` from the distinct labellable answers per (spec, statement) it was drawn from."""
    drawn = Counter((record["spec"], record["statement_id"]) for record in sheet)
    return LabelDesign(
        seed=seed,
        requested=n,
        filters=filters.given() if filters is not None else {},
        items=[record["item"] for record in sheet],
        allocation=allocation,
        strata=[
            Stratum(
                spec=spec,
                statement_id=statement,
                answers=count,
                drawn=drawn[(spec, statement)],
                spread=(spreads or {}).get((spec, statement)) if allocation == "neyman" else None,
            )
            for (spec, statement), count in sorted(population.items())
        ],
    )


def write_design(sheet: Path, design: LabelDesign) -> Path:
    """The design beside the sheet (written atomically); returns its path."""
    path = design_path(sheet)
    atomic_write_bytes(path, (design.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return path


def read_design(sheet: Path) -> LabelDesign | None:
    """The design beside `sheet` (None when the sheet has none: made before designs were written); a file that is
    not a design of this version is refused naming the file and the field."""
    path = design_path(sheet)
    if not path.is_file():
        logger.warning("%s has no %s beside it: its labels are weighed as if drawn by label-sheet", sheet, path.name)
        return None
    try:
        return LabelDesign.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or None
        raise InputError(path, f"not a label-sheet design: {error['msg']}", field=field) from None
    except OSError as exc:
        raise InputError(path, f"cannot read the design: {exc}") from None


def check_design(sheet: Path, records: Sequence[tuple[int, str, str]]) -> LabelDesign | None:
    """Refuse labels the design beside `sheet` did not draw, and a design that is not this sheet's: its strata's
    draws must be the sheet's rows per statement, and (schema 2) every labelled item one it drew. Returns it."""
    design = read_design(sheet)
    if design is None:
        return None
    path = design_path(sheet)
    if design.items is not None:
        drawn = set(design.items)
        if sum(s.drawn for s in design.strata) != len(design.items):
            raise InputError(path, "the strata's draws do not add up to the items drawn (edited?)", field="strata")
        for line, item, value in records:
            if value and item not in drawn:
                raise InputError(
                    sheet,
                    f"item {item!r} is labelled but {path.name} did not draw it: a label on an answer the design "
                    "did not draw cannot be weighed as if drawn (label it on a sheet that drew it)",
                    line=line,
                    field="item",
                )
    counts = _sheet_counts(sheet)
    for index, stratum in enumerate(design.strata):
        found = counts.pop((stratum.spec, stratum.statement_id), 0)
        if found > stratum.drawn or stratum.drawn > stratum.answers:
            raise InputError(
                path,
                f"stratum {stratum.spec}/{stratum.statement_id} says {stratum.drawn} drawn of {stratum.answers}, the "
                f"sheet has {found} rows of it: not this sheet's design, or edited",
                field=f"strata.{index}.drawn",
            )
    if counts:
        (spec, statement), _ = sorted(counts.items())[0]
        raise InputError(
            path, f"the sheet has rows of {spec}/{statement}, a statement the design did not draw from", field="strata"
        )
    return design


def _sheet_counts(sheet: Path) -> Counter[tuple[str, str]]:
    """Rows per (spec, statement) of a sheet (its text was checked by `label_records`: UTF-8, a header)."""
    text = sheet.read_bytes().decode("utf-8-sig")
    return Counter((row.get("spec") or "", row.get("statement_id") or "") for row in sheet_reader(text))

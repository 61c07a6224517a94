"""Every verdict under some folders, as flat typed rows. Model names come from the files' metadata only."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from speceval.errors import InputError
from speceval.pipelines.compliance import ComplianceFile
from speceval.pipelines.ranking import RankingFile


class ComplianceRow(BaseModel):
    """One judged (or failed) compliance verdict."""

    spec: str
    judge: str
    model: str
    statement_id: str
    mode: str
    prompt_version: str
    input: str
    output: str
    outcome: str
    compliant: bool | None
    confidence: float | None
    rating: int | None
    source: str


class RankingRow(BaseModel):
    """One pairwise verdict, in the order it was shown to the judge (A first)."""

    spec: str
    judge: str
    model_a: str
    model_b: str
    statement_id: str
    index: int
    input: str
    outcome: str
    rank: int | None
    source: str


class Verdicts(BaseModel):
    """Everything found: compliance rows and ranking rows."""

    compliance: list[ComplianceRow]
    rankings: list[RankingRow]


def load_verdicts(paths: Iterable[Path]) -> Verdicts:
    """Read every compliance and ranking results file at or below `paths`."""
    compliance: list[ComplianceRow] = []
    rankings: list[RankingRow] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "no such file or directory")
        for file in sorted(path.rglob("results/*.json")):
            data = _read(file)
            if not isinstance(data, dict):
                continue  # a generation run's results (a list): not a verdict file
            if "rankings" in data:
                rankings.extend(_ranking_rows(file, data))
            elif "results" in data and "metadata" in data:
                compliance.extend(_compliance_rows(file, data))
    return Verdicts(compliance=compliance, rankings=rankings)


def _read(file: Path) -> object:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(file, f"not a readable JSON results file: {exc}") from None


_File = TypeVar("_File", ComplianceFile, RankingFile)


def _parse(file: Path, data: dict[str, object], model: type[_File], what: str) -> _File:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(file, f"not a {what} results file: {first['msg']}",
                         field=".".join(str(p) for p in first["loc"])) from None


def _compliance_rows(file: Path, data: dict[str, object]) -> list[ComplianceRow]:
    parsed = _parse(file, data, ComplianceFile, "compliance")
    m = parsed.metadata
    return [
        ComplianceRow(spec=m.spec, judge=m.judge, model=m.model, statement_id=m.statement_id, mode=str(m.mode),
                      prompt_version=m.prompt_version, input=e.input, output=e.output, outcome=str(e.outcome),
                      compliant=e.compliant, confidence=e.confidence, rating=e.rating, source=str(file))
        for e in parsed.results
    ]


def _ranking_rows(file: Path, data: dict[str, object]) -> list[RankingRow]:
    parsed = _parse(file, data, RankingFile, "ranking")
    m = parsed.metadata
    return [
        RankingRow(spec=m.spec, judge=m.judge, model_a=m.model_a, model_b=m.model_b, statement_id=m.statement_id,
                   index=e.index, input=e.input, outcome=str(e.outcome), rank=e.rank, source=str(file))
        for e in parsed.rankings
    ]

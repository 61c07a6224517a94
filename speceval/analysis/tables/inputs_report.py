"""The report's "Inputs" section: what the inputs generator proposed, dropped and kept, per spec and statement.

Read from each inputs run's `candidates.jsonl` (see `speceval.inputgen`) under the report's folders. Counts come
from every proposal; the kept inputs are shown with their ratings and the rater's reasons (text cut as elsewhere).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from speceval.batch.manifest import RunManifest
from speceval.errors import InputError
from speceval.inputgen.records import RUN_KIND, CandidateRecord, Fate
from speceval.operations.runs import find_run_dirs

SHOWN_PER_STATEMENT = 20
"""Kept inputs shown per statement in the page (all are in the run's inputs/ files)."""


class InputsRow(BaseModel):
    """One statement's proposals and what became of them."""

    spec: str
    statement_id: str
    generator: str
    rater: str
    proposed: int
    duplicates: int = Field(description="duplicates of earlier inputs, and near copies of the spec's examples")
    below_threshold: int
    unparsed: int = Field(description="answers not valid JSON of the asked shape, and failed or unanswered requests")
    over_target: int
    kept: int
    target: int
    ratings: dict[int, int] = Field(description="rating → proposals rated so (all rated, kept or not)")


class KeptInput(BaseModel):
    spec: str
    statement_id: str
    text: str
    rating: int | None
    reason: str | None


def inputs_tables(paths: Sequence[Path]) -> tuple[list[InputsRow], list[KeptInput]]:
    """Per statement counts and the kept inputs of every inputs run under `paths`."""
    rows: list[InputsRow] = []
    kept: list[KeptInput] = []
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        if manifest.kind != RUN_KIND or not (run_dir / "candidates.jsonl").is_file():
            continue
        config = manifest.parameters.get("config", {})
        by_statement: dict[str, list[CandidateRecord]] = {}
        path = run_dir / "candidates.jsonl"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            try:
                record = CandidateRecord.model_validate(json.loads(line))
            except ValueError as exc:
                raise InputError(path, f"not a candidates record: {exc}", line=number) from None
            by_statement.setdefault(record.statement_id, []).append(record)
        for statement_id, records in by_statement.items():
            fates = Counter(r.fate for r in records)
            rows.append(
                InputsRow(
                    spec=manifest.spec_name,
                    statement_id=statement_id,
                    generator=str(config.get("generator_model")),
                    rater=str(config.get("rater_model")),
                    proposed=sum(r.text is not None for r in records),
                    duplicates=fates[Fate.DUPLICATE] + fates[Fate.COPIES_SPEC_EXAMPLE],
                    below_threshold=fates[Fate.BELOW_THRESHOLD],
                    unparsed=fates[Fate.UNPARSED] + fates[Fate.NOT_RATED] + fates[Fate.GENERATION_FAILED],
                    over_target=fates[Fate.OVER_TARGET],
                    kept=fates[Fate.KEPT],
                    target=int(config.get("per_statement", 0)),
                    ratings=dict(sorted(Counter(r.rating for r in records if r.rating is not None).items())),
                )
            )
            chosen = sorted((r for r in records if r.fate is Fate.KEPT), key=lambda r: -(r.rating or 0))
            kept += [
                KeptInput(
                    spec=manifest.spec_name,
                    statement_id=statement_id,
                    text=r.text or "",
                    rating=r.rating,
                    reason=r.reason,
                )
                for r in chosen[:SHOWN_PER_STATEMENT]
            ]
    return rows, kept

"""Statements in tension (issue 38): which inputs were written for a pair of statements, read from the inputs files'
metadata (`pairs`, see `speceval.inputgen.pairs`). The inputs folders are the ones the report's generation runs
answered (each run's `run.json` names its inputs) and those of inputs runs under the report's folders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, TypeAdapter, ValidationError

from speceval.analysis.reading.column_codes import digest
from speceval.batch.manifest import RunManifest
from speceval.errors import InputError, first_problem
from speceval.inputgen.pairs import PairRecord
from speceval.inputgen.records import RUN_KIND
from speceval.operations.runs import find_run_dirs


class PairInputs(BaseModel):
    """The inputs one spec's pair of statements was given, as the digests the verdict columns keep."""

    spec: str
    a: str
    b: str
    inputs: list[int]
    """`digest` of each input text written for the pair."""


def pair_inputs(paths: Sequence[Path]) -> list[PairInputs]:
    """Every pair recorded in the inputs files behind the report's runs, each once per spec (its inputs pooled
    when several folders record it)."""
    folders: set[tuple[str, Path]] = set()
    for run_dir in find_run_dirs(paths):
        manifest = RunManifest.load(run_dir)
        if manifest.kind == RUN_KIND:
            folders.add((manifest.spec_name, run_dir / "inputs"))
        elif manifest.kind == "generation" and manifest.inputs_path:
            folders.add((manifest.spec_name, Path(manifest.inputs_path)))
    found: dict[tuple[str, frozenset[str]], PairInputs] = {}
    for spec, folder in sorted(folders):
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            for a, b, texts in _pairs_of_file(path):
                pair = found.setdefault((spec, frozenset((a, b))), PairInputs(spec=spec, a=a, b=b, inputs=[]))
                pair.inputs = sorted(set(pair.inputs) | {digest(t) for t in texts})
    return [found[key] for key in sorted(found, key=lambda k: (k[0], sorted(k[1])))]


def _pairs_of_file(path: Path) -> list[tuple[str, str, list[str]]]:
    """(a, b, input texts) of each pair an inputs file records in `metadata.pairs` (none without the key: an
    inputs file need hold only `inputs`); an InputError naming the file for a file or a record that cannot be
    read."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"cannot read this inputs file: {exc}") from None
    metadata = document.get("metadata") if isinstance(document, dict) else None
    if not isinstance(metadata, dict) or "pairs" not in metadata:
        return []
    inputs = document.get("inputs")
    try:
        records = _RECORDS.validate_python(metadata["pairs"])
    except ValidationError as exc:
        raise InputError(
            path, f"metadata.pairs is not a list of pair records: {first_problem(exc)[1]}", field="metadata.pairs"
        ) from None
    found = []
    for record in records:
        if (
            len(record.pair) != 2
            or not isinstance(inputs, list)
            or any(not 0 <= i < len(inputs) or not isinstance(inputs[i], str) for i in record.indices)
        ):
            raise InputError(
                path, f"the pair {record.pair} names no two statements or inputs the file lacks", field="metadata.pairs"
            )
        found.append((record.pair[0], record.pair[1], [inputs[i] for i in record.indices]))
    return found


_RECORDS = TypeAdapter(list[PairRecord])

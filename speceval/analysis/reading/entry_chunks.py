"""What the compliance and the ranking readers share about one results file (split from `load`, which walks the
folders): whether its verdicts can be read one at a time, its metadata parsed, its entries validated `ENTRY_CHUNK` at
a time (a bad one named by its place in the file), and whether an export marked it synthetic.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from speceval.analysis.reading.json_stream import StreamedJson
from speceval.analysis.reading.rows import Location
from speceval.errors import InputError
from speceval.judging.files import CanaryFile, ComplianceEntry, ComplianceFile, RankingEntry, RankingFile


def streams_verdicts(streamed: StreamedJson) -> bool:
    """A compliance or ranking results file as speceval writes it: its metadata (naming the judge: not the
    original's) comes before `results` or `rankings`, which can then be read a verdict at a time."""
    head = streamed.head
    if head is None:  # a JSON list at the top: not a results file as speceval writes it
        return False
    metadata = head.get("metadata")
    return (
        streamed.pending
        and isinstance(metadata, dict)
        and "judge" in metadata
        and "rankings" not in head
        and "canaries" not in head
    )


_File = TypeVar("_File", ComplianceFile, RankingFile, CanaryFile)


def parse_file(file: Path, data: dict[str, Any], model: type[_File], what: str) -> _File:
    """`data` as a speceval `what` results file, or an `InputError` naming every field that is not."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors())
        raise InputError(
            file,
            f"neither a speceval {what} results file nor one of the original SpecEval's "
            f"(see docs/migrating.md): {problems}",
        ) from None


ENTRY_CHUNK = 100
"""Verdicts of a results file validated at a time by `validated_chunks`: a validated entry copies its texts, so
a file of 5,000 verdicts validated whole held every text twice (500 at a time: 2.6 KB a verdict of one file of
3,000 at the fold's peak, against 370 bytes with 100)."""


_Entry = TypeVar("_Entry", ComplianceEntry, RankingEntry)
_Row = TypeVar("_Row", bound=BaseModel)


def _located(key: str, start: int, loc: tuple[int | str, ...]) -> str:
    """`<key>.<i>.<field>` of a validation error in a chunk of entries that starts at entry `start`."""
    return ".".join([key, *(str(start + p) if i == 0 and isinstance(p, int) else str(p) for i, p in enumerate(loc))])


def validated_chunks(
    file: Path, entries: list[Any] | Iterator[Any], adapter: TypeAdapter[list[_Entry]], key: str, what: str
) -> Iterator[list[_Entry]]:
    """The entries of a results file's array `key` (a list, or read from the file as they come), validated
    `ENTRY_CHUNK` at a time; a bad entry raises `InputError` naming it (`<key>.<i>.<field>`)."""
    source = iter(entries)
    start: int = 0
    while chunk := list(itertools.islice(source, ENTRY_CHUNK)):
        if isinstance(entries, list):
            entries[start : start + len(chunk)] = [None] * len(chunk)  # the parsed JSON of these goes now
        try:
            validated = adapter.validate_python(chunk)
        except ValidationError as exc:
            problems = "; ".join(_located(key, start, error["loc"]) + f": {error['msg']}" for error in exc.errors())
            raise InputError(
                file,
                f"neither a speceval {what} results file nor one of the original SpecEval's "
                f"(see docs/migrating.md): {problems}",
            ) from None
        del chunk
        yield validated
        start += len(validated)


def exported_place(data: dict[str, Any], variation: str, run: int) -> dict[str, Any]:
    """The variation and run of an original-shaped file: those `speceval export --format original` recorded in its
    metadata (the original's layout has no experiment.json to name them: a `temperature-0.7/run2/` folder would
    read back as variation `default`, run 1), else the given ones."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and metadata.get("exported_by") is not None:
        given, number = metadata.get("variation"), metadata.get("run")
        if isinstance(given, str) and given:
            variation = given
        if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
            run = number
    return {"variation": variation, "run": run}


def exported_where(data: object, where: Location) -> Location:
    """`where` with the variation, its settings and the run an export recorded in a file's metadata (see
    `exported_place`), so a variation read back keeps its settings as well as its name."""
    metadata = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(metadata, dict) or metadata.get("exported_by") is None:
        return where
    update = exported_place(data, where.variation, where.run)
    if isinstance(metadata.get("settings"), dict):
        update["settings"] = metadata["settings"]
    return where.model_copy(update=update)


def exported_rows(
    model: type[_Row],
    data: dict[str, Any],
    columns: dict[str, Any],
    records: Iterable[dict[str, Any]],
    where: Location,
    source: str,
    detail: bool,
) -> Iterator[_Row]:
    """The rows of an original-shaped file: each of its `records` with the file's own `columns`, its place
    (`exported_place`) and `source`, synthetic when the run or the export says so; a record's detail only when
    asked for (`detail`)."""
    common = {
        **columns,
        **exported_place(data, where.variation, where.run),
        "source": source,
        "synthetic": where.synthetic or exported_synthetic(data),
    }
    for record in records:
        yield model.model_validate({**common, **record, "detail": record["detail"] if detail else None})


def exported_synthetic(data: dict[str, Any]) -> bool:
    """An original-shaped file `speceval export --format original` wrote from synthetic verdicts (its metadata
    says so: the original's layout has no run.json to say it)."""
    metadata = data.get("metadata")
    return isinstance(metadata, dict) and metadata.get("synthetic") is True

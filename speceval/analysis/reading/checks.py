"""What a report refuses to read, or reads once: checks on the folders it is given and on the verdicts in them.

* The same folder given twice, or a folder and one inside it (`speceval report runs runs/spec_x`), is read once:
  every results file below both would otherwise count twice (`distinct_roots`).
* A JSON list under `results/` is a generation run's answers (`list_kind`); an empty one among a judge's verdict
  files is named as skipped, not taken for a generation's.
* A categorical verdict with a category its judge was not given, and a turn verdict whose turn is not one of its
  conversation's (turns count from 1, one verdict per assistant turn), are refused naming the file and the entry
  (`EntryChecks`): counted, either would be a number about something that was never asked.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from speceval.defaults import Mode
from speceval.errors import InputError
from speceval.judging.files import ComplianceEntry, ComplianceMetadata

logger = logging.getLogger(__name__)


def distinct_roots(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those given twice or lying inside another given path (warned about), in the order given:
    each results file below them is then read once."""
    given = [Path(p) for p in paths]
    resolved = [p.resolve() for p in given]
    kept: list[Path] = []
    for index, (path, real) in enumerate(zip(given, resolved, strict=True)):
        inside = next(
            (
                given[other]
                for other, root in enumerate(resolved)
                if other != index and real.is_relative_to(root) and (root != real or other < index)
            ),
            None,
        )
        if inside is None:
            kept.append(path)
        elif real == inside.resolve():
            logger.warning("%s was given more than once: read once", path)
        else:
            logger.warning("%s lies inside %s, also given: read once, as part of %s", path, inside, inside)
    return kept


class EntryChecks:
    """The checks of one compliance results file's entries, as they are read (`check` each, in file order, then
    `done`)."""

    def __init__(self, file: Path, metadata: ComplianceMetadata) -> None:
        self._file = file
        self._categories = set(metadata.categories or []) if metadata.mode == Mode.CATEGORIES else None
        self._turns: dict[int, dict[int, int]] = defaultdict(dict)
        """original_index → turn → the entry (position) that gave it: the turns of each conversation."""
        if self._categories is not None and not metadata.categories:
            raise InputError(
                file,
                "a categories judge's file must list the categories its judge was given",
                field="metadata.categories",
            )

    def check(self, position: int, entry: ComplianceEntry) -> None:
        if self._categories is not None and entry.category is not None and entry.category not in self._categories:
            given = ", ".join(sorted(self._categories))
            raise InputError(
                self._file,
                f"category {entry.category!r} is not one the judge was given ({given})",
                field=f"results.{position}.category",
            )
        if entry.turn is None:
            return
        if entry.turn < 1:
            raise InputError(
                self._file,
                f"turn {entry.turn}: turns count the candidate's answers from 1",
                field=f"results.{position}.turn",
            )
        turns = self._turns[entry.original_index]
        if entry.turn in turns:
            raise InputError(
                self._file,
                f"a second verdict on turn {entry.turn} of answer {entry.original_index} "
                f"(the first is results.{turns[entry.turn]})",
                field=f"results.{position}.turn",
            )
        turns[entry.turn] = position

    def done(self) -> None:
        """Every conversation's turns are 1..n (one verdict per assistant turn): a turn past that is beyond it."""
        for index, turns in self._turns.items():
            beyond = [turn for turn in turns if turn > len(turns)]
            if beyond:
                turn = min(beyond)
                raise InputError(
                    self._file,
                    f"turn {turn} of answer {index}, whose conversation has verdicts on "
                    f"{len(turns)} turn(s): beyond the conversation (one verdict per "
                    "assistant turn, counted from 1)",
                    field=f"results.{turns[turn]}.turn",
                )


ANSWERS, EMPTY, OTHER = "answers", "empty", "other"


def list_kind(records: Iterable[Any]) -> str:
    """What a results file holding a JSON list is: `answers` (a generation run's `results/<statement>.json`, records
    with `output_text`), `empty` (no records: a generation's only inside a generation run) or `other`. Every record
    is read (a file that is not JSON to its end is an error, not a skipped file)."""
    answers, empty = True, True
    for record in records:
        empty = False
        answers = answers and isinstance(record, dict) and "output_text" in record
    return EMPTY if empty else ANSWERS if answers else OTHER


def run_kind(run_dir: Path) -> str:
    """The kind its run.json gives a run folder ('' without a readable one)."""
    try:
        manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(manifest.get("kind", "")) if isinstance(manifest, dict) else ""

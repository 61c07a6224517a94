"""The labels people give answers (split from `judge_quality`, which measures judges against them): which
verdicts' answers can be labelled, the item id a label names, the label sheet (drawn stratified by statement, written
as CSV) and a filled sheet read back and checked line by line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.panel import PANEL
from speceval.defaults import Mode
from speceval.errors import ConfigError, InputError, read_utf8_text

logger = logging.getLogger(__name__)


LABEL_COLUMNS = [
    "item",
    "spec",
    "candidate",
    "variation",
    "statement_id",
    "statement_text",
    "turn",
    "input",
    "transcript",
    "output",
    "human_compliant",
    "notes",
]
"""A label sheet's columns. For a conversation's verdict, `transcript` holds what its judge saw (for a turn verdict:
every message up to the judged `turn`, whose answer is `output`; one `[role]` line per message)."""
LABELLED_MODES = (Mode.BINARY, Mode.LIKERT)
"""The judges' modes a human label is compared with (`labellable`)."""
_YES = {"yes", "true", "1", "compliant", "y"}
_NO = {"no", "false", "0", "non-compliant", "noncompliant", "not compliant", "n"}


def item_id(row: ComplianceRow, variation: str | None = None) -> str:
    """A stable id of one answer (spec, candidate, variation, run, statement, input, output): what a label names
    (`variation`: the one the row is reported under, when that is not yet the row's own; see
    `speceval.analysis.tables.labelled`). A turn of a conversation is named by its turn too (two turns may give the
    same answer), and a conversation judged whole by its transcript, so neither is taken for the other."""
    parts = [
        row.spec,
        row.model,
        row.variation if variation is None else variation,
        str(row.run),
        row.statement_id,
        row.input,
        row.output,
    ]
    if row.transcript is not None or row.turn is not None:
        parts += [
            "turn" if row.turn is not None else "conversation",
            str(row.turn),
            *(f"{m.role}:{m.content}" for m in row.transcript or ()),
        ]
    key = "\x00".join(parts)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def label_sheet(
    rows: list[ComplianceRow], n: int, seed: int, statement_texts: dict[tuple[str, str], str] | None = None
) -> list[dict[str, str]]:
    """`n` distinct answers (each once, however many judges judged it), stratified by statement: statements take
    turns in a seeded order, each giving its next answer in a seeded order. No judge verdict is shown.
    `statement_texts`: (spec, statement id) → the statement's text."""
    if n < 1:
        raise ConfigError("--n must be at least 1")
    answers: dict[str, ComplianceRow] = {}
    for row in rows:
        if labellable(row):
            answers.setdefault(item_id(row), row)
    by_statement: dict[tuple[str, str], list[str]] = defaultdict(list)
    for item, row in sorted(answers.items()):
        by_statement[(row.spec, row.statement_id)].append(item)
    picked = pick_items(by_statement, n, seed)
    texts = statement_texts or {}
    return [sheet_row(item, answers[item], texts) for item in picked]


def sheet_row(item: str, row: ComplianceRow, texts: dict[tuple[str, str], str]) -> dict[str, str]:
    """One row of a label sheet: the answer (a conversation's turn with its transcript so far), no verdict."""
    transcript = "\n\n".join(f"[{'simulated user' if m.author else m.role}]\n{m.content}" for m in row.transcript or [])
    return {
        "item": item,
        "spec": row.spec,
        "candidate": row.model,
        "variation": row.variation,
        "statement_id": row.statement_id,
        "statement_text": texts.get((row.spec, row.statement_id), ""),
        "turn": "" if row.turn is None else str(row.turn),
        "input": row.input,
        "transcript": transcript,
        "output": row.output,
        "human_compliant": "",
        "notes": "",
    }


def pick_items(by_statement: Mapping[tuple[str, str], Sequence[Any] | np.ndarray], n: int, seed: int) -> list[Any]:
    """`n` of the answers' items, stratified by statement (each statement's items sorted): statements take turns in
    a seeded order, each giving its next item in a seeded order. (Items may be a numpy array: nothing is copied.)"""
    rng = np.random.default_rng(seed)
    queues = [(by_statement[key], rng.permutation(len(by_statement[key]))) for key in sorted(by_statement)]
    turns = [queues[i] for i in rng.permutation(len(queues))]
    picked: list[Any] = []
    position = 0  # round `position` takes the position-th item of every statement that has one
    while len(picked) < n and any(position < len(order) for _, order in turns):
        for items, order in turns:
            if position < len(order) and len(picked) < n:
                picked.append(items[order[position]])
        position += 1
    return picked


def labellable(row: ComplianceRow) -> bool:
    """Whether a human label of the row's answer is compared with the row's verdict: one judge's yes/no or 1-5
    rating, on a whole answer or on one turn of a conversation (its own item, named by its turn and transcript: see
    `item_id`). A rating is read against the label by the canaries' rule (`speceval.judging.canaries.likert_agrees`).
    A panel is no judge; a categorical judge answers a category, which no rule reads as a yes/no (its canaries are
    not judged either): labels of those would be accepted and never used."""
    return row.judge != PANEL and row.mode in LABELLED_MODES


def write_label_sheet(path: Path, sheet: list[dict[str, str]]) -> None:
    """The sheet as CSV (written atomically)."""
    import io

    from speceval.atomic import atomic_write_bytes

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=LABEL_COLUMNS)
    writer.writeheader()
    writer.writerows(sheet)
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))


def read_labels(path: Path, rows: list[ComplianceRow]) -> dict[str, bool]:
    """item → the human's verdict, from a filled sheet; blank is unlabelled. A malformed value or an item that
    matches no answer under the report's folders is an InputError naming the line."""
    return checked_labels(path, label_records(path), {item_id(r) for r in rows if labellable(r)})


LabelRecord = tuple[int, str, str]
"""(line, item, human_compliant as written, stripped and lower-cased) of one row of a label sheet."""


def sheet_reader(text: str) -> csv.DictReader[str]:
    """A label sheet's rows. A cell may hold a whole transcript (speceval writes them: 425 KB seen), past the csv
    module's default field limit of 128 KiB, so the limit is raised to the sheet's own length first."""
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    return csv.DictReader(io.StringIO(text, newline=""))


def label_records(path: Path) -> list[LabelRecord]:
    """Every row of a filled sheet, unchecked but for its header (`checked_labels` checks them in line order).

    Read as people save sheets: a UTF-8 byte-order mark (Excel's "CSV UTF-8") and CRLF line ends are fine; text in
    another encoding is refused naming its first line that is not UTF-8 (a sheet is small: read whole)."""
    text = read_utf8_text(path, "labels", "save the sheet as CSV UTF-8")
    reader = sheet_reader(text)
    if reader.fieldnames is None or not {"item", "human_compliant"} <= set(reader.fieldnames):
        raise InputError(
            path,
            "a label sheet needs the columns item and human_compliant (make one with speceval label-sheet)",
            line=1,
        )
    return [
        (reader.line_num, (record.get("item") or "").strip(), (record.get("human_compliant") or "").strip().lower())
        for record in reader
    ]


def checked_labels(path: Path, records: list[LabelRecord], known: set[str] | None) -> dict[str, bool]:
    """item → verdict of the labelled rows; the first (in line order) with a malformed value, an item labelled on
    an earlier line too (kept one would be a silent pick), or an item not among `known` answers (None: not checked
    yet, before the answers exist) raises InputError naming its line. A sheet without any label is logged."""
    labels: dict[str, bool] = {}
    lines: dict[str, int] = {}
    for line, item, value in records:
        if not value:
            continue
        if value not in _YES | _NO:
            raise InputError(
                path,
                f"human_compliant {value!r} is not one of yes/no, true/false, 1/0, compliant/non-compliant (or blank)",
                line=line,
                field="human_compliant",
            )
        if item in lines:
            how = "the same label" if labels[item] == (value in _YES) else "a conflicting label"
            raise InputError(
                path,
                f"item {item!r} is labelled on line {lines[item]} too ({how}); keep one row per item",
                line=line,
                field="item",
            )
        if known is not None and item not in known:
            raise InputError(
                path, f"item {item!r} matches no answer in the folders reported on", line=line, field="item"
            )
        labels[item] = value in _YES
        lines[item] = line
    if not labels:
        logger.warning(
            "%s has no filled human_compliant value: no human agreement or prediction-powered rate "
            "can be computed from it",
            path,
        )
    return labels

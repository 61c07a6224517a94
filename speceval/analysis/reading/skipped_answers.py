"""The candidate's answers a judge never saw: each rate's "not judged" counts them beside the judge's own failures.

A compliance judge judges only the answers whose generation succeeded; the others (errored, expired, cancelled,
missing) are counted in its `summary.json` (`skipped_answers`, and per statement `skipped_by_statement`), one per
candidate's judge folder, beside that folder's `results/`. Without them a rate's row said "64 judged, 5 unparsed"
where the candidate had 80 inputs: 11 answers cancelled at the provider were nowhere in the table. They enter each
row's `not_judged` as `answer_<outcome>` (the judge's own failures keep their names: `unparsed`, `judge_errored`).
Only the summaries are read (a few hundred bytes a folder), never the verdicts again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.compliance_entries import StatementClasses
from speceval.errors import InputError

SUMMARY_NAME = "summary.json"
PREFIX = "answer_"
"""What an answer's generation outcome is called in `not_judged` (`answer_cancelled`)."""


class _JudgeSummary(BaseModel):
    """The two fields of a candidate's judge `summary.json` (speceval.pipelines.compliance_files.CandidateSummary)
    read here: the rest is the judge's own counts, which the verdicts give."""

    model_config = ConfigDict(extra="ignore")

    skipped_answers: dict[str, int]
    skipped_by_statement: dict[str, dict[str, int]] = Field(default_factory=dict)


Key = tuple[str, ...]


class SkippedAnswers(BaseModel):
    """Answers not judged per (spec, judge, candidate, variation), and per the same with the statement, its type or
    its authority level (the breakdowns' `group`)."""

    pooled: dict[Key, dict[str, int]] = Field(default_factory=dict)
    per_statement: dict[Key, dict[str, int]] = Field(default_factory=dict)
    by_type: dict[Key, dict[str, int]] = Field(default_factory=dict)
    by_authority: dict[Key, dict[str, int]] = Field(default_factory=dict)


def skipped_answers(paths: list[Path | None], facts: list[FileFacts]) -> SkippedAnswers:
    """The answers not judged behind the results files `paths` (each with its `facts`, as the fold read them):
    each judge folder's summary counted once in its (spec, judge, candidate, variation), its statements' counts in
    theirs. A folder without a summary (an export read back, the original's layout) adds nothing."""
    summaries: dict[Path, _JudgeSummary | None] = {}
    pooled: dict[Key, Counter[str]] = {}
    per_statement: dict[Key, Counter[str]] = {}
    by_type: dict[Key, Counter[str]] = {}
    by_authority: dict[Key, Counter[str]] = {}
    seen: dict[tuple[Path, Key], set[str]] = {}  # a folder's statements with verdicts, per cell
    for path, fact in zip(paths, facts, strict=True):
        if path is None:
            continue
        folder = path.parent.parent
        if folder not in summaries:
            summaries[folder] = _summary(folder / SUMMARY_NAME)
        summary = summaries[folder]
        if summary is None:
            continue
        key = (fact.spec, fact.judge, fact.model, fact.variation)
        if (folder, key) not in seen:  # a folder's statements share its summary: counted once
            seen[(folder, key)] = set()
            _add(pooled, key, summary.skipped_answers)
        if fact.statement_id in seen[(folder, key)]:
            continue  # (a statement's several files, e.g. of runs)
        seen[(folder, key)].add(fact.statement_id)
        statement = summary.skipped_by_statement.get(fact.statement_id, {})
        _add(per_statement, (*key, fact.statement_id), statement)
        _add(by_type, (*key, fact.statement_type), statement)
        _add(by_authority, (*key, fact.authority_level), statement)
    # A statement none of whose answers was judged (every one failed at generation) has no verdict, so no fact
    # above: its counts are read from the summary, its type and authority from the judge run's spec.
    classes = StatementClasses()
    for (folder, cell), statements in seen.items():
        summary = summaries[folder]
        assert summary is not None  # (only folders with a summary are in `seen`)
        for statement_id, counts in summary.skipped_by_statement.items():
            if statement_id not in statements:
                kind, authority = classes.lookup(folder, statement_id)
                _add(per_statement, (*cell, statement_id), counts)
                _add(by_type, (*cell, kind), counts)
                _add(by_authority, (*cell, authority), counts)
    return SkippedAnswers(
        pooled=_named(pooled),
        per_statement=_named(per_statement),
        by_type=_named(by_type),
        by_authority=_named(by_authority),
    )


def answers_never_judged(paths: list[Path]) -> Counter[str]:
    """Every compliance judge summary's skipped answers under `paths`, by generation outcome (an export of the
    verdicts has no row for them: it says how many there were)."""
    total: Counter[str] = Counter()
    for root in paths:
        for path in sorted(Path(root).rglob(SUMMARY_NAME)):
            summary = None if ".emulator" in path.parts else _summary(path)
            if summary is not None:
                total.update({k: v for k, v in summary.skipped_answers.items() if v})
    return total


Row = TypeVar("Row", bound=BaseModel)


def with_skipped(rows: list[Row], counts: dict[Key, dict[str, int]], *fields: str) -> list[Row]:
    """`rows` with the answers not judged of their key (`fields` of the row, in `Key` order) added to `not_judged`:
    by outcome where it counts by outcome, else to its count (a category's share)."""
    found = []
    for row in rows:
        extra = counts.get(tuple(str(getattr(row, f)) for f in fields))
        if extra:
            current: dict[str, int] | int = row.model_dump(include={"not_judged"})["not_judged"]
            added = {**current, **extra} if isinstance(current, dict) else current + sum(extra.values())
            row = row.model_copy(update={"not_judged": added})
        found.append(row)
    return found


def with_never_judged(
    rows: list[Row], counts: dict[Key, dict[str, int]], fields: tuple[str, ...], empty: Callable[[Key], Row]
) -> list[Row]:
    """`rows` with a row for each key of `counts` that has none (`fields` of a row, in `Key` order), in a cell
    (the key's first four: spec, judge, candidate, variation) that has rows: a statement, type or authority none of
    whose answers was judged, its failed answers in `not_judged`, after its cell's rows. `empty(key)` is that key's
    row of no verdicts (a cell without rows is a judge of another kind, e.g. categories: no rate of its own here)."""
    keys = [tuple(str(getattr(row, f)) for f in fields) for row in rows]
    have = set(keys)
    missing: dict[Key, list[Key]] = {}
    for key in counts:
        if key not in have:
            missing.setdefault(key[:4], []).append(key)
    if not missing:
        return rows
    found: list[Row] = []
    for index, (row, key) in enumerate(zip(rows, keys, strict=True)):
        found.append(row)
        last = index + 1 == len(rows) or keys[index + 1][:4] != key[:4]
        for absent in sorted(missing.pop(key[:4], [])) if last else ():
            found.append(with_skipped([empty(absent)], counts, *fields)[0])
    return found


def _summary(path: Path) -> _JudgeSummary | None:
    if not path.is_file():
        return None
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"unreadable judge summary: {exc}") from None
    if not isinstance(data, dict) or "skipped_answers" not in data:
        return None  # a generation or ranking run's summary: not a compliance judge's
    try:
        return _JudgeSummary.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise InputError(path, error["msg"], field=field) from None


def _add(into: dict[Key, Counter[str]], key: Key, counts: dict[str, int]) -> None:
    if any(counts.values()):
        into.setdefault(key, Counter()).update({k: v for k, v in counts.items() if v})


def _named(counts: dict[Key, Counter[str]]) -> dict[Key, dict[str, int]]:
    return {key: {f"{PREFIX}{outcome}": n for outcome, n in sorted(c.items())} for key, c in counts.items()}

"""How `speceval export --format inspect` splits one log (a spec, candidate, variation and run) into parts of at
most `max_samples` samples, and the whole log's rates every part carries (issue 37: an export within 2x the
generation engine's memory).

A `.eval` file ends with a summary of every sample it holds, which its writer keeps until the file is done (about
2.5 KB of JSON each in `inspect_zip` at the benchmarks' texts; inspect_ai's recorder kept about 3 KB each as
objects), and a sample is made from its verdicts' rows with their texts: one log of 10^5 samples held 2.3 GB through
inspect_ai's recorder. A part holds only its own samples, so memory is bounded by `max_samples`, not by the log.

One streamed pass over the log's results files (a file at a time, never its rows kept) folds its verdicts into
columns, as the report does (`speceval.analysis.reading.fold`), for each judge's and the panel's rate with the
report's interval, and notes each statement's sample keys (original index, turn) as 8-byte numbers. The log's
samples, in their order (statement, original index, turn), are then cut into consecutive runs of at most
`max_samples`: a part is a range of that order, so sample ids stay unique across parts and a part reads only the
files of the statements its range spans.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from speceval.analysis.reading.columns import ColumnsBuilder, VerdictColumns
from speceval.analysis.reading.load import walk
from speceval.analysis.reading.rows import ComplianceRow, Found
from speceval.analysis.tables.panel import panel_verdicts
from speceval.defaults import Mode
from speceval.errors import InputError
from speceval.interop.inspect_rates import RateFold
from speceval.interop.inspect_scores import SampleKey, panel_names

MAX_SAMPLES_PER_LOG = 2_000
"""Samples in one log file (`--max-samples-per-log`): a larger log is written as several parts. Measured in
benchmarks/RESULTS.md ("Exports at scale")."""


@dataclass(frozen=True)
class Part:
    """The samples of one part: the statements it spans, each with the first and last sample key it holds."""

    ranges: dict[str, tuple[int, int]]
    samples: int

    def holds(self, key: SampleKey) -> bool:
        statement, index, epoch = key
        bounds = self.ranges.get(statement)
        return bounds is not None and bounds[0] <= _code(index, epoch) <= bounds[1]


@dataclass(frozen=True)
class PartOf:
    """Which part of which log a file is (`eval.metadata["speceval"]["part"]`)."""

    number: int
    parts: int
    log: str


@dataclass
class LogPlan:
    """One log: its results files (each with its first verdict, as the survey read it), its whole rates, and its
    parts. What every part's header says of the log comes from here, never from the part's own verdicts."""

    files: dict[Path, ComplianceRow] = field(default_factory=dict)
    rates: dict[str, dict[str, Any]] = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)
    last_turns: dict[str, int] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return sum(part.samples for part in self.parts)

    @property
    def judges(self) -> list[str]:
        return sorted({first.judge for first in self.files.values()})

    def turns(self) -> dict[str, int]:
        """Each per-turn judge's last judged turn anywhere in the log (its scores are named by turn)."""
        return dict(self.last_turns)

    def modes(self) -> dict[str, str]:
        return {first.judge: first.mode for first in self.files.values()}

    def judge_folders(self) -> dict[str, Path]:
        """Each judge's run folder (the first in path order, should one judge have judged the run twice)."""
        folders: dict[str, Path] = {}
        for file in sorted(self.files):
            folders.setdefault(self.files[file].judge, file.parent.parent)
        return folders

    def synthetic(self) -> bool:
        return any(first.synthetic for first in self.files.values())

    def prompt_versions(self) -> list[str]:
        return sorted({first.prompt_version for first in self.files.values()})

    def folders(self) -> list[Path]:
        """The judge folders the log's files lie in (what `walk` is given)."""
        return sorted({file.parent.parent for file in self.files})

    def part_verdicts(self, part: Part) -> Iterator[tuple[ComplianceRow, Path]]:
        """The verdicts (with their detail) of one part, read from the files of its statements only (the others
        are not opened)."""
        wanted = {file for file, first in self.files.items() if first.statement_id in part.ranges}
        for file, rows, _ in walk(self.folders(), Found(), detail=True, keep=False, only=wanted):
            for row in rows:
                if part.holds(_key(row, file)):
                    yield row, file


def plan_log(files: dict[Path, ComplianceRow], max_samples: int) -> LogPlan:
    """Read the log's `files` (results file → its first verdict) once, a statement at a time (all judges' files of
    it together): the whole log's rates (`inspect_rates`: a few sums per statement) and its parts, cut as the
    statements go by. Memory follows the largest statement, not the log."""
    plan = LogPlan(files=files)
    # judge → its verdicts are rated apart (per turn or categorical): known from each file's first verdict
    scoped: dict[str, bool] = {}
    by_statement: dict[str, set[Path]] = defaultdict(set)
    for file, first in files.items():
        separate = first.turn is not None or first.mode == Mode.CATEGORIES
        scoped[first.judge] = scoped.get(first.judge, False) or separate
        by_statement[first.statement_id].add(file)
    modes = plan.modes()
    rated = sorted(judge for judge in scoped if not scoped[judge])
    panels = panel_names({judge: modes[judge] for judge in rated})
    folds = {name: RateFold() for name in [*rated, *panels]}
    paneled = dict.fromkeys(panels, False)
    parts = _PartCutter(max_samples)
    for statement in sorted(by_statement):
        builder = ColumnsBuilder()
        keys: array[int] = array("q")
        for file, rows, offsets in walk(plan.folders(), Found(), detail=True, keep=False, only=by_statement[statement]):
            first = files[file]
            noted = _noting(rows, file, keys)
            if first.turn is not None:  # per-turn verdicts are never pooled with answers' (as the report's fold)
                last = plan.last_turns.get(first.judge, 0)
                for row in noted:
                    last = max(last, row.turn or 0)
                plan.last_turns[first.judge] = last
            else:
                builder.add_file(file, noted, offsets)
        _fold_statement(builder.build(), folds, panels, paneled)
        parts.add(statement, np.unique(np.frombuffer(keys, dtype=np.int64)))
    plan.rates = {
        judge: {"note": "per-turn or categorical verdicts: see the report's per-turn and category tables"}
        for judge in scoped
        if scoped[judge]
    }
    for name, fold in folds.items():
        plan.rates[name] = (
            {"note": "no answer has verdicts of two judges"}
            if name in paneled and not paneled[name]
            else fold.summary()
        )
    plan.rates = dict(sorted(plan.rates.items(), key=lambda item: (item[0] in panels, item[0])))
    plan.parts = parts.finish()
    return plan


def _fold_statement(
    c: VerdictColumns, folds: dict[str, RateFold], panels: dict[str, list[str]], paneled: dict[str, bool]
) -> None:
    """One statement's verdicts (columns of every judge's file of it) into each judge's and each panel's fold."""
    if not len(c):
        return
    judges = c.fact("judge")
    for name, fold in folds.items():
        if name in panels:
            continue
        code = c.code_of("judge", name)
        if code is not None:
            fold.add(c, np.flatnonzero(judges == code))
    for name, panelists in panels.items():
        codes = [code for j in panelists if (code := c.code_of("judge", j)) is not None]
        chosen = np.flatnonzero(np.isin(judges, np.array(codes, dtype=np.int64)))
        panel = panel_verdicts(c.take(chosen)) if len(codes) > 1 and len(chosen) else None
        if panel is not None:
            paneled[name] = True
            folds[name].add(panel.verdicts, np.arange(len(panel.verdicts)))


def _noting(rows: Iterable[ComplianceRow], file: Path, keys: array[int]) -> Iterator[ComplianceRow]:
    for row in rows:
        _, index, epoch = _key(row, file)
        keys.append(_code(index, epoch))
        yield row


def _key(row: ComplianceRow, file: Path) -> SampleKey:
    index = row.detail.original_index if row.detail is not None else None
    if index is None:
        raise InputError(
            file,
            f"a verdict on {row.statement_id} has no original_index: it cannot be tied to its answer in an Inspect log",
            field="results.original_index",
        )
    return row.statement_id, index, row.run


_EPOCH_BITS = 16
"""A sample key as one number: original index << 16 | epoch (a log of an Inspect candidate's epochs holds each
answer once per epoch; any other log has one run)."""


def _code(index: int, epoch: int) -> int:
    return (index << _EPOCH_BITS) | epoch


class _PartCutter:
    """The log's samples in order (statement, then key), cut into consecutive parts of at most `max_samples`, a
    statement's sorted keys at a time (statements given in sorted order)."""

    def __init__(self, max_samples: int):
        self.max_samples = max_samples
        self.parts: list[Part] = []
        self.ranges: dict[str, tuple[int, int]] = {}
        self.room = max_samples

    def add(self, statement: str, codes: np.ndarray) -> None:
        start = 0
        while start < len(codes):
            taken = codes[start : start + self.room]
            self.ranges[statement] = (int(taken[0]), int(taken[-1]))
            start += len(taken)
            self.room -= len(taken)
            if self.room == 0:
                self.parts.append(Part(ranges=self.ranges, samples=self.max_samples))
                self.ranges, self.room = {}, self.max_samples

    def finish(self) -> list[Part]:
        if self.ranges:
            self.parts.append(Part(ranges=self.ranges, samples=self.max_samples - self.room))
            self.ranges, self.room = {}, self.max_samples
        return self.parts

"""How `speceval export --format inspect` splits one log (a spec, candidate, variation and run) into parts of at
most `max_samples` samples, and the whole log's rates every part carries (issue 37: an export within 2x the
generation engine's memory).

inspect_ai's `.eval` recorder keeps a summary of every sample it has written (about 3 KB each, inspect_ai 0.3.285),
and a sample is made from its verdicts' rows with their texts: one log of 10^5 samples held 2.3 GB. A part holds
only its own samples, so memory is bounded by `max_samples`, not by the log.

One streamed pass over the log's results files (a file at a time, never its rows kept) folds its verdicts into
columns, as the report does (`speceval.analysis.reading.fold`), for each judge's and the panel's rate with the
report's interval, and notes each statement's sample keys (original index, turn) as 8-byte numbers. The log's
samples, in their order (statement, original index, turn), are then cut into consecutive runs of at most
`max_samples`: a part is a range of that order, so sample ids stay unique across parts and a part reads only the
files of the statements its range spans.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from speceval.analysis.reading.columns import ColumnsBuilder
from speceval.analysis.reading.load import walk
from speceval.analysis.reading.rows import ComplianceRow, Found
from speceval.analysis.tables.panel import panel_verdicts
from speceval.analysis.tables.variations import summarize
from speceval.defaults import Mode
from speceval.errors import InputError
from speceval.interop.inspect_scores import RATE_FIELDS, SampleKey, panel_names

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
    """Read the log's `files` (results file → its first verdict) once: the whole log's rates and its parts."""
    plan = LogPlan(files=files)
    builder = ColumnsBuilder()
    keys: dict[str, array[int]] = defaultdict(lambda: array("q"))
    scoped: dict[str, bool] = {}  # judge → its verdicts are rated apart (per turn or categorical)
    for file, rows, offsets in walk(plan.folders(), Found(), detail=True, keep=False):
        if file not in files:
            continue
        stream = iter(rows)
        first = next(stream, None)
        if first is None:
            continue
        separate = first.turn is not None or first.mode == Mode.CATEGORIES
        scoped[first.judge] = scoped.get(first.judge, False) or separate
        noted = _noting(itertools.chain([first], stream), file, keys[first.statement_id])
        if first.turn is not None:  # per-turn verdicts are never pooled with answers' (as the report's fold)
            last = plan.last_turns.get(first.judge, 0)
            for row in noted:
                last = max(last, row.turn or 0)
            plan.last_turns[first.judge] = last
        else:
            builder.add_file(file, noted, offsets)
    plan.rates = _rates(builder, scoped, plan.modes())
    plan.parts = _parts({s: np.unique(np.frombuffer(codes, dtype=np.int64)) for s, codes in keys.items()}, max_samples)
    return plan


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


def _rates(builder: ColumnsBuilder, scoped: dict[str, bool], modes: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each judge's rate in the whole log with the report's interval, and each panel's (`panel_names`: judges of
    the whole answer on one scale)."""
    c = builder.build()
    judges = c.fact("judge")
    rates: dict[str, dict[str, Any]] = {}
    for judge in sorted(scoped):
        if scoped[judge]:
            rates[judge] = {"note": "per-turn or categorical verdicts: see the report's per-turn and category tables"}
        else:
            members = np.flatnonzero(judges == c.code_of("judge", judge))
            rates[judge] = summarize(c, members).model_dump(include=RATE_FIELDS)
    for name, panelists in panel_names({j: modes[j] for j in scoped if not scoped[j]}).items():
        chosen = np.flatnonzero(np.isin(judges, np.array([c.code_of("judge", j) for j in panelists], dtype=np.int64)))
        panel = panel_verdicts(c.take(chosen)) if len(chosen) else None
        rates[name] = (
            {"note": "no answer has verdicts of two judges"}
            if panel is None
            else summarize(panel.verdicts).model_dump(include=RATE_FIELDS)
        )
    return rates


def _parts(keys: dict[str, np.ndarray], max_samples: int) -> list[Part]:
    """The log's samples in order (statement, then key), cut into consecutive parts of at most `max_samples`."""
    parts: list[Part] = []
    ranges: dict[str, tuple[int, int]] = {}
    room = max_samples
    for statement in sorted(keys):
        codes = keys[statement]
        start = 0
        while start < len(codes):
            taken = codes[start : start + room]
            ranges[statement] = (int(taken[0]), int(taken[-1]))
            start += len(taken)
            room -= len(taken)
            if room == 0:
                parts.append(Part(ranges=ranges, samples=max_samples))
                ranges, room = {}, max_samples
    if ranges:
        parts.append(Part(ranges=ranges, samples=max_samples - room))
    return parts

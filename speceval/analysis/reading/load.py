"""Every verdict under some folders, as flat typed rows. Model names come from the files' metadata only.

A verdict inside an experiment (a folder with `experiment.json` above it) is labelled with its variation and run
from the experiment's planned layout `<stage>/<spec>/<variation>/run<k>/...`; elsewhere it is variation `default`,
run 1. Statement type and authority level come from the spec the judge run recorded in its `run.json`.

This module finds and sorts the files; one file's entries become rows in `compliance_entries` and
`ranking_entries` (what both share: `entry_chunks`), and `verdict_reader` reads a few back by where `walk` found them.
"""

from __future__ import annotations

import json
import logging
import os
from array import array
from collections.abc import Callable, Container, Iterable, Iterator
from pathlib import Path
from typing import Any

from speceval.analysis.reading.checks import ANSWERS, EMPTY, distinct_roots, list_kind, run_kind
from speceval.analysis.reading.compliance_entries import StatementClasses, compliance_stream
from speceval.analysis.reading.entry_chunks import exported_where, parse_file, streams_verdicts
from speceval.analysis.reading.grid_place import GridFolders, grid_place
from speceval.analysis.reading.json_stream import read_json
from speceval.analysis.reading.original import is_original_likert, is_ratings_folder
from speceval.analysis.reading.ranking_entries import ranking_stream
from speceval.analysis.reading.rows import CanaryRow, ComplianceRow, Found, Location, RankingRow, Verdicts
from speceval.analysis.reading.settings import separate_row_settings
from speceval.errors import InputError
from speceval.judging.card_files import CARD_DIR, canary_share
from speceval.judging.files import CanaryFile

logger = logging.getLogger(__name__)


def load_verdicts(paths: Iterable[Path], *, detail: bool = False) -> Verdicts:
    """Read every compliance and ranking results file at or below `paths` (the original's ratings files too: see
    `_results_files`; with `detail`, each row's `VerdictDetail` too: raw judge answers, both answers of a ranking,
    original indices)."""
    found = Found()
    compliance: list[ComplianceRow] = []
    for _, rows, _ in walk(paths, found, detail):
        compliance.extend(rows)
    separate_row_settings(compliance)
    return Verdicts(compliance=compliance, **dict(found))


RankingSink = Callable[[Path, Iterator["RankingRow"], "array[int] | None"], None]
"""Takes one ranking results file's rows as they are read (validated a chunk at a time), before the next file,
and where each row's entry starts in the file (filled as they are read; None for a file decoded whole)."""


def walk(
    paths: Iterable[Path],
    found: Found,
    detail: bool = False,
    keep: bool = True,
    rankings: RankingSink | None = None,
    only: Container[Path] | None = None,
) -> Iterator[tuple[Path, Iterable[ComplianceRow], array[int] | None]]:
    """Every compliance results file (or original ratings file) at or below `paths` with its rows, one file at a time
    (so a caller can fold them and let them go: `keep` False, where a file's rows come as an iterator, validated a
    chunk at a time, to be consumed before the next file); canaries, settings, skipped files and folder kinds are
    gathered in `found`, and so are the ranking rows unless `rankings` takes each ranking file's rows, with their
    details, as they are read (a report folds them into columns: a row per comparison held was most of a ranking
    report's memory). `only`: the results files to read (the others are not opened: a reader that knows its files
    reads nothing else). With each compliance file, where each of its rows' entries starts in it (byte offsets,
    filled as the rows are read: `VerdictReader.at_offsets` reads them back), or None for a file decoded whole."""
    statements = StatementClasses(share_texts=keep)
    experiments: dict[Path, GridFolders] = {}
    locations: dict[Path, Location] = {}
    for path in paths:
        if not Path(path).exists():
            raise InputError(Path(path), "no such file or directory")
    for path in distinct_roots(paths):  # a folder given twice (or inside another given) is read once
        for file in _results_files(path):
            if CARD_DIR in file.relative_to(path).parts:
                continue  # the judge card's re-sent verdicts check the judge: never a candidate's rate (card_verdicts)
            if only is not None and file not in only:
                continue
            # closed however the caller leaves it
            with read_json(file, ("results", "rankings"), offsets=True) as streamed:
                source = _relative(file, path)
                data: object
                if streamed.head is None:  # a list: a generation run's answers, read through and let go
                    listed = list_kind(streamed.items)
                    if listed == ANSWERS or (listed == EMPTY and run_kind(file.parent.parent).startswith("generation")):
                        continue  # not verdicts, documented as such
                    data = []
                else:  # our compliance files are read a verdict at a time (metadata first, as `ComplianceFile` writes
                    # them), and so are its ranking files; everything else, small or rare, is decoded whole
                    data = streamed.head if streams_verdicts(streamed) else streamed.whole()
                ranking = isinstance(data, dict) and (
                    "rankings" in data or streamed.key == "rankings" and streamed.pending
                )
                likert = isinstance(data, dict) and is_ratings_folder(file.parent) and is_original_likert(data)
                if isinstance(data, dict) and "canaries" in data and "metadata" in data:
                    found.canaries.extend(_canary_rows(file, data, source, _offline(file.parent.parent) is True))
                    continue
                if not isinstance(data, dict) or not (
                    ranking or likert or (("results" in data or streamed.pending) and "metadata" in data)
                ):
                    reason = (
                        "an empty JSON list, outside a generation run: no verdicts (a judge's results file "
                        "is an object with 'metadata' and 'results' or 'rankings')"
                        if isinstance(data, list) and listed == EMPTY
                        else "a JSON list that is not a generation run's results"
                        if isinstance(data, list)
                        else "no 'rankings', or no 'results' and 'metadata'"
                    )
                    logger.warning("skipped %s: not a results file (%s)", source, reason)
                    found.skipped.append(f"{source}: {reason}")
                    continue
                if file.parent not in locations:  # every file of one results folder sits in the same place
                    locations[file.parent] = locate(file, experiments).model_copy(
                        update={"synthetic": _offline(file.parent.parent) is True}
                    )
                where = exported_where(data, locations[file.parent])
                found.settings.setdefault(where.variation, where.settings)
                if ranking:
                    entries = streamed.items if streamed.pending else data["rankings"]
                    ranking_rows = ranking_stream(file, data, entries, where, source, detail, statements.candidates)
                    if rankings is None:
                        found.rankings.extend(ranking_rows)
                    else:
                        rankings(file, ranking_rows, streamed.offsets if streamed.pending else None)
                    del data, entries
                else:
                    entries = streamed.items if streamed.pending else data["judgements" if likert else "results"]
                    offsets = streamed.offsets if streamed.pending else None
                    if keep:
                        rows: Iterable[ComplianceRow] = list(
                            compliance_stream(file, data, entries, where, source, statements, detail)
                        )
                    else:  # a fold takes the rows as they are validated (see `compliance_stream`)
                        rows = compliance_stream(file, data, entries, where, source, statements, detail)
                    del data, entries  # the parsed file goes before the next is read
                    yield file, rows, offsets


def _results_files(root: Path) -> list[Path]:
    """The results files at or below `root`, in order: every `results/*.json`, and the original's ratings files
    (`JUDGE_<…>/<date>/<evaluator>x<candidate>/<statement>.json`: no `results/` folder)."""
    found: list[Path] = []
    for folder, _, names in os.walk(root):  # one walk for both (two globs took 3x one's time)
        here = Path(folder)
        if here.name == "results" or is_ratings_folder(here):
            found.extend(f for f in (here / name for name in names) if f.suffix == ".json")
    return sorted(found)


def _canary_rows(file: Path, data: dict[str, Any], source: str, synthetic: bool) -> list[CanaryRow]:
    parsed = parse_file(file, data, CanaryFile, "canaries")
    m = parsed.metadata
    share = canary_share(file.parent.parent)
    # The same verdicts under every judge entry they stand for, each saying whose they are.
    entries = [(m.judge, None)] + [
        (other, m.judge) for other in (share.shared_with if share else []) if other != m.judge
    ]
    return [
        CanaryRow(
            spec=m.spec,
            judge=judge,
            shared_from=shared_from,
            statement_id=m.statement_id,
            example=e.example,
            kind=e.kind,
            mode=str(m.mode),
            outcome=str(e.outcome),
            compliant=e.compliant,
            rating=e.rating,
            correct=e.correct,
            source=source,
            synthetic=synthetic,
        )
        for judge, shared_from in entries
        for e in parsed.canaries
    ]


def _offline(run_dir: Path) -> bool | None:
    """Whether the run that wrote `run_dir` ran offline (None: no readable run.json, e.g. the original's layout)."""
    try:
        manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return bool(manifest.get("offline", False)) if isinstance(manifest, dict) else None


def locate(file: Path, experiments: dict[Path, GridFolders] | None = None) -> Location:
    """The variation and run of a results file, from the experiment folder above it (if any; see
    `speceval.analysis.reading.grid_place`). `experiments` caches each experiment.json read across the files of one
    report."""
    place = grid_place(file, {} if experiments is None else experiments)
    if place is None:
        return Location()
    return Location(variation=place.variation, settings=place.settings, run=place.run)


def _relative(file: Path, root: Path) -> str:
    """The file's path relative to the folder the report was asked about (no machine-specific prefix)."""
    base = root if root.is_dir() else root.parent
    return file.relative_to(base).as_posix()

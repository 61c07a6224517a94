"""Every verdict under some folders, one at a time, with the variation the report gives it, for the commands that
write every verdict out (`speceval export`, `speceval label-sheet`): a million verdicts pass through in the memory
of one results file, never as a list of rows (issue 37; the report folds them into columns, `fold.py`).

The variation of a run outside an experiment depends on the other runs of its candidate (`settings.py`: runs made
with different settings are told apart), so the folders are read twice: a survey first, which reads the first
verdict of each results file (speceval's own files are read as a stream, so the rest of the file is not decoded),
then the verdicts themselves. Rankings, which `walk` hands over file by file while it reads, are spooled to a
temporary file and given after the compliance verdicts, in the order `load_verdicts` lists them.
"""

from __future__ import annotations

import pickle
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from speceval.analysis.reading.load import walk
from speceval.analysis.reading.rows import DEFAULT_VARIATION, CanaryRow, ComplianceRow, Found, RankingRow
from speceval.analysis.reading.settings import mixed_settings, settings_variation


@dataclass
class Survey:
    """What a first look at every results file tells: which runs outside an experiment are reported apart, the
    (variation, run) of every file as reported, and how many files of each kind hold verdicts."""

    mixed: set[tuple[str, str, str]] = field(default_factory=set)
    grids: set[tuple[str, int]] = field(default_factory=set)
    compliance_files: int = 0
    ranking_files: int = 0
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    firsts: list[tuple[Path, ComplianceRow]] = field(default_factory=list)
    """Each compliance results file with its first verdict (texts left out)."""
    canaries: list[CanaryRow] = field(default_factory=list)
    """The spec's examples as each judge judged them (a small file per judge and statement: the judge card's)."""

    def variation(self, row: ComplianceRow) -> str:
        """The variation the report gives a compliance verdict (see `settings.separate_row_settings`)."""
        if row.variation == DEFAULT_VARIATION and (row.spec, row.judge, row.model) in self.mixed:
            return settings_variation(row.candidate_settings)
        return row.variation


def survey(paths: Sequence[Path]) -> Survey:
    """Look at the first verdict of every results file under `paths`."""
    found = Found()
    kinds: dict[tuple[str, str, str], set[str | None]] = defaultdict(set)
    done = Survey()

    def first_ranking(_: Path, rows: Iterator[RankingRow], __: Any) -> None:
        row = next(rows, None)  # the rest of the file is not read
        if row is not None:
            done.ranking_files += 1
            done.grids.add((row.variation, row.run))

    for file, rows, _ in walk(paths, found, keep=False, rankings=first_ranking):
        row = next(iter(rows), None)
        if row is None:
            continue
        done.firsts.append((file, row.model_copy(update={"input": "", "output": "", "explanation": None})))
        if row.variation == DEFAULT_VARIATION:
            kinds[(row.spec, row.judge, row.model)].add(row.candidate_settings)
    done.mixed = mixed_settings(kinds)
    done.compliance_files = len(done.firsts)
    done.grids |= {(done.variation(row), row.run) for _, row in done.firsts}
    done.settings = found.settings
    done.canaries = found.canaries
    return done


def streamed_verdicts(
    paths: Sequence[Path], plan: Survey, *, detail: bool = False, rankings: bool = True
) -> Iterator[ComplianceRow | RankingRow]:
    """Every compliance verdict (its variation as the report gives it), then every comparison (unless `rankings`
    is false: the ranking files are then not read past their first entries), one at a time."""
    found = Found()
    with tempfile.TemporaryFile(prefix="speceval-rankings-") as spool:
        count = [0]

        def spooled(_: Path, rows: Iterator[RankingRow], __: Any) -> None:
            for row in rows if rankings else ():
                pickle.dump(row, spool, protocol=pickle.HIGHEST_PROTOCOL)
                count[0] += 1

        for _, rows, _ in walk(paths, found, detail=detail, keep=False, rankings=spooled):
            for row in rows:
                variation = plan.variation(row)
                yield row if variation == row.variation else row.model_copy(update={"variation": variation})
        spool.seek(0)
        yield from _unspooled(spool, count[0])


def _unspooled(spool: IO[bytes], count: int) -> Iterator[RankingRow]:
    for _ in range(count):
        yield pickle.load(spool)  # our own spool, written just now by this process

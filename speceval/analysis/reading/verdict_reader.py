"""The few verdicts a report shows, read back from their results files, each alone at the byte offset where its
entry starts or by its position (split from `load`, whose `walk` found the offsets while it read the files).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from speceval.analysis.reading.compliance_entries import StatementClasses, compliance_stream
from speceval.analysis.reading.entry_chunks import streams_verdicts
from speceval.analysis.reading.json_stream import READ_BACK_CHUNK, elements_at, read_json
from speceval.analysis.reading.ranking_entries import ranking_stream
from speceval.analysis.reading.rows import ComplianceRow, Location, RankingRow
from speceval.errors import InputError


class VerdictReader:
    """Reads the verdicts the sample view shows back from their compliance results files (the spec and candidate
    settings looked up once for all of them)."""

    def __init__(self) -> None:
        self._statements = StatementClasses(share_texts=False)

    def at_offsets(self, file: Path, offsets: list[int]) -> list[ComplianceRow]:
        """The rows of the entries that start at `offsets` (as `walk` gave them), in the order asked, each read
        alone: a few verdicts of a file of thousands without decoding the rest of it."""
        with read_json(file, "results", chunk=READ_BACK_CHUNK) as streamed:  # the metadata before the entries
            head = streamed.head
            pending = streamed.pending
        if head is None or not pending:
            raise InputError(
                file,
                "not the compliance results file it was a moment ago (it changed while the "
                "report was made); make the report again",
            )
        entries = list(elements_at(file, offsets))
        return list(compliance_stream(file, head, entries, Location(), file.name, self._statements, whole=False))

    def at_positions(self, file: Path, positions: list[int]) -> dict[int, ComplianceRow]:
        """The rows at `positions` of a file decoded whole (written in another key order), reading it through:
        only the entries wanted are kept, validated and built."""
        chosen = sorted(set(positions))
        kept: list[Any] = []
        count = 0
        with read_json(file, ("results", "judgements")) as streamed:  # (`judgements`: the original's ratings)
            if streamed.pending:  # (a compliance file's `results`, read through: only the entries shown are kept)
                wanted_at = set(chosen)
                for count, entry in enumerate(streamed.items, start=1):
                    if count - 1 in wanted_at:
                        kept.append(entry)
        head = streamed.head
        if head is None or max(chosen, default=0) >= count:
            raise InputError(
                file,
                "not the compliance results file it was a moment ago (it changed while the "
                "report was made); make the report again",
            )
        if streamed.key == "judgements":
            head = {**head, "judgements": kept}
        rows = list(compliance_stream(file, head, kept, Location(), file.name, self._statements, whole=False))
        return dict(zip(chosen, rows, strict=True))


def ranking_file_rows(wanted: dict[Path, list[int]]) -> Iterator[tuple[Path, dict[int, RankingRow]]]:
    """Of each ranking results file, the rows (with their `VerdictDetail`: both answers, explanation, raw answer)
    at the wanted positions: the report's ranking samples read back the comparisons they show with this. A file
    as speceval writes it is read through and only those entries are validated; an original SpecEval file is read
    whole (its comparisons are numbered by its sorted inputs)."""
    for file, positions in wanted.items():
        chosen = sorted(set(positions))
        with read_json(file, "rankings") as streamed:
            head, streams = streamed.head, streams_verdicts(streamed)
            if streams:
                wanted_at = set(chosen)
                entries: list[Any] = [entry for at, entry in enumerate(streamed.items) if at in wanted_at]
            else:
                data = streamed.whole()
                entries = data.get("rankings") if isinstance(data, dict) else None  # type: ignore[assignment]
        if (
            head is None
            or not isinstance(entries, list)
            or len(entries) < (len(chosen) if streams else max(chosen, default=-1) + 1)
        ):
            raise InputError(
                file,
                "not the ranking results file it was a moment ago (it changed while the report "
                "was made); make the report again",
            )
        rows = list(ranking_stream(file, head, entries, Location(), file.name, detail=True))
        yield file, dict(zip(chosen, rows if streams else [rows[at] for at in chosen], strict=True))


def ranking_rows_at(file: Path, offsets: list[int]) -> list[RankingRow]:
    """The rows (with their `VerdictDetail`) of the comparisons of a ranking results file that start at `offsets`
    (as `walk` gave them), in the order asked, each read alone (see `VerdictReader.at_offsets`)."""
    with read_json(file, "rankings", chunk=READ_BACK_CHUNK) as streamed:  # the metadata before the entries
        head, pending = streamed.head, streamed.pending
    if head is None or not pending:
        raise InputError(
            file,
            "not the ranking results file it was a moment ago (it changed while the report was "
            "made); make the report again",
        )
    return list(ranking_stream(file, head, list(elements_at(file, offsets)), Location(), file.name, detail=True))

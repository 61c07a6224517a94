"""Every verdict under some folders, as flat typed rows. Model names come from the files' metadata only.

A verdict inside an experiment (a folder with `experiment.json` above it) is labelled with its variation and run
from the experiment's planned layout `<stage>/<spec>/<variation>/run<k>/...`; elsewhere it is variation `default`,
run 1. Statement type and authority level come from the spec the judge run recorded in its `run.json`.
"""

from __future__ import annotations

import itertools
import json
import logging
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from speceval.analysis.reading.checks import ANSWERS, EMPTY, EntryChecks, distinct_roots, list_kind, run_kind
from speceval.analysis.reading.grid_place import GridFolders, grid_place
from speceval.analysis.reading.json_stream import READ_BACK_CHUNK, StreamedJson, elements_at, read_json
from speceval.analysis.reading.original import (
    compliance_records,
    is_original_compliance,
    is_original_ranking,
    ranking_records,
)
from speceval.analysis.reading.rows import (
    UNKNOWN,
    CanaryRow,
    ComplianceRow,
    Found,
    Location,
    RankingRow,
    VerdictDetail,
    Verdicts,
    built,
    built_row,
)
from speceval.analysis.reading.settings import CandidateSettings, separate_row_settings
from speceval.errors import InputError, UsageError
from speceval.inputs.script import ChatMessage
from speceval.judging.files import (
    CanaryFile,
    ComplianceEntry,
    ComplianceFile,
    ComplianceMetadata,
    RankingEntry,
    RankingFile,
)
from speceval.spec import load_spec

logger = logging.getLogger(__name__)


def load_verdicts(paths: Iterable[Path], *, detail: bool = False) -> Verdicts:
    """Read every compliance and ranking results file at or below `paths` (with `detail`, each row's
    `VerdictDetail` too: raw judge answers, both answers of a ranking, original indices)."""
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
    paths: Iterable[Path], found: Found, detail: bool = False, keep: bool = True, rankings: RankingSink | None = None
) -> Iterator[tuple[Path, Iterable[ComplianceRow], array[int] | None]]:
    """Every compliance results file at or below `paths` with its rows, one file at a time (so a caller can fold
    them and let them go: `keep` False, where a file's rows come as an iterator, validated a chunk at a time, to be
    consumed before the next file); canaries, settings, skipped files and folder kinds are gathered in `found`,
    and so are the ranking rows unless `rankings` takes each ranking file's rows, with their details, as they are
    read (a report folds them into columns: a row per comparison held was most of a ranking report's memory).
    With each compliance file, where each of its rows' entries starts in it (byte offsets, filled as the rows are
    read: `VerdictReader.at_offsets` reads them back), or None for a file decoded whole."""
    statements = _StatementClasses(share_texts=keep)
    experiments: dict[Path, GridFolders] = {}
    locations: dict[Path, Location] = {}
    for path in paths:
        if not Path(path).exists():
            raise InputError(Path(path), "no such file or directory")
    for path in distinct_roots(paths):  # a folder given twice (or inside another given) is read once
        for file in sorted(path.rglob("results/*.json")):
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
                    data = streamed.head if _streams_verdicts(streamed) else streamed.whole()
                ranking = isinstance(data, dict) and (
                    "rankings" in data or streamed.key == "rankings" and streamed.pending
                )
                if isinstance(data, dict) and "canaries" in data and "metadata" in data:
                    found.canaries.extend(_canary_rows(file, data, source, _offline(file.parent.parent) is True))
                    continue
                if not isinstance(data, dict) or not (
                    ranking or (("results" in data or streamed.pending) and "metadata" in data)
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
                where = locations[file.parent]
                found.settings.setdefault(where.variation, where.settings)
                if ranking:
                    entries = streamed.items if streamed.pending else data["rankings"]
                    ranking_rows = _ranking_stream(file, data, entries, where, source, detail, statements.candidates)
                    if rankings is None:
                        found.rankings.extend(ranking_rows)
                    else:
                        rankings(file, ranking_rows, streamed.offsets if streamed.pending else None)
                    del data, entries
                else:
                    entries = streamed.items if streamed.pending else data["results"]
                    offsets = streamed.offsets if streamed.pending else None
                    if keep:
                        rows: Iterable[ComplianceRow] = list(
                            _compliance_stream(file, data, entries, where, source, statements, detail)
                        )
                    else:  # a fold takes the rows as they are validated (see `_compliance_stream`)
                        rows = _compliance_stream(file, data, entries, where, source, statements, detail)
                    del data, entries  # the parsed file goes before the next is read
                    yield file, rows, offsets


class VerdictReader:
    """Reads the verdicts the sample view shows back from their compliance results files (the spec and candidate
    settings looked up once for all of them)."""

    def __init__(self) -> None:
        self._statements = _StatementClasses(share_texts=False)

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
        return list(_compliance_stream(file, head, entries, Location(), file.name, self._statements))

    def at_positions(self, file: Path, positions: list[int]) -> dict[int, ComplianceRow]:
        """The rows at `positions` of a file decoded whole (written in another key order), reading it through:
        only the entries wanted are kept, validated and built."""
        chosen = sorted(set(positions))
        kept: list[Any] = []
        count = 0
        with read_json(file, "results") as streamed:
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
        rows = list(_compliance_stream(file, head, kept, Location(), file.name, self._statements))
        return dict(zip(chosen, rows, strict=True))


def _streams_verdicts(streamed: StreamedJson) -> bool:
    """A compliance or ranking results file as speceval writes it: its metadata (naming the judge: not the
    original's) comes before `results` or `rankings`, which can then be read a verdict at a time."""
    head = streamed.head
    if head is None:
        return False
    metadata = head.get("metadata")
    return bool(
        streamed.pending
        and isinstance(metadata, dict)
        and "judge" in metadata
        and "rankings" not in head
        and "canaries" not in head
    )


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


class _StatementClasses:
    """statement id → (type, authority level) for the spec a judge run recorded; specs are read once."""

    def __init__(self, share_texts: bool = True) -> None:
        self._share = share_texts
        self._specs: dict[str, dict[str, tuple[str, str]]] = {}
        self.candidates = CandidateSettings()
        self._texts: dict[str, str] = {}

    def shared(self, text: str) -> str:
        """One str object per distinct input or answer: every judge's verdict on an answer, and every candidate's
        on an input, then holds the same text instead of a copy per results file. Without `share_texts` (a fold,
        which lets every text go with its file) each text is returned as it is: a table of them would hold them all."""
        return self._texts.setdefault(text, text) if self._share else text

    def lookup(self, run_dir: Path, statement_id: str) -> tuple[str, str]:
        manifest = run_dir / "run.json"
        try:
            spec_path = str(json.loads(manifest.read_text(encoding="utf-8"))["spec_path"])
        except (OSError, ValueError, KeyError, TypeError):
            return UNKNOWN, UNKNOWN
        if spec_path not in self._specs:
            try:
                spec = load_spec(spec_path)
            except (OSError, UsageError):
                logger.warning("cannot read the spec %s of %s: statement types are unknown", spec_path, run_dir)
                self._specs[spec_path] = {}
            else:
                self._specs[spec_path] = {
                    s.id: (str(s.type.value), str(s.authority_level.value)) for s in spec.statements
                }
        return self._specs[spec_path].get(statement_id, (UNKNOWN, UNKNOWN))


_File = TypeVar("_File", ComplianceFile, RankingFile, CanaryFile)


def _parse(file: Path, data: dict[str, Any], model: type[_File], what: str) -> _File:
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
"""Verdicts of a results file validated at a time by `_compliance_stream`: a validated entry copies its texts, so
a file of 5,000 verdicts validated whole held every text twice (500 at a time: 2.6 KB a verdict of one file of
3,000 at the fold's peak, against 370 bytes with 100)."""
_ENTRIES: TypeAdapter[list[ComplianceEntry]] = TypeAdapter(list[ComplianceEntry])


def _compliance_stream(
    file: Path,
    data: dict[str, Any],
    results: object,
    where: Location,
    source: str,
    statements: _StatementClasses,
    detail: bool = False,
) -> Iterator[ComplianceRow]:
    """The rows of one compliance results file (`data`: its other keys; `results`: its entries, a list or read
    from the file as they come), validated `ENTRY_CHUNK` entries at a time; each chunk's parsed entries are let go
    once its rows are built, so a caller that folds rows as they come holds one chunk, not the file. A bad entry
    raises `InputError` naming it (`results.<i>.<field>`)."""
    if is_original_compliance({**data, "results": results}):
        names, records = compliance_records(file, {**data, "results": results})
        common = {
            **names,
            "variation": where.variation,
            "run": where.run,
            "mode": "binary",
            "prompt_version": "speceval-original",
            "source": source,
            "synthetic": where.synthetic or exported_synthetic(data),
        }
        yield from (
            ComplianceRow.model_validate({**common, **record, "detail": record["detail"] if detail else None})
            for record in records
        )
        return
    m = _parse(file, {**data, "results": []}, ComplianceFile, "compliance").metadata
    if not isinstance(results, list | Iterator):  # (an iterator: the file's entries, read as they come)
        _parse(file, {**data, "results": results}, ComplianceFile, "compliance")  # raises, naming the field
        return
    kind, authority = statements.lookup(file.parent.parent, m.statement_id)
    settings = statements.candidates.label(m.candidate_dir)
    answers = (
        m.answers_synthetic if m.answers_synthetic is not None else statements.candidates.offline(m.candidate_dir)
    )  # a file from before the answers' flag was written: their run.json, if it is still there
    where = where.model_copy(update={"synthetic": where.synthetic or answers}) if answers else where
    checks, position = EntryChecks(file, m), 0
    for validated in _validated_chunks(file, results, _ENTRIES, "results", "compliance"):
        for entry in validated:
            checks.check(position, entry)
            position += 1
        yield from _rows_of(validated, m, where, source, kind, authority, settings, statements, detail)
    checks.done()


_Entry = TypeVar("_Entry", ComplianceEntry, RankingEntry)


def _located(key: str, start: int, loc: tuple[int | str, ...]) -> str:
    """`<key>.<i>.<field>` of a validation error in a chunk of entries that starts at entry `start`."""
    return ".".join([key, *(str(start + p) if i == 0 and isinstance(p, int) else str(p) for i, p in enumerate(loc))])


def _validated_chunks(
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


def _rows_of(
    entries: list[ComplianceEntry],
    m: ComplianceMetadata,
    where: Location,
    source: str,
    kind: str,
    authority: str,
    settings: str | None,
    statements: _StatementClasses,
    detail: bool,
) -> list[ComplianceRow]:
    # The entries were validated just now: rows are built without validating each field again, and all of them
    # share one fields-set (a per-row set was a fifth of a row's memory). The values are what validation gives;
    # what every row of the file shares is laid out once (a million verdicts: seconds less than naming 25 fields
    # per row).
    common = {
        "spec": m.spec,
        "variation": where.variation,
        "run": m.run or where.run,
        "statement_type": kind,
        "authority_level": authority,
        "judge": m.judge,
        "model": m.model,
        "statement_id": m.statement_id,
        "mode": str(m.mode),
        "source": source,
        "synthetic": where.synthetic,
        "candidate_settings": settings,
        "score": None,
        "detail": None,
    }
    shared, version = statements.shared, m.prompt_version
    rows = []
    for e in entries:
        outcome = str(e.outcome)
        values = {
            **common,
            "explanation": e.explanation,
            "prompt_version": e.prompt_version or version,
            "input": shared(e.input),
            "output": shared(e.output),
            "outcome": outcome,
            "compliant": e.compliant,
            "confidence": e.confidence,
            "rating": None if e.rating is None else float(e.rating),
            "category": e.category,
            "problem": None if outcome == "judged" else _problem(e),
            "turn": e.turn,
            "transcript": e.conversation,
            "conversation": None if e.turn is None else e.original_index,
        }
        if detail:
            values["detail"] = VerdictDetail(
                original_index=e.original_index,
                raw_judge_response=e.raw_judge_response,
                parse_error=e.parse_error,
                conversation_id=e.conversation_id,
                ended_by=e.ended_by,
            )
        rows.append(built_row(values))
    return rows


def transcript_text(messages: list[ChatMessage] | None) -> str | None:
    """A transcript as readable text: `[user]` / `[assistant]` then the message, messages separated by a blank line."""
    if not messages:
        return None
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


def _canary_rows(file: Path, data: dict[str, Any], source: str, synthetic: bool) -> list[CanaryRow]:
    parsed = _parse(file, data, CanaryFile, "canaries")
    m = parsed.metadata
    return [
        CanaryRow(
            spec=m.spec,
            judge=m.judge,
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
        for e in parsed.canaries
    ]


def _problem(entry: Any) -> str | None:
    """`reason; raw answer: …` of a verdict that was not judged (None for a judged one)."""
    if str(entry.outcome) == "judged":
        return None
    reason = entry.parse_error or (entry.error.message if entry.error is not None else None) or str(entry.outcome)
    raw = entry.raw_judge_response
    return f"{reason}; the judge's raw answer: {raw}" if raw else f"{reason} (no answer from the judge)"


def ranking_file_rows(wanted: dict[Path, list[int]]) -> Iterator[tuple[Path, dict[int, RankingRow]]]:
    """Of each ranking results file, the rows (with their `VerdictDetail`: both answers, explanation, raw answer)
    at the wanted positions: the report's ranking samples read back the comparisons they show with this. A file
    as speceval writes it is read through and only those entries are validated; an original SpecEval file is read
    whole (its comparisons are numbered by its sorted inputs)."""
    for file, positions in wanted.items():
        chosen = sorted(set(positions))
        with read_json(file, "rankings") as streamed:
            head, streams = streamed.head, _streams_verdicts(streamed)
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
        rows = list(_ranking_stream(file, head, entries, Location(), file.name, detail=True))
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
    return list(_ranking_stream(file, head, list(elements_at(file, offsets)), Location(), file.name, detail=True))


_RANKINGS: TypeAdapter[list[RankingEntry]] = TypeAdapter(list[RankingEntry])
_RANKING_FIELDS = set(RankingRow.model_fields)
_DETAIL_FIELDS = set(VerdictDetail.model_fields)
_END = object()


def exported_synthetic(data: dict[str, Any]) -> bool:
    """An original-shaped file `speceval export --format original` wrote from synthetic verdicts (its metadata
    says so: the original's layout has no run.json to say it)."""
    metadata = data.get("metadata")
    return isinstance(metadata, dict) and metadata.get("synthetic") is True


def _ranking_stream(
    file: Path,
    data: dict[str, Any],
    entries: object,
    where: Location,
    source: str,
    detail: bool = False,
    candidates: CandidateSettings | None = None,
) -> Iterator[RankingRow]:
    """The rows of one ranking results file (`data`: its other keys; `entries`: its comparisons, a list or read
    from the file as they come), validated `ENTRY_CHUNK` at a time as `_compliance_stream` does. An original
    SpecEval file (no entry has our `outcome`) is read whole: its comparisons are numbered by its sorted inputs."""
    if isinstance(entries, Iterator):
        first = next(entries, _END)
        if first is _END or (isinstance(first, dict) and "outcome" not in first):
            entries = [] if first is _END else [first, *entries]  # perhaps the original's: every entry decides
        else:
            entries = itertools.chain([first], entries)
    if isinstance(entries, list) and is_original_ranking({**data, "rankings": entries}):
        names, records = ranking_records(file, {**data, "rankings": entries})
        common = {
            **names,
            "source": source,
            "variation": where.variation,
            "run": where.run,
            "synthetic": where.synthetic or exported_synthetic(data),
        }
        yield from (
            RankingRow.model_validate({**common, **record, "detail": record["detail"] if detail else None})
            for record in records
        )
        return
    m = _parse(file, {**data, "rankings": []}, RankingFile, "ranking").metadata
    if not isinstance(entries, list | Iterator):
        _parse(file, {**data, "rankings": entries}, RankingFile, "ranking")  # raises, naming the field
        return
    answers = (
        m.answers_synthetic
        if m.answers_synthetic is not None or candidates is None
        else (candidates.offline(m.candidate_dir_a) or candidates.offline(m.candidate_dir_b))
    )
    synthetic = where.synthetic or bool(answers)
    for validated in _validated_chunks(file, entries, _RANKINGS, "rankings", "ranking"):
        # Built as `built_row` builds verdicts (validated just now): `model_construct` was most of a fold's time.
        yield from (
            built(
                RankingRow,
                _RANKING_FIELDS,
                dict(
                    spec=m.spec,
                    judge=m.judge,
                    model_a=m.model_a,
                    model_b=m.model_b,
                    statement_id=m.statement_id,
                    index=e.index,
                    input=e.input,
                    outcome=str(e.outcome),
                    rank=e.rank,
                    source=source,
                    variation=where.variation,
                    run=where.run,
                    synthetic=synthetic,
                    detail=built(
                        VerdictDetail,
                        _DETAIL_FIELDS,
                        dict(
                            original_index=e.original_index_a,
                            original_index_b=e.original_index_b,
                            output_a=e.output_a,
                            output_b=e.output_b,
                            explanation=e.explanation,
                            raw_judge_response=e.raw_judge_response,
                            parse_error=e.parse_error,
                            transcript_a=transcript_text(e.conversation_a),
                            transcript_b=transcript_text(e.conversation_b),
                        ),
                    )
                    if detail
                    else None,
                ),
            )
            for e in validated
        )

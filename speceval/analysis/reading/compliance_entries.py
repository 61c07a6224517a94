"""One compliance results file's entries as `ComplianceRow`s, a chunk at a time (split from `load`, which finds
the files and hands each to `compliance_stream`): statement type and authority from the spec its judge run recorded,
candidate settings and whether the answers were synthetic from the candidate's run, the original SpecEval's files
too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from speceval.analysis.reading.checks import EntryChecks
from speceval.analysis.reading.entry_chunks import exported_rows, parse_file, validated_chunks
from speceval.analysis.reading.original import (
    compliance_records,
    is_original_compliance,
    is_original_likert,
    likert_records,
)
from speceval.analysis.reading.rows import UNKNOWN, ComplianceRow, Location, VerdictDetail, built_row
from speceval.analysis.reading.settings import CandidateSettings
from speceval.defaults import Mode
from speceval.errors import UsageError
from speceval.judging.files import ComplianceEntry, ComplianceFile, ComplianceMetadata
from speceval.spec import load_spec

logger = logging.getLogger(__name__)


class StatementClasses:
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


_ENTRIES: TypeAdapter[list[ComplianceEntry]] = TypeAdapter(list[ComplianceEntry])


def compliance_stream(
    file: Path,
    data: dict[str, Any],
    results: object,
    where: Location,
    source: str,
    statements: StatementClasses,
    detail: bool = False,
    whole: bool = True,
) -> Iterator[ComplianceRow]:
    """The rows of one compliance results file (`data`: its other keys; `results`: its entries, a list or read
    from the file as they come), validated `ENTRY_CHUNK` entries at a time; each chunk's parsed entries are let go
    once its rows are built, so a caller that folds rows as they come holds one chunk, not the file. A bad entry
    raises `InputError` naming it (`results.<i>.<field>`). `whole`: `results` is every entry of the file, so the
    checks across entries (a conversation's turns 1..n) apply; False for a few entries read back at their offsets
    (the file passed those checks when it was folded, and the read-back is checked against the fold)."""
    likert = is_original_likert(data)
    if likert or is_original_compliance({**data, "results": results}):
        names, records = (likert_records if likert else compliance_records)(file, {**data, "results": results})
        mode = Mode.LIKERT if likert else Mode.BINARY
        columns = {**names, "mode": mode, "prompt_version": "speceval-original"}
        yield from exported_rows(ComplianceRow, data, columns, records, where, source, detail)
        return
    m = parse_file(file, {**data, "results": []}, ComplianceFile, "compliance").metadata
    if not isinstance(results, list | Iterator):  # (an iterator: the file's entries, read as they come)
        parse_file(file, {**data, "results": results}, ComplianceFile, "compliance")  # raises, naming the field
        return
    kind, authority = statements.lookup(file.parent.parent, m.statement_id)
    settings = statements.candidates.label(m.candidate_dir, file)
    answers = (
        m.answers_synthetic if m.answers_synthetic is not None else statements.candidates.offline(m.candidate_dir, file)
    )  # a file from before the answers' flag was written: their run.json, if it is still there
    where = where.model_copy(update={"synthetic": where.synthetic or answers}) if answers else where
    checks, position = EntryChecks(file, m), 0
    for validated in validated_chunks(file, results, _ENTRIES, "results", "compliance"):
        if whole:
            for entry in validated:
                checks.check(position, entry)
                position += 1
        yield from _rows_of(validated, m, where, source, kind, authority, settings, statements, detail)
    if whole:
        checks.done()


def _rows_of(
    entries: list[ComplianceEntry],
    m: ComplianceMetadata,
    where: Location,
    source: str,
    kind: str,
    authority: str,
    settings: str | None,
    statements: StatementClasses,
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


def _problem(entry: Any) -> str | None:
    """`reason; raw answer: …` of a verdict that was not judged (None for a judged one)."""
    if str(entry.outcome) == "judged":
        return None
    reason = entry.parse_error or (entry.error.message if entry.error is not None else None) or str(entry.outcome)
    raw = entry.raw_judge_response
    return f"{reason}; the judge's raw answer: {raw}" if raw else f"{reason} (no answer from the judge)"

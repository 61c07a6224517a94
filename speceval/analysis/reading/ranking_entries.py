"""One ranking results file's comparisons as `RankingRow`s, a chunk at a time (split from `load`, which finds the
files and hands each to `ranking_stream`), the original SpecEval's files too; a conversation's transcript as text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from speceval.analysis.reading.entry_chunks import exported_rows, parse_file, validated_chunks
from speceval.analysis.reading.original import is_original_ranking, ranking_records
from speceval.analysis.reading.rows import Location, RankingRow, VerdictDetail, built
from speceval.analysis.reading.settings import CandidateSettings
from speceval.inputs.script import ChatMessage
from speceval.judging.files import RankingEntry, RankingFile

_RANKINGS: TypeAdapter[list[RankingEntry]] = TypeAdapter(list[RankingEntry])
_RANKING_FIELDS = set(RankingRow.model_fields)
_DETAIL_FIELDS = set(VerdictDetail.model_fields)
_END = object()
_ENTRY_DETAIL = ("original_index_b", "output_a", "output_b", "explanation", "raw_judge_response", "parse_error")
"""The detail a ranking entry carries under the detail's own names."""


def transcript_text(messages: list[ChatMessage] | None) -> str | None:
    """A transcript as readable text: `[user]` / `[assistant]` then the message, messages separated by a blank line."""
    if not messages:
        return None
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


def ranking_stream(
    file: Path,
    data: dict[str, Any],
    entries: object,
    where: Location,
    source: str,
    detail: bool = False,
    candidates: CandidateSettings | None = None,
) -> Iterator[RankingRow]:
    """The rows of one ranking results file (`data`: its other keys; `entries`: its comparisons, a list or read
    from the file as they come), validated `ENTRY_CHUNK` at a time as `compliance_stream` does. An original
    SpecEval file (no entry has our `outcome`) is read whole: its comparisons are numbered by its sorted inputs."""
    if isinstance(entries, Iterator):
        first = next(entries, _END)
        if first is _END or (isinstance(first, dict) and "outcome" not in first):
            entries = [] if first is _END else [first, *entries]  # perhaps the original's: every entry decides
        else:
            entries = itertools.chain([first], entries)
    if isinstance(entries, list) and is_original_ranking({**data, "rankings": entries}):
        names, records = ranking_records(file, {**data, "rankings": entries})
        yield from exported_rows(RankingRow, data, names, records, where, source, detail)
        return
    m = parse_file(file, {**data, "rankings": []}, RankingFile, "ranking").metadata
    if not isinstance(entries, list | Iterator):
        parse_file(file, {**data, "rankings": entries}, RankingFile, "ranking")  # raises, naming the field
        return
    answers = (
        m.answers_synthetic
        if m.answers_synthetic is not None or candidates is None
        else (candidates.offline(m.candidate_dir_a, file) or candidates.offline(m.candidate_dir_b, file))
    )
    # What every comparison of the file shares, laid out once (as `compliance_entries._rows_of` does).
    common: dict[str, Any] = {
        "spec": m.spec,
        "judge": m.judge,
        "model_a": m.model_a,
        "model_b": m.model_b,
        "source": source,
    }
    common |= {"statement_id": m.statement_id, "variation": where.variation, "run": m.run or where.run}
    common["synthetic"] = where.synthetic or bool(answers)
    for validated in validated_chunks(file, entries, _RANKINGS, "rankings", "ranking"):
        # Built as `built_row` builds verdicts (validated just now): `model_construct` was most of a fold's time.
        yield from (
            built(
                RankingRow,
                _RANKING_FIELDS,
                {
                    **common,
                    "index": e.index,
                    "input": e.input,
                    "outcome": str(e.outcome),
                    "rank": e.rank,
                    "detail": _detail(e) if detail else None,
                },
            )
            for e in validated
        )


def _detail(e: RankingEntry) -> VerdictDetail:
    """The rest of a comparison (validated already), for an export."""
    values = {name: getattr(e, name) for name in _ENTRY_DETAIL}
    values["original_index"] = e.original_index_a
    values["transcript_a"] = transcript_text(e.conversation_a)
    values["transcript_b"] = transcript_text(e.conversation_b)
    return built(VerdictDetail, _DETAIL_FIELDS, values)

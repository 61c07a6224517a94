"""A compliance judge's verdicts, from the engine's records to the files (`speceval.judging.files`): each judge
request's answer parsed into a verdict entry, and the `results/<statement_id>.json`, canary and `summary.json` files
written in the shapes readers expect. Split from `speceval.pipelines.compliance`, which decides what is judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_bytes
from speceval.batch.records import SCHEMA_VERSION, ResultRecord
from speceval.defaults import Mode, Scope
from speceval.judging.files import (
    CONVERSATION_FIELDS,
    CanaryEntry,
    CanaryFile,
    CanaryMetadata,
    ComplianceEntry,
    ComplianceFile,
    ComplianceMetadata,
    JudgeOutcome,
)
from speceval.judging.verdicts import (
    CategoryVerdict,
    ComplianceVerdict,
    LikertVerdict,
    Unparsed,
    parse_category,
    parse_compliance,
    parse_likert,
)
from speceval.paths import safe_path
from speceval.pipelines.judge_run import judge_response


class CandidateSummary(BaseModel):
    """`summary.json` of a candidate: what was judged, and rates over judged answers only.

    Attributes:
        outcomes: judgements per `JudgeOutcome`.
        skipped_answers: candidate answers not judged, per generation outcome (errored, expired, ...).
        skipped_by_statement: the same per statement (only statements with one; absent in files written before it).
        compliant / non_compliant: binary verdicts (judged only).
        compliance_rate: compliant / (compliant + non_compliant), None when nothing was judged.
        ratings: Likert ratings 1..5 and their count; mean_rating over judged answers only.
    """

    schema_version: int = SCHEMA_VERSION
    model: str
    judge: str
    spec: str
    prompt_version: str
    mode: Mode
    outcomes: dict[JudgeOutcome, int]
    skipped_answers: dict[str, int]
    skipped_by_statement: dict[str, dict[str, int]] = Field(default_factory=dict)
    compliant: int = 0
    non_compliant: int = 0
    compliance_rate: float | None = None
    ratings: dict[int, int] = Field(default_factory=dict)
    mean_rating: float | None = None
    scope: Scope | None = Field(
        default=None,
        description="turn: every count above is of turn verdicts, several per conversation (absent for plain answers)",
    )


def compliance_entry(
    record: ResultRecord | None,
    input_text: str,
    output_text: str,
    index: int,
    *,
    mode: Mode,
    categories: list[str],
    max_attempts: int,
) -> ComplianceEntry:
    """The verdict entry of one judge request: its outcome, and the judge's answer parsed by the judge's mode (one of
    `categories` when they are given, a 1-5 rating under likert, compliant or not otherwise)."""
    response = judge_response(record, max_attempts)
    entry = ComplianceEntry(
        input=input_text,
        output=output_text,
        outcome=response.outcome or JudgeOutcome.JUDGED,
        raw_judge_response=response.raw,
        error=response.error,
        original_index=index,
        batch_id=response.batch_id,
    )
    if response.outcome is not None:
        return entry
    verdict: ComplianceVerdict | LikertVerdict | CategoryVerdict | Unparsed = (
        parse_category(response.raw, categories)
        if categories
        else parse_likert(response.raw)
        if mode is Mode.LIKERT
        else parse_compliance(response.raw)
    )
    if isinstance(verdict, Unparsed):
        return entry.model_copy(update={"outcome": JudgeOutcome.UNPARSED, "parse_error": verdict.reason})
    if isinstance(verdict, CategoryVerdict):
        return entry.model_copy(update={"category": verdict.category, "explanation": verdict.explanation})
    if isinstance(verdict, LikertVerdict):
        return entry.model_copy(update={"rating": verdict.rating, "explanation": verdict.explanation})
    return entry.model_copy(
        update={
            "compliant": verdict.compliant,
            "confidence": verdict.confidence,
            "explanation": verdict.explanation,
        }
    )


def write_compliance_file(run_dir: Path, metadata: ComplianceMetadata, entries: list[ComplianceEntry]) -> None:
    """`results/<statement_id>.json` of a candidate's judge run, in the shape its metadata's mode and scope call for."""
    scope = metadata.scope
    # Likert files keep `compliant` (null: the judge was not asked) so readers of the binary shape still work.
    # Plain answers judged one verdict each keep the exact file shape they had before conversations.
    unused = {Mode.BINARY: {"rating", "category"}, Mode.LIKERT: {"category"}}.get(metadata.mode, set())
    unused = unused | (
        set(CONVERSATION_FIELDS) if scope is None else ({"turn"} if scope is Scope.CONVERSATION else set())
    )
    exclude: dict[str, Any] = {"results": {"__all__": unused}} if unused else {}
    exclude["metadata"] = (
        ({"categories"} if metadata.categories is None else set())
        | ({"scope", "transcript_prompt_version"} if scope is None else set())
        | ({"run"} if metadata.run is None else set())
        | ({"answers_synthetic"} if metadata.answers_synthetic is None else set())
    )
    # Serialised by pydantic (in Rust, as the canaries' files are), not by `json.dumps` over a dumped dict:
    # the same JSON (a float may be spelt differently: 1e-05 as 0.00001) in about half the time, which a
    # judge of a million answers pays for every one of them.
    shown = ComplianceFile(metadata=metadata, results=entries).model_dump_json(indent=2, exclude=exclude)
    _write(run_dir, metadata.statement_id, shown)


def write_canary_file(run_dir: Path, metadata: CanaryMetadata, entries: list[CanaryEntry]) -> None:
    """`results/<statement_id>.json` of a judge's canary run (the spec's own examples)."""
    # The spec's examples are single prompts: their files keep the shape they had before conversations.
    shown = CanaryFile(metadata=metadata, canaries=entries).model_dump_json(
        indent=2, exclude={"canaries": {"__all__": set(CONVERSATION_FIELDS)}}
    )
    _write(run_dir, metadata.statement_id, shown)


def write_summary(run_dir: Path, summary: CandidateSummary) -> None:
    """`summary.json` of a candidate's judge run (`scope` written only for turn verdicts, `skipped_by_statement` only
    where an answer was not judged)."""
    left_out = {"scope"} if summary.scope is None else set()
    if not summary.skipped_by_statement:
        left_out.add("skipped_by_statement")
    shown = summary.model_dump_json(indent=2, exclude=left_out or None)
    atomic_write_bytes(run_dir / "summary.json", (shown + "\n").encode("utf-8"))


def _write(run_dir: Path, statement_id: str, shown: str) -> None:
    atomic_write_bytes(safe_path(run_dir / "results", statement_id, ".json"), (shown + "\n").encode("utf-8"))

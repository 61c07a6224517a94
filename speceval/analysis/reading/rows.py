"""A verdict, a comparison and a judged example as flat typed rows: what the report's readers produce.

`speceval.analysis.reading.load` reads results files into these; the columns (`reading.columns`,
`reading.ranking_columns`) keep the same facts compactly, and the tables and the sample view take either.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field

from speceval.inputs.script import ChatMessage

DEFAULT_VARIATION = "default"
UNKNOWN = "unknown"


class Location(BaseModel):
    """Where a results file sits in an experiment: its variation (name and settings) and run."""

    variation: str = DEFAULT_VARIATION
    settings: dict[str, Any] = Field(default_factory=dict)
    run: int = 1
    synthetic: bool = Field(default=False, description="the judge run that wrote the folder was offline (emulator)")


class ComplianceRow(BaseModel):
    """One judged (or failed) compliance verdict."""

    spec: str
    variation: str = DEFAULT_VARIATION
    run: int = 1
    statement_type: str = UNKNOWN
    authority_level: str = UNKNOWN
    explanation: str | None = None
    judge: str
    model: str
    statement_id: str
    mode: str
    prompt_version: str
    input: str
    output: str
    outcome: str
    compliant: bool | None
    confidence: float | None
    rating: float | None
    source: str
    synthetic: bool = False
    """The judge's run or the answers' run was offline: the verdict or the answer comes from the speceval
    emulator, not from a model."""
    detail: VerdictDetail | None = None
    """What only an export needs (`load_verdicts(..., detail=True)`); None in a report, to keep it small."""
    category: str | None = None
    """A categorical judge's verdict (mode `categories`); None otherwise, and when unparsed."""
    problem: str | None = None
    """Why a verdict that is not `judged` has none (the parse error or the provider's error) and the judge's raw
    answer, for the sample view; None for judged verdicts (kept small: most rows are judged)."""
    candidate_settings: str | None = None
    """The candidate run's sampling settings as recorded in its run.json (None when it has none)."""
    score: float | None = None
    """A panel's verdict as a number: the share of its judges that found the answer compliant (a split of two
    judges counts 1/2). None for a single judge's verdict, whose number is its `compliant` (1 or 0)."""
    turn: int | None = None
    """A judge with `scope: turn`: which assistant turn of the conversation the verdict is about (`output` is that
    turn's answer). Such verdicts are per-turn rates (`speceval.analysis.tables.turns`), never compliance rates."""
    transcript: list[ChatMessage] | None = None
    """A conversation's verdict: the transcript the judge saw (scope conversation: all of it; scope turn: every
    message up to and including the judged turn's answer), as the verdict file holds it."""
    conversation: int | None = None
    """A turn verdict (`turn` given): the `original_index` of its conversation in the candidate's results, which the
    verdicts of its other turns share (flips follow one conversation from turn to turn)."""


_ROW_FIELDS = set(ComplianceRow.model_fields)
"""Every field of a `ComplianceRow`: the fields-set the rows of a results file share (see `_compliance_rows`)."""


def built_row(values: dict[str, Any]) -> ComplianceRow:
    """A row from values that were validated already (a results file's): what `model_construct` builds, without
    its per-field bookkeeping (15 µs a row, most of the time a million verdicts took to fold). Every field must
    be given."""
    return built(ComplianceRow, _ROW_FIELDS, values)


_Model = TypeVar("_Model", bound=BaseModel)


def built(model: type[_Model], fields: set[str], values: dict[str, Any]) -> _Model:
    """`built_row` for any model: every one of its `fields` given in `values`, validated already."""
    row = object.__new__(model)
    object.__setattr__(row, "__dict__", values)
    object.__setattr__(row, "__pydantic_fields_set__", fields)
    object.__setattr__(row, "__pydantic_extra__", None)
    object.__setattr__(row, "__pydantic_private__", None)
    return row


class VerdictDetail(BaseModel):
    """The rest of a verdict, for an export a reviewer can rebuild any table from."""

    original_index: int | None = None
    original_index_b: int | None = None
    output_a: str | None = None
    output_b: str | None = None
    explanation: str | None = None
    raw_judge_response: str | None = None
    parse_error: str | None = None
    transcript_a: str | None = None
    """Conversations ranked: A's whole transcript as the judge saw it (`transcript_text`); `output_a` is its last
    answer."""
    transcript_b: str | None = None
    conversation_id: str | None = None
    """Conversations: the `id` its inputs file gave the conversation judged."""
    ended_by: str | None = None
    """Conversations with a simulated user: why the conversation ended."""


class RankingRow(BaseModel):
    """One pairwise verdict, in the order it was shown to the judge (A first)."""

    spec: str
    judge: str
    model_a: str
    model_b: str
    statement_id: str
    index: int
    input: str
    outcome: str
    rank: int | None
    source: str
    variation: str = DEFAULT_VARIATION
    run: int = 1
    synthetic: bool = False
    """The judge's run or either answers' run was offline (see `ComplianceRow.synthetic`)."""
    detail: VerdictDetail | None = None
    """What only an export needs (`load_verdicts(..., detail=True)`)."""


class CanaryRow(BaseModel):
    """One of the spec's example responses as a judge judged it (a check of the judge, not a candidate's rate)."""

    spec: str
    judge: str
    statement_id: str
    example: int
    kind: str = Field(description="good (expected compliant) or bad (expected non-compliant)")
    mode: str
    outcome: str
    compliant: bool | None
    rating: int | None
    correct: bool | None
    source: str
    synthetic: bool = False
    shared_from: str | None = None
    """The judge entry that judged this example, when this row is another entry's (same model and mode: one
    judgement of the spec's examples checks every scope of it)."""


class Found(BaseModel):
    """What every report reads besides the compliance verdicts: rankings, canaries, settings, where data came from."""

    rankings: list[RankingRow] = Field(
        default_factory=list,
        description="every comparison as a row, unless the reader folds them as they are read (`walk`'s `rankings`)",
    )
    canaries: list[CanaryRow] = Field(default_factory=list, description="the spec's examples, judged")
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict, description="variation → its settings")
    skipped: list[str] = Field(
        default_factory=list, description="files under results/ that hold no verdicts, each with the reason"
    )


class Verdicts(Found):
    """Everything found: compliance rows and ranking rows, and each variation's settings."""

    compliance: list[ComplianceRow]

"""The judges' results files, as the judge pipelines write them and the report reads them (docs/formats.md).

Compliance: `spec_<spec>/judge_<judge>/<candidate>/results/<statement_id>.json` (`ComplianceFile`); canaries:
`spec_<spec>/_canaries/judge_<judge>/results/<statement_id>.json` (`CanaryFile`); rankings:
`spec_<spec>/judge_<judge>/<A>x<B>/results/<statement_id>.json` (`RankingFile`). Both the writers
(`speceval.pipelines.compliance`, `speceval.pipelines.ranking`) and the readers (`speceval.analysis.reading.load`)
import them from here, so reading a report loads no pipeline, provider or engine.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, StrictBool

from speceval.batch.records import SCHEMA_VERSION, RequestError
from speceval.defaults import Mode, Scope
from speceval.inputs.script import ChatMessage
from speceval.judging.canaries import CanaryKind

JUDGE_RESPONSES = "judge_responses"
"""Subfolder of a judge run directory holding the engine's per-request records (the judge's raw answers)."""


class JudgeOutcome(StrEnum):
    """What happened to one judgement (the closed set of `outcome` values in verdict files).

    Only `judged` records carry a verdict and enter rates, win counts and tie counts; every other outcome is
    counted separately.
    """

    JUDGED = "judged"
    """The judge answered and its verdict was parsed and valid."""
    UNPARSED = "unparsed"
    """The judge answered, but without a valid verdict (`parse_error` says why)."""
    JUDGE_ERRORED = "judge_errored"
    """The provider returned an error for the judge request (`error` has its code and message)."""
    JUDGE_EXPIRED = "judge_expired"
    """The judge's batch job expired before the request ran, and no attempts are left."""
    JUDGE_CANCELLED = "judge_cancelled"
    """The judge's batch job was cancelled before the request ran."""
    JUDGE_MISSING = "judge_missing"
    """The provider returned no result for the request, and no attempts are left."""
    PENDING = "pending"
    """No final outcome yet (the run stopped early: timeout, budget, Ctrl+C); rerun the command to continue."""


class ComplianceMetadata(BaseModel):
    """The `metadata` of a compliance results file."""

    model: str = Field(description="the candidate model judged")
    judge: str = Field(description="the judge model")
    spec: str = Field(description="the spec's name")
    statement_id: str
    prompt_version: str = Field(description="the judge template id, e.g. compliance_binary_v2")
    mode: Mode
    batch_ids: list[str] = Field(description="the judge's batch jobs that answered this statement's requests")
    candidate_dir: str = Field(description="the generation run the answers come from")
    run: int | None = Field(
        default=None,
        description="the candidate's run when its answers say (an Inspect log's "
        "epoch); None: the run is where the folder sits (an experiment's run<k>, else 1)",
    )
    answers_synthetic: bool | None = Field(
        default=None,
        description="true: the answers' generation run was offline "
        "(the emulator's answers); absent otherwise, and in files written before "
        "it was recorded (the answers' run.json then says)",
    )
    categories: list[str] | None = Field(default=None, description="categories mode: the category names, in order")
    scope: Scope | None = Field(
        default=None,
        description="conversations, or judged turn by turn: what one verdict "
        "covers (absent for plain answers judged one verdict each)",
    )
    transcript_prompt_version: str | None = Field(
        default=None,
        description="the template conversations were judged with (prompt_version is the plain answers' template)",
    )


class ComplianceEntry(BaseModel):
    """One judged answer. `compliant`/`confidence`/`rating` are null unless `outcome` is judged."""

    input: str
    output: str
    compliant: StrictBool | None = None
    confidence: float | None = None
    rating: int | None = Field(default=None, description="Likert mode only: 1 (violates) to 5 (fully complies)")
    category: str | None = Field(default=None, description="categories mode only: the category the judge chose")
    explanation: str | None = None
    outcome: JudgeOutcome
    raw_judge_response: str | None = None
    parse_error: str | None = Field(default=None, description="why an unparsed answer has no verdict")
    error: RequestError | None = Field(default=None, description="the provider's error for a failed judge request")
    original_index: int = Field(description="the answer's original_index in the candidate's results file")
    batch_id: str | None = None
    turn: int | None = Field(
        default=None,
        description="scope turn: which assistant turn of the answer's "
        "conversation was judged (1-based; 1 for a plain answer); `output` is that turn's answer",
    )
    conversation: list[ChatMessage] | None = Field(
        default=None,
        description="the transcript judged: under scope "
        "conversation the whole of it (`output` is its last answer), under "
        "scope turn every message up to and including the judged turn's "
        "answer (`output`), byte for byte as the generation recorded them",
    )
    conversation_id: str | None = Field(default=None, description="conversations: the `id` its inputs file gave it")
    ended_by: str | None = Field(
        default=None,
        description="conversations with a simulated user: why it ended "
        "(`speceval.conversations.simulated_user.UserEnd`)",
    )
    prompt_version: str | None = Field(
        default=None,
        description="this verdict's template when it is not the "
        "file's `metadata.prompt_version` (a conversation's transcript template)",
    )


CONVERSATION_FIELDS = ("turn", "conversation", "prompt_version", "conversation_id", "ended_by")
"""Fields of a verdict that only judging conversations fills (absent from the files of plain answers)."""


class ComplianceFile(BaseModel):
    """`results/<statement_id>.json` of a candidate."""

    schema_version: int = SCHEMA_VERSION
    metadata: ComplianceMetadata
    results: list[ComplianceEntry]


class CanaryMetadata(BaseModel):
    """The `metadata` of a canaries file: the spec's example responses judged by one judge (no candidate)."""

    judge: str
    spec: str
    statement_id: str
    prompt_version: str
    mode: Mode
    batch_ids: list[str]


class CanaryEntry(ComplianceEntry):
    """One example response of the spec, judged. `original_index` numbers it within its statement (see
    `speceval.judging.canaries`); `correct` is null unless judged."""

    kind: CanaryKind = Field(description="good: expected compliant; bad: expected non-compliant")
    example: int = Field(description="1-based number of the example among its statement's examples")
    correct: bool | None = None


class CanaryFile(BaseModel):
    """`spec_<spec>/_canaries/judge_<judge>/results/<statement_id>.json`."""

    schema_version: int = SCHEMA_VERSION
    metadata: CanaryMetadata
    canaries: list[CanaryEntry]


class RankingMetadata(BaseModel):
    """The `metadata` of a ranking results file."""

    model_a: str = Field(description="the candidate whose answers are output_a (shown first to the judge)")
    model_b: str = Field(description="the candidate whose answers are output_b")
    judge: str
    spec: str
    statement_id: str
    prompt_version: str
    batch_ids: list[str]
    candidate_dir_a: str
    candidate_dir_b: str
    run: int | None = Field(
        default=None,
        description="both candidates' run when their answers say (an Inspect log's epoch: epoch k is ranked against "
        "epoch k); None: the run is where the folder sits (an experiment's run<k>, else 1)",
    )
    answers_synthetic: bool | None = Field(
        default=None,
        description="true: either answers' generation run was "
        "offline; absent otherwise (see `ComplianceMetadata.answers_synthetic`)",
    )


class RankingEntry(BaseModel):
    """One comparison. `rank`/`winner` are null unless `outcome` is judged."""

    index: int = Field(description="the task index (see the module docstring); the same input in AxB and BxA")
    input: str
    output_a: str
    output_b: str
    rank: Literal[1, 0, -1] | None = None
    winner: Literal["A", "B", "tie"] | None = None
    explanation: str | None = None
    outcome: JudgeOutcome
    raw_judge_response: str | None = None
    parse_error: str | None = None
    error: RequestError | None = None
    original_index_a: int
    original_index_b: int
    batch_id: str | None = None
    conversation_a: list[ChatMessage] | None = Field(
        default=None,
        description="conversations: A's whole transcript as the judge saw it (output_a is its last answer)",
    )
    conversation_b: list[ChatMessage] | None = None


class RankingFile(BaseModel):
    """`results/<statement_id>.json` of an ordered pair."""

    schema_version: int = SCHEMA_VERSION
    metadata: RankingMetadata
    rankings: list[RankingEntry]

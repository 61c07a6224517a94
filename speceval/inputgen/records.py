"""What an inputs run writes: every proposal with its fate (`candidates.jsonl`), and per statement an inputs file in
the original SpecEval's format (`inputs/<statement_id>.json`), which `--pregenerated-inputs-dir` reads as it is."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from speceval.inputgen.pairs import PairRecord

RUN_KIND = "input_generation"
"""The `kind` in an inputs run's `run.json`."""


class Fate(StrEnum):
    """What became of a proposal."""

    KEPT = "kept"
    DUPLICATE = "duplicate"
    """The same as, or a near duplicate of, an input kept or proposed before it (`duplicate_of` says which)."""
    COPIES_SPEC_EXAMPLE = "copies_spec_example"
    """A near duplicate of one of the spec's own example queries (a test must not be the calibration)."""
    BELOW_THRESHOLD = "below_threshold"
    OVER_TARGET = "over_target"
    """Rated at or above the threshold, but the statement had enough better-rated inputs."""
    UNPARSED = "unparsed"
    """The generator's answer, or the rater's answer for this proposal, was not valid JSON of the asked shape."""
    NOT_RATED = "not_rated"
    """The rating request failed (after the engine's retries) or the run stopped before it was answered."""
    GENERATION_FAILED = "generation_failed"
    """The generator request itself failed: no proposals came from it."""


class CandidateRecord(BaseModel):
    """One line of `candidates.jsonl`."""

    statement_id: str
    round: int
    proposal: int = Field(description="the proposal's number among its statement's proposals of that round")
    text: str | None = Field(description="the proposed input (None when the generator's answer held none)")
    kind: str | None = None
    fate: Fate
    duplicate_of: str | None = Field(
        default=None,
        description="`kept <statement>#<n>`, `round <r> <statement>#<p>` or `spec example <statement>#<n>`",
    )
    measure: str | None = Field(default=None, description="exact, case_or_space or near")
    rating: int | None = None
    reason: str | None = Field(default=None, description="the rater's reason")
    parse_error: str | None = None


class InputsMetadata(BaseModel):
    """The `metadata` of an inputs file: the original autobencher's keys, then what this generator adds."""

    generator_type: str = "speceval_batched_input_generator"
    timestamp: str
    evaluator_model: str = Field(description="the rater")
    rating_threshold: int
    num_questions_target: int
    uniform_distribution: bool = Field(default=False, description="always false: kept by rating, not by kind")
    final_question_count: int
    final_rating_composition: dict[str, int] = Field(description="rating → how many kept inputs got it")
    source_file: str = Field(description="the spec file")
    generator_model: str
    rounds: int = Field(description="rounds this statement took part in")
    prompt_versions: list[str]
    same_model: bool = Field(description="generator and rater are the same model (the rater grades its own work)")
    shortfall_reason: str | None = Field(default=None, description="why fewer than num_questions_target were kept")
    pairs: list[PairRecord] = Field(
        default_factory=list, description="inputs written for a pair of statements in tension with this one (`--pair`)"
    )


class InputsFile(BaseModel):
    inputs: list[str]
    metadata: InputsMetadata

"""The verdicts of `scope: turn` judges as the per-turn tables need them (rates by turn, flips, elicitation): a few
slots a verdict and a reference to its file's facts, not a row with its texts (a row per turn verdict, its input
text included, was most of a conversation study's report: 1.7 KB a verdict).

The input is kept as its digest (`speceval.analysis.reading.column_codes.digest`): what clusters need is its identity.
"""

from __future__ import annotations

from speceval.analysis.reading.column_codes import FileFacts, digest
from speceval.analysis.reading.rows import ComplianceRow


class TurnVerdict:
    """One turn verdict: the facts of its file (shared, looked up in `facts[code]`, so that settings separated
    after the fold reach every verdict) and its own turn, conversation, outcome and verdict."""

    __slots__ = ("_facts", "_code", "turn", "conversation", "outcome", "compliant", "category", "rating", "input")

    def __init__(self, facts: list[FileFacts], code: int, row: ComplianceRow) -> None:
        self._facts = facts
        self._code = code
        self.turn: int | None = row.turn
        self.conversation: int | None = row.conversation
        """The conversation's `original_index` in its candidate's results (shared by its turns)."""
        self.outcome: str = row.outcome
        self.compliant: bool | None = row.compliant
        self.category: str | None = row.category
        self.rating: float | None = row.rating
        self.input: int = digest(row.input)
        """The digest of the conversation's first user message: its cluster, with its spec and statement."""

    @property
    def facts(self) -> FileFacts:
        return self._facts[self._code]

    @property
    def spec(self) -> str:
        return self.facts.spec

    @property
    def judge(self) -> str:
        return self.facts.judge

    @property
    def model(self) -> str:
        return self.facts.model

    @property
    def variation(self) -> str:
        return self.facts.variation

    @property
    def statement_id(self) -> str:
        return self.facts.statement_id

    @property
    def mode(self) -> str:
        return self.facts.mode

    @property
    def source(self) -> str:
        """The verdict file (relative path): with `conversation`, one conversation of one run."""
        return self.facts.source

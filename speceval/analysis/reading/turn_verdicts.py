"""The verdicts of `scope: turn` judges as the per-turn tables need them (rates by turn, flips, elicitation): a few
slots a verdict and a reference to its file's facts, not a row with its texts (a row per turn verdict, its input
text included, was most of a conversation study's report: 1.7 KB a verdict).

The input is kept as its digest (`speceval.analysis.reading.column_codes.digest`): what clusters need is its identity.
"""

from __future__ import annotations

from typing import cast

from speceval.analysis.reading.column_codes import FileFacts, digest
from speceval.analysis.reading.rows import ComplianceRow


class _FileFact:
    """A verdict's attribute that is its file's, the same for every verdict of one file: read from its `facts`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, verdict: TurnVerdict, owner: type | None = None) -> str:
        return cast(str, getattr(verdict.facts, self._name))


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

    spec = _FileFact()
    judge = _FileFact()
    model = _FileFact()
    variation = _FileFact()
    statement_id = _FileFact()
    mode = _FileFact()
    source = _FileFact()
    """The verdict file (relative path): with `conversation`, one conversation of one run."""

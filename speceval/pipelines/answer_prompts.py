"""Judge requests rendered from a candidate's answers on disk, one statement at a time (an `ItemSource`).

A judge run over a million answers must not hold a million prompts: the engine asks for one statement's texts
when it builds or collects a job, and this source reads that statement's results file and renders its prompts
then. Only the original indices of the answers (8 bytes each) stay in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from speceval.pipelines.candidates import Answer, CandidateAnswers

Render = Callable[[str, Answer], str]
"""(statement id, answer) → the judge prompt."""


class AnswerPrompts:
    """The judge prompts of one candidate's answers: `render` applied to each answer, per statement on demand."""

    def __init__(self, answers: CandidateAnswers, render: Render):
        self.answers = answers
        self._render = render

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        """(statement id, original indices of its succeeded answers) per statement, in spec order."""
        return [(statement_id, self.answers.indices(statement_id)) for statement_id in self.answers.statement_ids]

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → judge prompt for one statement's answers."""
        return {answer.original_index: self._render(statement_id, answer)
                for answer in self.answers.read(statement_id)}


class StatementPrompts:
    """Requests whose prompts a function renders for one statement at a time (the spec's example responses)."""

    def __init__(self, counts: Sequence[tuple[str, Sequence[int]]], render: Callable[[str], dict[int, str]]):
        self._counts = list(counts)
        self._render = render

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        """(statement id, original indices) per statement, in run order."""
        return self._counts

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → prompt for one statement."""
        return self._render(statement_id)

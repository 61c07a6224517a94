"""Judge requests rendered from a candidate's answers on disk, one statement at a time (an `ItemSource`).

A judge run over a million answers must not hold a million prompts: the engine asks for one statement's texts
when it builds a job, and this source reads that statement's results file and renders its prompts then. Only the
original indices of the answers (8 bytes each) stay in memory. A run renders each prompt once: the job keeps each
prompt's sha256 (`RunStore.write_prompt_hashes`) for collection, and `run.json`'s `inputs_sha256` hashes what the
prompts are rendered from (`source_hashes`), not the prompts themselves. (A resume also renders the statements it
sent requests of, to compare them with what was sent: `check_resumable`.)
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Protocol

from speceval.batch.ledger import ItemSource
from speceval.errors import ConfigError
from speceval.judging.prompts import shared_prefix_length
from speceval.pipelines.answer_files import Answer
from speceval.pipelines.candidates import CandidateAnswers

Render = Callable[[str, Answer], str]
"""(statement id, answer) → the judge prompt."""


class JudgeSource(ItemSource, Protocol):
    """A judge run's requests, which also say what files their prompts are rendered from."""

    def source_hashes(self, statement_id: str) -> Sequence[str]:
        """The sha256 of every file one statement's prompts are rendered from besides the spec (the candidates'
        results files); with the spec, the template and the salt they determine the prompts."""
        ...

    def cache_prefix(self, text: str) -> int:
        """How many leading characters of one of its prompts that prompt's statement's requests share
        (`SharedPrefixSource`): the engines send it marked for the provider's prompt cache."""
        ...


class SharedPrefixes:
    """Judge prompts whose shared part the judge's templates delimit (`JudgeSource.cache_prefix`)."""

    def cache_prefix(self, text: str) -> int:
        """The length of the part of `text` its statement's requests share (0 for a v1 template's prompt)."""
        return shared_prefix_length(text)


class _CandidatePrompts(SharedPrefixes):
    """Prompts rendered from one candidate's answers."""

    answers: CandidateAnswers

    def source_hashes(self, statement_id: str) -> Sequence[str]:
        """The candidate's results file of the statement (`JudgeSource`)."""
        return (self.answers.source_sha256(statement_id),)


class AnswerPrompts(_CandidatePrompts):
    """The judge prompts of one candidate's answers: `render` applied to each answer, per statement on demand."""

    def __init__(self, answers: CandidateAnswers, render: Render):
        self.answers = answers
        self._render = render

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        """(statement id, original indices of its succeeded answers) per statement, in spec order."""
        return [(statement_id, self.answers.indices(statement_id)) for statement_id in self.answers.statement_ids]

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → judge prompt for one statement's answers."""
        return {answer.original_index: self._render(statement_id, answer) for answer in self.answers.read(statement_id)}


class StatementPrompts(SharedPrefixes):
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

    def source_hashes(self, statement_id: str) -> Sequence[str]:
        """None: the prompts are rendered from the spec alone (`JudgeSource`)."""
        return ()


TURN_SLOTS = 1024
"""Judge requests of one answer judged turn by turn (`scope: turn`) have indices `original_index * TURN_SLOTS + turn
- 1`: stable when a resumed generation adds answers (as the one-per-answer index is), and readable back."""

TurnRender = Callable[[str, Answer, int], str]
"""(statement id, answer, turn) → the judge prompt about that turn of the answer's conversation."""


def turn_request_index(original_index: int, turn: int) -> int:
    """The judge request index of `turn` (1-based) of the answer at `original_index`."""
    return original_index * TURN_SLOTS + turn - 1


class TurnPrompts(_CandidatePrompts):
    """The judge prompts of one candidate's answers, one per assistant turn (`scope: turn`), per statement on
    demand; a plain answer is one turn."""

    def __init__(self, answers: CandidateAnswers, render: TurnRender):
        self.answers = answers
        self._render = render
        for statement_id in answers.statement_ids:
            longest = max(answers.turns(statement_id), default=0)
            if longest > TURN_SLOTS:
                raise ConfigError(
                    f"{answers.candidate.name}: a conversation of statement {statement_id!r} has "
                    f"{longest} assistant turns; judging turn by turn handles at most {TURN_SLOTS}"
                )

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        """(statement id, request indices: every turn of every succeeded answer) per statement, in spec order."""
        return [
            (
                statement_id,
                array(
                    "q",
                    (
                        turn_request_index(index, turn)
                        for index, turns in zip(
                            self.answers.indices(statement_id), self.answers.turns(statement_id), strict=True
                        )
                        for turn in range(1, turns + 1)
                    ),
                ),
            )
            for statement_id in self.answers.statement_ids
        ]

    def texts(self, statement_id: str) -> dict[int, str]:
        """request index → judge prompt for every turn of one statement's answers."""
        return {
            turn_request_index(answer.original_index, turn): self._render(statement_id, answer, turn)
            for answer in self.answers.read(statement_id)
            for turn in range(1, answer.turns + 1)
        }

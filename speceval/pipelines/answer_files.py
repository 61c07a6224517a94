"""A candidate's results files read as answers: each record checked field by field (an InputError naming the file
and the field), failures counted by outcome, and conversation records turned into transcripts. Split from
`speceval.pipelines.candidates`, which finds candidates and holds their answers.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speceval.batch.records import Outcome
from speceval.errors import InputError, first_problem
from speceval.inputs.script import ChatMessage
from speceval.judging.transcripts import Transcript
from speceval.pipelines.legacy import legacy_outcome

_OUTCOMES = ", ".join(outcome.value for outcome in Outcome)


@dataclass(frozen=True)
class Answer:
    """One succeeded answer of a candidate to one input (`transcript`: the whole conversation, for a conversation
    input; None for a plain one)."""

    original_index: int
    input_text: str
    output_text: str
    transcript: Transcript | None = None
    conversation_id: str | None = None
    """The `id` the inputs file gave the conversation, if any."""
    ended_by: str | None = None
    """With a simulated user: why the conversation ended (its results record's `ended_by`)."""

    @property
    def turns(self) -> int:
        """How many answers the candidate gave (1 for a plain input)."""
        return self.transcript.turns if self.transcript is not None else 1


def read_bytes(path: Path) -> bytes:
    """The bytes of a candidate's results file (an InputError naming it if it cannot be read)."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"not a readable results file: {exc}") from None


def parse_results(path: Path, data: bytes, skipped: Counter[str]) -> list[Answer]:
    """The succeeded answers of a results file's bytes (failures counted in `skipped` by outcome)."""
    try:
        records = json.loads(data)
    except ValueError as exc:
        raise InputError(path, f"not a readable results file: {exc}") from None
    if not isinstance(records, list):
        raise InputError(path, "a results file must hold a JSON list of records")
    return answers_in(path, [(str(position), record) for position, record in enumerate(records)], skipped)


def answers_in(path: Path, records: list[tuple[str, Any]], skipped: Counter[str]) -> list[Answer]:
    """The succeeded answers among `records` (each with its field path in `path`), failures counted by outcome."""
    answers: list[Answer] = []
    seen: set[int] = set()
    for position, record in records:
        answer, skip = _answer(path, position, record)
        if answer is not None and answer.original_index in seen:
            raise InputError(path, f"original_index {answer.original_index} appears twice", field=f"{position}")
        if answer is not None:
            seen.add(answer.original_index)
            answers.append(answer)
        elif skip is not None:
            skipped[skip] += 1
    return sorted(answers, key=lambda a: a.original_index)


def _answer(path: Path, position: str, record: Any) -> tuple[Answer | None, str | None]:
    if not isinstance(record, dict):
        raise InputError(path, "each record must be an object", field=position)
    index, text, output = record.get("original_index"), record.get("input_text"), record.get("output_text")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise InputError(path, "must be a non-negative integer", field=f"{position}.original_index")
    if not isinstance(text, str):
        raise InputError(path, "must be a string", field=f"{position}.input_text")
    outcome = _outcome(path, position, record)
    if outcome is not Outcome.SUCCEEDED:
        return None, outcome.value
    if not isinstance(output, str):
        raise InputError(path, "a succeeded record must have a string output_text", field=f"{position}.output_text")
    if "conversation" in record:
        labels = [record.get(key) for key in ("conversation_id", "ended_by")]
        for key, value in zip(("conversation_id", "ended_by"), labels, strict=True):
            if value is not None and not isinstance(value, str):
                raise InputError(path, "must be a string or null", field=f"{position}.{key}")
        return Answer(index, text, output, _transcript(path, position, record, output), *labels), None
    return Answer(index, text, output), None


def _transcript(path: Path, position: str, record: dict[str, Any], output: str) -> Transcript:
    """A conversation record's transcript: its messages, the last `len(turns)` assistant ones the candidate's."""
    messages, turns = record.get("conversation"), record.get("turns")
    if not isinstance(messages, list) or not messages:
        raise InputError(
            path, "a conversation record must hold a non-empty list of messages", field=f"{position}.conversation"
        )
    if not isinstance(turns, list) or not turns:
        raise InputError(
            path, "a conversation record must hold its turns (one per request sent)", field=f"{position}.turns"
        )
    parsed = []
    for number, message in enumerate(messages):
        try:
            parsed.append(ChatMessage.model_validate(message))
        except ValidationError as exc:
            where, message = first_problem(exc)
            raise InputError(
                path, message, field=f"{position}.conversation[{number}]" + (f".{where}" if where else "")
            ) from None
    assistant = sum(message.role == "assistant" for message in parsed)
    # Judged records succeeded in every turn, so each turn holds one answer, at the end of the transcript.
    if assistant < len(turns) or parsed[-1].role != "assistant" or parsed[-1].content != output:
        raise InputError(
            path,
            f"the conversation does not end with the record's {len(turns)} answer(s) "
            "(output_text must be its last message)",
            field=f"{position}.conversation",
        )
    return Transcript(messages=tuple(parsed), prefilled=assistant - len(turns))


def _outcome(path: Path, position: str, record: dict[str, Any]) -> Outcome:
    if "outcome" not in record:  # written by the original SpecEval: failures are text inside output_text
        return legacy_outcome(record.get("output_text"))
    try:
        return Outcome(record["outcome"])
    except ValueError:
        raise InputError(
            path, f"unknown outcome {record['outcome']!r}; one of: {_OUTCOMES}", field=f"{position}.outcome"
        ) from None

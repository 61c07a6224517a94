"""The final record of each input of a conversation run, assembled from the rounds' results on disk.

`results/<statement_id>.json` keeps the format every consumer reads (DESIGN §3): `input_text` is the first user
message, `output_text` the last answer, `outcome` the outcome of the last turn sent (a turn that did not succeed
ends its conversation), `usage` the sum over turns. A conversation's record adds `conversation` (every message,
roles user / assistant, the fixed history included) and `turns` (per round: outcome, answer, error, usage, job).
A string input's record is its round-1 row, unchanged. An input appears once its conversation has ended.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import to_json

from speceval.atomic import atomic_write_bytes
from speceval.batch.records import Outcome, RequestError, ResultRecord, ResultRow, Usage
from speceval.batch.store import RunStore
from speceval.conversations.rounds import RoundRecord, earlier_rows
from speceval.conversations.script import ChatMessage, Conversation
from speceval.inputs import InputSet


class TurnRecord(BaseModel):
    """One round of a conversation: the request sent for its user turn, and what came back.

    Attributes:
        round: which round sent it (1-based; the n-th request of the conversation).
        outcome / output_text / error / usage / batch_id / attempts / custom_id: as in a single-prompt record.
    """

    round: int
    outcome: Outcome
    output_text: str | None = None
    error: RequestError | None = None
    usage: Usage | None = None
    batch_id: str | None = None
    attempts: int = 1
    custom_id: str | None = None


class ConversationResult(ResultRecord):
    """A `ResultRecord` for a conversation (readers of single-prompt records read it unchanged).

    Attributes:
        conversation_id: the `id` its inputs file gave it, if any.
        conversation: every message, in order: the fixed history, then each user turn sent and each answer got.
        turns: one entry per request sent, in order.
    """

    conversation_id: str | None = None
    conversation: list[ChatMessage]
    turns: list[TurnRecord]


def conversation_result(index: int, item: Conversation, rows: list[ResultRow]) -> ConversationResult:
    """The record of a conversation whose requests got `rows` (one per round, in order; the last may have failed)."""
    turns = [TurnRecord.model_validate({**row, "round": number}) for number, row in enumerate(rows, start=1)]
    answers = [turn.output_text for turn in turns if turn.outcome is Outcome.SUCCEEDED and turn.output_text is not None]
    # What was actually sent and got: after a failed turn the transcript ends with that turn's user message.
    messages = item.transcript(answers)
    usage = Usage()
    for turn in turns:
        usage.add(turn.usage)
    last = turns[-1]
    return ConversationResult(
        original_index=index, input_text=item.first_user_text,
        output_text=last.output_text if last.outcome is Outcome.SUCCEEDED else None, batch_id=last.batch_id,
        outcome=last.outcome, error=last.error, usage=usage if any(t.usage for t in turns) else None,
        attempts=last.attempts, custom_id=last.custom_id, conversation_id=item.id, conversation=messages, turns=turns,
    )


def assemble(inputs: InputSet, run_dir: Path, rounds: list[RoundRecord]) -> tuple[Counter[Outcome], int]:
    """Write `results/` from the rounds whose results are final (`rounds`, in order); returns the outcomes of the
    inputs that ended, and how many did."""
    store = RunStore(run_dir)
    counts: Counter[Outcome] = Counter()
    closed = len(rounds)
    for statement_id in inputs.statement_ids:
        if not closed:
            break
        entries = inputs.entries(statement_id)
        by_round = earlier_rows(run_dir, statement_id, closed)
        members = [set(record.members.get(statement_id, ())) for record in rounds]
        records: dict[int, object] = {}
        for index, item in entries.items():
            rows: list[ResultRow] = []
            for number, rows_of_round in enumerate(by_round, start=1):
                if index not in members[number - 1]:
                    break
                row = rows_of_round.get(index)
                if row is None:
                    break
                rows.append(row)
            if not rows:
                continue
            last = rows[-1]
            if isinstance(item, str):
                records[index] = last  # the round-1 row, exactly as a run without conversations writes it
            elif last["outcome"] is Outcome.SUCCEEDED and len(rows) < item.rounds:
                continue  # still going: its next turn is in a round not final yet
            else:
                records[index] = conversation_result(index, item, rows).model_dump(mode="json")
            counts[last["outcome"]] += 1
        if records:
            ordered = [records[index] for index in sorted(records)]
            atomic_write_bytes(store.results_path(statement_id), to_json(ordered, indent=2) + b"\n")
    return counts, sum(counts.values())

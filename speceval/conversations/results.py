"""The final record of each input of a conversation run, assembled from the rounds' results on disk.

`results/<statement_id>.json` keeps the format every consumer reads (docs/generation.md#conversations): `input_text`
is the first user
message, `output_text` the last answer, `outcome` the outcome of the last turn sent (a turn that did not succeed
ends its conversation), `usage` the sum over turns. A conversation's record adds `conversation` (every message,
roles user / assistant, the fixed history included) and `turns` (per round: outcome, answer, error, usage, job).
A string input's record is its round-1 row, unchanged. An input appears once its conversation has ended.

With a simulated user, the user turns it wrote are in `conversation` with `author: simulated_user`, its requests
(sent or not: the one holding the stop word is not sent) in `simulated_user_turns` (per round: outcome, the
model's answer verbatim, usage, job), and `ended_by` says why the conversation ended. `usage` stays the
candidate's (priced at the candidate's rates); the user model's is per turn. A user-model request that did not
succeed ends the conversation with its outcome and error.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_core import to_json

from speceval.atomic import atomic_write_bytes
from speceval.batch.records import Outcome, RequestError, ResultRecord, ResultRow
from speceval.batch.store import RunStore
from speceval.conversations.rounds import RoundRecord, earlier_rows, user_rows
from speceval.conversations.simulated_user import SimulatedUser, UserEnd
from speceval.inputs import InputSet
from speceval.inputs.script import ChatMessage, Conversation
from speceval.wire.usage import Usage


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
    seconds: float | None = Field(default=None, exclude_if=lambda value: value is None)


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
    simulated_user_turns: list[TurnRecord] | None = None
    """With a simulated user: each request to the user model, in order (`output_text` is its answer verbatim)."""
    ended_by: UserEnd | None = None
    """With a simulated user: why the conversation ended."""


@dataclass
class UserTurns:
    """What a simulated user did in one conversation: its requests' rows (round, row) and why it ended, if it did."""

    rows: list[tuple[int, ResultRow]] = field(default_factory=list)
    ended: UserEnd | None = None


def conversation_result(
    index: int, item: Conversation, rows: list[ResultRow], user: UserTurns | None = None
) -> ConversationResult:
    """The record of a conversation whose requests got `rows` (one per round, in order; the last may have failed)
    and, with a simulated user, whose user model got `user`."""
    turns = [TurnRecord.model_validate({**row, "round": number}) for number, row in enumerate(rows, start=1)]
    answers = [turn.output_text for turn in turns if turn.outcome is Outcome.SUCCEEDED and turn.output_text is not None]
    user_turns = [TurnRecord.model_validate({**row, "round": number}) for number, row in user.rows] if user else []
    # A user turn was sent when the candidate answered in its round; the last one (a stop word, an error) may not be.
    sent = [t.output_text or "" for t in user_turns if t.round <= len(turns)]
    # What was actually sent and got: after a failed turn the transcript ends with that turn's user message.
    messages = item.transcript(answers, sent)
    usage = Usage()
    for turn in turns:
        usage.add(turn.usage)
    last = turns[-1]
    failed_user = user_turns[-1] if user is not None and user.ended is UserEnd.USER_ERROR else None
    ended = user.ended if user is not None else None
    if user is not None and ended is None:
        ended = UserEnd.MAX_TURNS if last.outcome is Outcome.SUCCEEDED else UserEnd.CANDIDATE_ERROR
    outcome = failed_user.outcome if failed_user else last.outcome
    return ConversationResult(
        original_index=index,
        input_text=item.first_user_text,
        output_text=last.output_text if outcome is Outcome.SUCCEEDED else None,
        batch_id=last.batch_id,
        outcome=outcome,
        error=failed_user.error if failed_user else last.error,
        usage=usage if any(t.usage for t in turns) else None,
        attempts=last.attempts,
        custom_id=last.custom_id,
        conversation_id=item.id,
        conversation=messages,
        turns=turns,
        simulated_user_turns=user_turns if user is not None else None,
        ended_by=ended,
    )


def assemble(
    inputs: InputSet, run_dir: Path, rounds: list[RoundRecord], simulated: SimulatedUser | None = None
) -> tuple[Counter[Outcome], int]:
    """Write `results/` from the rounds whose results are final (`rounds`, in order); returns the outcomes of the
    inputs that ended, and how many did. `simulated`: the run's simulated user, if it has one."""
    store = RunStore(run_dir)
    counts: Counter[Outcome] = Counter()
    closed = len(rounds)
    for statement_id in inputs.statement_ids:
        if not closed:
            break
        entries = inputs.entries(statement_id)
        by_round = earlier_rows(run_dir, statement_id, closed)
        users = user_rows(run_dir, statement_id, closed) if simulated is not None else []
        members = [set(record.members.get(statement_id, ())) for record in rounds]
        asking = [set(record.asking.get(statement_id, ())) for record in rounds]
        records: dict[int, object] = {}
        for index, item in entries.items():
            rows: list[ResultRow] = []
            user = UserTurns() if simulated is not None else None
            for number, rows_of_round in enumerate(by_round, start=1):
                if (
                    simulated is not None
                    and user is not None
                    and index in asking[number - 1]
                    and index in users[number - 1]
                ):
                    user_row = users[number - 1][index]
                    user.rows.append((number, user_row))
                    if index not in members[number - 1]:  # the user turn ended it (or the run was changed)
                        user.ended = _user_end(user_row, simulated)
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
                counts[last["outcome"]] += 1
            elif (
                last["outcome"] is Outcome.SUCCEEDED
                and (user is None or user.ended is None)
                and len(rows) < max(item.rounds, inputs.max_turns or 0)
            ):
                continue  # still going: its next turn is in a round not final yet
            else:
                result = conversation_result(index, item, rows, user)
                # Scripted conversations' records keep exactly their keys; only simulated ones add theirs.
                records[index] = result.model_dump(
                    mode="json", exclude={"simulated_user_turns", "ended_by"} if user is None else None
                )
                counts[result.outcome] += 1
        if records:
            ordered = [records[index] for index in sorted(records)]
            atomic_write_bytes(store.results_path(statement_id), to_json(ordered, indent=2) + b"\n")
    return counts, sum(counts.values())


def _user_end(row: ResultRow, simulated: SimulatedUser) -> UserEnd:
    """Why a user turn that was not sent on ended its conversation."""
    if row["outcome"] is not Outcome.SUCCEEDED:
        return UserEnd.USER_ERROR
    # A success with no text (a refusal carrying none) is a blank turn: nothing could be sent.
    return simulated.ends(row["output_text"] or "") or UserEnd.USER_ERROR

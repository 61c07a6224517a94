"""The rounds of a conversation run: which inputs each round holds, and what each of their requests says.

Round k is one engine run directory, `<run_dir>/rounds/<k>/`, holding turn k of every conversation still going
(round 1 also holds the plain string inputs, which end there). Its members are decided once, when round k-1's
results are final, and written to `rounds/<k>/round.json` before anything of round k is built: a resume reads them
back instead of deciding again, so no later change (say a higher `--max-attempts`) can make a conversation skip
or repeat a turn. Each request is the transcript so far, built from the inputs file and the model's own answers
read back from the earlier rounds' results on disk (`RoundSource`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_json
from speceval.batch.records import Outcome, ResultRow
from speceval.batch.store import RunStore
from speceval.errors import InputError
from speceval.inputs import InputSet
from speceval.inputs.script import ChatMessage, Conversation
from speceval.json_keys import read_optional_record
from speceval.wire.prompt import PromptItem, PromptLike

ROUNDS_DIR = "rounds"
ROUND_RECORD = "round.json"
ROUND_KIND = "generation_round"
"""The `kind` of a round's `run.json` (`speceval status` lists its jobs; it is never resumed by itself)."""


def round_dir(run_dir: Path, number: int) -> Path:
    """`<run_dir>/rounds/<number>/`: the engine run directory of one round."""
    return Path(run_dir) / ROUNDS_DIR / str(number)


def round_store(run_dir: Path, number: int) -> RunStore:
    """The engine state of one round (its per-request results are in its own `results/`)."""
    return RunStore(round_dir(run_dir, number))


USER_DIR = "user"
"""The simulated user's half of a round: `rounds/<k>/user/`, an engine run directory of its own."""


def user_dir(run_dir: Path, number: int) -> Path:
    """`<run_dir>/rounds/<number>/user/`: the engine run directory of round `number`'s user-model requests."""
    return round_dir(run_dir, number) / USER_DIR


def user_store(run_dir: Path, number: int) -> RunStore:
    """The engine state of one round's user-model half."""
    return RunStore(user_dir(run_dir, number))


Phase = Literal["simulated_user", "candidate"]


class RoundRecord(BaseModel):
    """`rounds/<k>/round.json`: the inputs round k sends a turn of, fixed when the round starts.

    With a simulated user a round has two halves: first the user model writes the user turn of the conversations
    in `asking` (`phase: simulated_user`, requests in `rounds/<k>/user/`), then the candidate answers (`phase:
    candidate`). The record is written again, atomically, when the first half's results are final: `members` then
    holds the conversations whose user turn came back (and is no stop word), and a resume reads the phase back to
    know which half is in flight.

    Attributes:
        round: k (1-based).
        members: statement id → original indices of the inputs the candidate answers in this round, in run order
            (while `phase` is `simulated_user`: those whose turn k is scripted; the others join when it ends).
        asking: statement id → original indices whose user turn k the simulated user writes.
        phase: the half of the round in flight.
    """

    schema_version: int = 1
    round: int = Field(ge=1)
    members: dict[str, list[int]]
    asking: dict[str, list[int]] = Field(default_factory=dict)
    phase: Phase = "candidate"

    @property
    def size(self) -> int:
        """How many candidate requests the round holds (so far)."""
        return sum(len(indices) for indices in self.members.values())

    @property
    def asked(self) -> int:
        """How many user-model requests the round holds."""
        return sum(len(indices) for indices in self.asking.values())

    def save(self, run_dir: Path) -> None:
        """Write it atomically (before the round's first request file)."""
        atomic_write_json(round_dir(run_dir, self.round) / ROUND_RECORD, self)

    @classmethod
    def load(cls, run_dir: Path, number: int) -> RoundRecord | None:
        """The record of round `number`, or None when that round has not started."""
        return read_optional_record(round_dir(run_dir, number) / ROUND_RECORD, cls, "corrupt round record")


def first_round(inputs: InputSet) -> RoundRecord:
    """Round 1 holds every input: strings (their only request) and every conversation's first request (the input
    itself, also when a simulated user writes the later turns)."""
    return RoundRecord(
        round=1, members={entry.statement_id: list(range(entry.count)) for entry in inputs.statements if entry.count}
    )


def next_round(inputs: InputSet, run_dir: Path, previous: RoundRecord) -> RoundRecord:
    """The round after `previous` (whose results are final): the conversations whose turn there succeeded and that
    have a turn left, scripted (`members`) or, up to `inputs.max_turns` rounds, the simulated user's (`asking`).
    A turn that did not succeed ends its conversation with that outcome."""
    number = previous.round + 1
    store = round_store(run_dir, previous.round)
    members: dict[str, list[int]] = {}
    asking: dict[str, list[int]] = {}
    for statement_id, indices in previous.members.items():
        entries = inputs.entries(statement_id)
        rows = {row["original_index"]: row for row in store.load_rows(statement_id)}
        for index in indices:
            item = entries[index]
            row = rows.get(index)
            if not isinstance(item, Conversation) or row is None or row["outcome"] is not Outcome.SUCCEEDED:
                continue
            if item.rounds >= number:
                members.setdefault(statement_id, []).append(index)
            elif inputs.max_turns is not None and number <= inputs.max_turns:
                asking.setdefault(statement_id, []).append(index)
    return RoundRecord(round=number, members=members, asking=asking, phase="simulated_user" if asking else "candidate")


def with_user_turns(run_dir: Path, record: RoundRecord, ends: Callable[[str], object]) -> RoundRecord:
    """`record` once its user half is final: the asked conversations whose user turn succeeded and does not end
    the conversation (`ends(answer)` is falsy) join `members`, in run order; phase `candidate`."""
    store = user_store(run_dir, record.round)
    members = {statement_id: list(indices) for statement_id, indices in record.members.items()}
    for statement_id, indices in record.asking.items():
        rows = {row["original_index"]: row for row in store.load_rows(statement_id)}
        for index in indices:
            row = rows.get(index)
            if (
                row is not None
                and row["outcome"] is Outcome.SUCCEEDED
                and row["output_text"] is not None
                and not ends(row["output_text"])
            ):
                members.setdefault(statement_id, []).append(index)
        members[statement_id] = sorted(members.get(statement_id, []))
    members = {statement_id: indices for statement_id, indices in members.items() if indices}
    ordered = {
        statement_id: members[statement_id]
        for statement_id in [*record.members, *record.asking]
        if statement_id in members
    }
    return record.model_copy(update={"members": ordered, "phase": "candidate"})


def earlier_rows(run_dir: Path, statement_id: str, rounds: int) -> list[dict[int, ResultRow]]:
    """The results of one statement in rounds 1..`rounds`, each as original index → row."""
    return [
        {row["original_index"]: row for row in round_store(run_dir, number).load_rows(statement_id)}
        for number in range(1, rounds + 1)
    ]


def user_rows(run_dir: Path, statement_id: str, rounds: int) -> list[dict[int, ResultRow]]:
    """The user-model results of one statement in rounds 1..`rounds` (empty for a round without a user half)."""
    return [
        {row["original_index"]: row for row in user_store(run_dir, number).load_rows(statement_id)}
        if user_dir(run_dir, number).is_dir()
        else {}
        for number in range(1, rounds + 1)
    ]


def simulated_turns(rows: list[dict[int, ResultRow]], index: int) -> list[str]:
    """The simulated user's turns sent in conversation `index`, in order, from `user_rows`: those that succeeded
    (a conversation whose user turn failed or stopped is in no later round, so every earlier one was sent)."""
    found = []
    for rows_of_round in rows:
        row = rows_of_round.get(index)
        if row is not None and row["outcome"] is Outcome.SUCCEEDED and row["output_text"] is not None:
            found.append(row["output_text"])
    return found


class _HistorySource(ABC):
    """What both halves of a round read: per statement, each member's transcript so far from the files on disk."""

    def __init__(
        self, inputs: InputSet, run_dir: Path, record: RoundRecord, members: dict[str, list[int]], user_rounds: int
    ):
        self._inputs = inputs
        self._user_rounds = user_rounds
        self._run_dir = run_dir
        self._record = record
        self._members = members
        order = {statement_id: position for position, statement_id in enumerate(inputs.statement_ids)}
        self._order = sorted(members, key=lambda statement_id: order.get(statement_id, len(order)))
        self._cache: tuple[str, dict[int, PromptLike]] | None = None

    def statement_counts(self) -> list[tuple[str, list[int]]]:
        """(statement id, original indices) of the round's members, in the run's statement order."""
        return [(statement_id, self._members[statement_id]) for statement_id in self._order]

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → this round's user message (the `input_text` of the round's results)."""
        return {
            index: prompt if isinstance(prompt, str) else prompt.last_user_text
            for index, prompt in self.prompts(statement_id).items()
        }

    def items(self) -> list[PromptItem]:
        """The round's requests as prompt items, for the realtime engine (which takes a list)."""
        items = []
        for statement_id, indices in self.statement_counts():
            prompts = self.prompts(statement_id)
            for index in indices:
                prompt = prompts[index]
                text = prompt if isinstance(prompt, str) else prompt.last_user_text
                items.append(
                    PromptItem(
                        statement_id=statement_id,
                        original_index=index,
                        input_text=text,
                        prompt=None if isinstance(prompt, str) else prompt,
                    )
                )
        return items

    def prompts(self, statement_id: str) -> Mapping[int, PromptLike]:
        """original index → the request of this half of the round."""
        if self._cache is not None and self._cache[0] == statement_id:
            return self._cache[1]
        number = self._record.round
        entries = self._inputs.entries(statement_id)
        earlier = earlier_rows(self._run_dir, statement_id, number - 1)
        users = user_rows(self._run_dir, statement_id, self._user_rounds) if self._inputs.max_turns is not None else []
        prompts: dict[int, PromptLike] = {}
        for index in self._members[statement_id]:
            item = entries[index]
            if isinstance(item, str):
                prompts[index] = item
                continue
            answers = []
            for rows in earlier:
                row = rows.get(index)
                output = row["output_text"] if row is not None else None
                if output is None:  # members were chosen from succeeded turns: anything else is a damaged run
                    raise InputError(
                        round_dir(self._run_dir, number) / ROUND_RECORD,
                        f"input {index} of {statement_id!r} is in this round, but an earlier round "
                        "has no answer for it; the run directory was changed by hand",
                    )
                answers.append(output)
            prompts[index] = self._request(statement_id, item, answers, simulated_turns(users, index))
        self._cache = (statement_id, prompts)
        return prompts

    @abstractmethod
    def _request(self, statement_id: str, item: Conversation, answers: list[str], simulated: list[str]) -> PromptLike:
        """One member's request from its script, the candidate's earlier answers and the simulated user's turns."""


class RoundSource(_HistorySource):
    """The engine's item source for one round's candidate half (a `PromptSource`): per statement, each member's
    request.

    A conversation's request is its transcript so far: the inputs file gives the scripted user turns, the user
    halves' results the simulated user's, the earlier rounds' results the model's answers, all verbatim. A string
    input (round 1 only) is sent as the string itself, so its request line is byte for byte what a run without
    conversations sends.
    """

    def __init__(self, inputs: InputSet, run_dir: Path, record: RoundRecord):
        super().__init__(inputs, run_dir, record, record.members, user_rounds=record.round)

    def _request(self, statement_id: str, item: Conversation, answers: list[str], simulated: list[str]) -> PromptLike:
        return item.prompt(answers, simulated)


class UserRoundSource(_HistorySource):
    """The item source of one round's user half: each asked conversation's whole transcript so far (ending with
    the candidate's last answer), rendered into the simulated user's request (`speceval.conversations.
    simulated_user`) by `render(statement id, transcript)`."""

    def __init__(
        self,
        inputs: InputSet,
        run_dir: Path,
        record: RoundRecord,
        render: Callable[[str, list[ChatMessage]], PromptLike],
    ):
        # Not this round's own user turns: on a resume some are on disk already, and the request must not change.
        super().__init__(inputs, run_dir, record, record.asking, user_rounds=record.round - 1)
        self._render = render

    def _request(self, statement_id: str, item: Conversation, answers: list[str], simulated: list[str]) -> PromptLike:
        return self._render(statement_id, item.transcript(answers, simulated))

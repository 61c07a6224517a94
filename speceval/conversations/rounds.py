"""The rounds of a conversation run: which inputs each round holds, and what each of their requests says.

Round k is one engine run directory, `<run_dir>/rounds/<k>/`, holding turn k of every conversation still going
(round 1 also holds the plain string inputs, which end there). Its members are decided once, when round k-1's
results are final, and written to `rounds/<k>/round.json` before anything of round k is built: a resume reads them
back instead of deciding again, so no later change (say a higher `--max-attempts`) can make a conversation skip
or repeat a turn. Each request is the transcript so far, built from the inputs file and the model's own answers
read back from the earlier rounds' results on disk (`RoundSource`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_json
from speceval.batch.prompt import PromptLike
from speceval.batch.records import Outcome, ResultRow
from speceval.batch.store import RunStore
from speceval.conversations.script import Conversation
from speceval.errors import InputError
from speceval.inputs import InputSet, PromptItem

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


class RoundRecord(BaseModel):
    """`rounds/<k>/round.json`: the inputs round k sends a turn of, fixed when the round starts.

    Attributes:
        round: k (1-based).
        members: statement id → original indices of the inputs in this round, in run order.
    """

    schema_version: int = 1
    round: int = Field(ge=1)
    members: dict[str, list[int]]

    @property
    def size(self) -> int:
        """How many requests the round holds."""
        return sum(len(indices) for indices in self.members.values())

    def save(self, run_dir: Path) -> None:
        """Write it atomically (before the round's first request file)."""
        atomic_write_json(round_dir(run_dir, self.round) / ROUND_RECORD, self)

    @classmethod
    def load(cls, run_dir: Path, number: int) -> RoundRecord | None:
        """The record of round `number`, or None when that round has not started."""
        path = round_dir(run_dir, number) / ROUND_RECORD
        if not path.is_file():
            return None
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValueError as exc:
            raise InputError(path, f"corrupt round record: {exc}") from None


def first_round(inputs: InputSet) -> RoundRecord:
    """Round 1 holds every input: strings (their only request) and every conversation's first request."""
    return RoundRecord(round=1, members={entry.statement_id: list(range(entry.count))
                                         for entry in inputs.statements if entry.count})


def next_round(inputs: InputSet, run_dir: Path, previous: RoundRecord) -> RoundRecord:
    """The members of the round after `previous` (whose results are final): the conversations whose turn there
    succeeded and that have a turn left. A turn that did not succeed ends its conversation with that outcome."""
    number = previous.round + 1
    store = round_store(run_dir, previous.round)
    members: dict[str, list[int]] = {}
    for statement_id, indices in previous.members.items():
        entries = inputs.entries(statement_id)
        rows = {row["original_index"]: row for row in store.load_rows(statement_id)}
        going = []
        for index in indices:
            item = entries[index]
            row = rows.get(index)
            if isinstance(item, Conversation) and item.rounds >= number and row is not None \
                    and row["outcome"] is Outcome.SUCCEEDED:
                going.append(index)
        if going:
            members[statement_id] = going
    return RoundRecord(round=number, members=members)


def earlier_rows(run_dir: Path, statement_id: str, rounds: int) -> list[dict[int, ResultRow]]:
    """The results of one statement in rounds 1..`rounds`, each as original index → row."""
    return [{row["original_index"]: row for row in round_store(run_dir, number).load_rows(statement_id)}
            for number in range(1, rounds + 1)]


class RoundSource:
    """The engine's item source for one round (a `PromptSource`): per statement, each member's request.

    A conversation's request is its transcript so far: the inputs file gives the user turns, the earlier rounds'
    results give the model's answers, verbatim. A string input (round 1 only) is sent as the string itself, so its
    request line is byte for byte what a run without conversations sends.
    """

    def __init__(self, inputs: InputSet, run_dir: Path, record: RoundRecord):
        self._inputs = inputs
        self._run_dir = run_dir
        self._record = record
        order = {statement_id: position for position, statement_id in enumerate(inputs.statement_ids)}
        self._order = sorted(record.members, key=lambda statement_id: order.get(statement_id, len(order)))
        self._cache: tuple[str, dict[int, PromptLike]] | None = None

    def statement_counts(self) -> list[tuple[str, list[int]]]:
        """(statement id, original indices) of the round's members, in the run's statement order."""
        return [(statement_id, self._record.members[statement_id]) for statement_id in self._order]

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → this round's user turn (the `input_text` of the round's results)."""
        return {index: prompt if isinstance(prompt, str) else prompt.last_user_text
                for index, prompt in self.prompts(statement_id).items()}

    def items(self) -> list[PromptItem]:
        """The round's requests as prompt items, for the realtime engine (which takes a list)."""
        items = []
        for statement_id, indices in self.statement_counts():
            prompts = self.prompts(statement_id)
            for index in indices:
                prompt = prompts[index]
                text = prompt if isinstance(prompt, str) else prompt.last_user_text
                items.append(PromptItem(statement_id=statement_id, original_index=index, input_text=text,
                                        prompt=None if isinstance(prompt, str) else prompt))
        return items

    def prompts(self, statement_id: str) -> Mapping[int, PromptLike]:
        """original index → the request of this round: the transcript so far, ending with this round's turn."""
        if self._cache is not None and self._cache[0] == statement_id:
            return self._cache[1]
        number = self._record.round
        entries = self._inputs.entries(statement_id)
        earlier = earlier_rows(self._run_dir, statement_id, number - 1)
        prompts: dict[int, PromptLike] = {}
        for index in self._record.members[statement_id]:
            item = entries[index]
            if isinstance(item, str):
                prompts[index] = item
                continue
            answers = []
            for rows in earlier:
                row = rows.get(index)
                output = row["output_text"] if row is not None else None
                if output is None:  # members were chosen from succeeded turns: anything else is a damaged run
                    raise InputError(round_dir(self._run_dir, number) / ROUND_RECORD,
                                     f"input {index} of {statement_id!r} is in this round, but an earlier round "
                                     "has no answer for it; the run directory was changed by hand")
                answers.append(output)
            prompts[index] = item.prompt(answers)
        self._cache = (statement_id, prompts)
        return prompts

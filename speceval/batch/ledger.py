"""Where every request of a run stands, in a few bytes per request.

The engine must know, for each input, whether it has a final outcome, is in flight, or still needs sending. A
run of a million requests cannot afford a Python object per request for that, so the ledger keeps per statement
a handful of `bytearray`s indexed by the input's position: outcome code, whether the last outcome may be
retried, attempts, in-flight flag. Input texts are not kept at all: they are read from the `ItemSource` one
statement at a time when a job is built or collected.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from speceval.batch.records import ItemRef, Outcome, ResultRecord, ResultRow
from speceval.batch.refmap import RefSpan
from speceval.wire.prompt import Prompt, PromptLike
from speceval.wire.usage import Tokens, Usage

_CODES: tuple[Outcome | None, ...] = (None, *Outcome)  # code 0 = no outcome yet
_CODE_OF = {outcome: code for code, outcome in enumerate(_CODES) if outcome is not None}
_SUCCEEDED = _CODE_OF[Outcome.SUCCEEDED]
_CANCELLED = _CODE_OF[Outcome.CANCELLED]
_QUICK = (0, _SUCCEEDED, _CANCELLED)  # codes whose finality does not depend on attempts


@runtime_checkable
class ItemSource(Protocol):
    """The inputs of a run, readable one statement at a time."""

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        """(statement id, original indices of its inputs in order) for every statement, in run order."""
        ...

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → input text for one statement."""
        ...


@runtime_checkable
class PromptSource(ItemSource, Protocol):
    """An item source whose requests are not all one user message (a conversation's round carries its transcript).

    The engine builds requests from `prompts` and still writes `texts` as each result's `input_text`. Sources of
    plain strings do not implement it, and their requests are built from `texts` alone (the fast path).
    """

    def prompts(self, statement_id: str) -> Mapping[int, PromptLike]:
        """original index → what to send (a string, or a `Prompt` with earlier messages) for one statement."""
        ...


@runtime_checkable
class SharedPrefixSource(ItemSource, Protocol):
    """An item source whose prompts may start with a part shared by other requests (cache-shaped judge prompts).

    The source rendered the prompts, so it knows where that part ends; the engine hands the adapter the prompt
    with its length (`Prompt.cache_prefix`), and the adapter marks it for the provider's prompt cache.
    """

    def cache_prefix(self, text: str) -> int:
        """How many leading characters of `text` (one of this source's prompts) other requests share (0: none)."""
        ...


def request_of(source: ItemSource) -> Callable[[str], PromptLike] | None:
    """What to send for one of `source`'s texts, when that is more than the text: a `SharedPrefixSource`'s text
    with its shared prefix marked. None for every other source (its texts are sent as they are)."""
    if not isinstance(source, SharedPrefixSource):
        return None
    prefix_of = source.cache_prefix

    def request(text: str) -> PromptLike:
        cut = prefix_of(text)
        return Prompt.user(text, cache_prefix=cut) if cut else text

    return request


class ListSource:
    """An `ItemSource` over items already in memory (judge prompts, tests)."""

    def __init__(self, items: Iterable[tuple[str, int, str]]):
        self._texts: dict[str, dict[int, str]] = {}
        for statement_id, index, text in items:
            self._texts.setdefault(statement_id, {})[index] = text

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        return [(sid, list(texts)) for sid, texts in self._texts.items()]

    def texts(self, statement_id: str) -> dict[int, str]:
        return self._texts[statement_id]


class ListPromptSource(ListSource):
    """A `ListSource` whose items send more than their text (a conversation so far, a schema, a marked shared
    prefix): a `PromptSource`, so the batch engine sends what the realtime engine sends for the same items."""

    def __init__(self, items: Iterable[tuple[str, int, str, PromptLike]]):
        listed = list(items)
        super().__init__((statement_id, index, text) for statement_id, index, text, _ in listed)
        self._prompts: dict[str, dict[int, PromptLike]] = {}
        for statement_id, index, _, prompt in listed:
            self._prompts.setdefault(statement_id, {})[index] = prompt

    def prompts(self, statement_id: str) -> Mapping[int, PromptLike]:
        return self._prompts[statement_id]


@dataclass
class _Statement:
    indices: array[int] | range  # original indices, in input order (a range when they are 0..n-1)
    # original index → position, only for indices out of order (a source's own choice): in-order indices are
    # found by bisection, since a dict costs about 100 bytes a request (a judge run skips failed answers, so most
    # of its statements' indices have gaps).
    position: dict[int, int] | None
    outcome: bytearray
    retryable: bytearray
    attempts: bytearray
    flight: bytearray

    def pos(self, index: int) -> int:
        found = self.find(index)
        if found is None:
            raise KeyError(index)
        return found

    def find(self, index: int) -> int | None:
        """The position of original index `index`, None if the statement has no such input."""
        if self.position is not None:
            return self.position.get(index)
        if isinstance(self.indices, range):
            return index if 0 <= index < len(self.indices) else None
        found = bisect_left(self.indices, index)
        return found if found < len(self.indices) and self.indices[found] == index else None


class Ledger:
    """Progress of every request of one run."""

    def __init__(self, source: ItemSource, max_attempts: int):
        self.max_attempts = max_attempts
        self._statements: dict[str, _Statement] = {}
        for statement_id, indices in source.statement_counts():
            n = len(indices)
            contiguous = all(index == pos for pos, index in enumerate(indices))
            ascending = all(earlier < later for earlier, later in zip(indices, indices[1:], strict=False))
            self._statements[statement_id] = _Statement(
                # 0..n-1 (every input file) needs no array: 8 bytes a request less at a million requests.
                indices=range(n) if contiguous else array("q", indices),
                position=None if ascending else {index: pos for pos, index in enumerate(indices)},
                outcome=bytearray(n),
                retryable=bytearray(n),
                attempts=bytearray(n),
                flight=bytearray(n),
            )
        self.usage = Usage()

    # -- queries ------------------------------------------------------------------------------------------

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, tuple) or len(ref) != 2:
            return False
        statement = self._statements.get(ref[0])
        if statement is None:
            return False
        return isinstance(ref[1], int) and statement.find(ref[1]) is not None

    @property
    def statement_ids(self) -> list[str]:
        """Statements in run order."""
        return list(self._statements)

    def __len__(self) -> int:
        return sum(len(s.indices) for s in self._statements.values())

    def attempts(self, ref: ItemRef) -> int:
        """How many jobs this input was sent in so far (from collected outcomes)."""
        statement = self._statements[ref.statement_id]
        return statement.attempts[statement.pos(ref.original_index)]

    def is_final(self, ref: ItemRef) -> bool:
        """Whether the input's outcome is final (see `final_outcome`)."""
        statement = self._statements[ref.statement_id]
        pos = statement.pos(ref.original_index)
        return self._final(statement, pos)

    def _final(self, statement: _Statement, pos: int) -> bool:
        code = statement.outcome[pos]
        if code == 0:
            return False
        return final_outcome(_CODES[code], bool(statement.retryable[pos]), statement.attempts[pos], self.max_attempts)

    def pending(self) -> Iterator[ItemRef]:
        """Inputs with no final outcome that are not in flight, in run order."""
        for statement_id, statement in self._statements.items():
            flight = statement.flight
            # Whole statements are skipped in C: with a run in flight this is asked every polling round.
            if flight.find(0) < 0 or statement.outcome.count(_SUCCEEDED) == len(flight):
                continue
            for pos, index in enumerate(statement.indices):
                if not flight[pos] and not self._final(statement, pos):
                    yield ItemRef(statement_id, index)

    def has_pending(self) -> bool:
        """Whether `pending` would yield anything."""
        return next(self.pending(), None) is not None

    def counts(self) -> tuple[Counter[Outcome], int]:
        """Final outcomes per kind, and how many inputs have no final outcome yet."""
        counts: Counter[Outcome] = Counter()
        outstanding = 0
        for statement in self._statements.values():
            # Counted in C (every polling round asks): no outcome yet, succeeded and cancelled need no look at
            # attempts; only the other outcomes are checked one by one.
            outcome = statement.outcome
            quick = {code: outcome.count(code) for code in _QUICK}
            outstanding += quick[0]
            counts[Outcome.SUCCEEDED] += quick[_SUCCEEDED]
            counts[Outcome.CANCELLED] += quick[_CANCELLED]
            if sum(quick.values()) == len(outcome):
                continue
            for pos, code in enumerate(outcome):
                if code in _QUICK:
                    continue
                if self._final(statement, pos):
                    counts[_CODES[code]] += 1  # type: ignore[index]
                else:
                    outstanding += 1
        return +counts, outstanding

    # -- updates ------------------------------------------------------------------------------------------

    def set_flight(self, spans: Iterable[RefSpan], flying: bool) -> None:
        """Mark a job's inputs (its `refs` spans) as sent in a job not yet collected (or no longer)."""
        value = 1 if flying else 0
        for statement, where in self._span_positions(spans):
            if isinstance(where, slice):
                statement.flight[where] = bytes([value]) * (where.stop - where.start)
            else:
                for pos in where:
                    statement.flight[pos] = value

    def most_attempts(self, spans: Iterable[RefSpan]) -> int:
        """The most jobs any input of these spans was sent in so far (from collected outcomes): asked once per
        chunk, not once per request."""
        most = 0
        for statement, where in self._span_positions(spans):
            if isinstance(where, slice):
                most = max(most, max(statement.attempts[where], default=0))
            else:
                most = max([most, *(statement.attempts[pos] for pos in where)])
        return most

    def _span_positions(self, spans: Iterable[RefSpan]) -> Iterator[tuple[_Statement, slice | list[int]]]:
        """Each span's positions in its statement's columns: one slice when the span's inputs are stored in index
        order and consecutive (every job cut in run order: one lookup per input cost a 100,000-request run
        200,000 calls), else each input's position. Spans of unknown statements are skipped."""
        for statement_id, first, count in spans:
            statement = self._statements.get(statement_id)
            if statement is None:
                continue
            start = statement.find(first)
            if (
                start is not None
                and statement.position is None
                and start + count <= len(statement.indices)
                and statement.indices[start + count - 1] == first + count - 1
            ):
                yield statement, slice(start, start + count)
            else:
                yield statement, [statement.pos(index) for index in range(first, first + count)]

    def record(self, statement_id: str, result: ResultRecord, *, count_usage: bool = True) -> None:
        """Take note of an input's (latest) outcome as written to its results file."""
        retryable = result.error is not None and result.error.retryable
        usage = result.usage if count_usage else None
        self.note(statement_id, result.original_index, result.outcome, retryable, result.attempts, usage)

    def note_row(self, statement_id: str, row: ResultRow, *, count_usage: bool = True) -> None:
        """`record` for a results-file row as the engine reads and writes them (a dict, not a model)."""
        error = row.get("error")
        retryable = error is not None and error.get("retryable", False)
        usage = row.get("usage") if count_usage else None
        self.note(statement_id, row["original_index"], row["outcome"], retryable, row.get("attempts", 1), usage)

    def note(
        self,
        statement_id: str,
        index: int,
        outcome: Outcome,
        retryable: bool,
        attempts: int,
        usage: Usage | Tokens | Mapping[str, object] | None,
    ) -> None:
        """Take note of the (latest) outcome of input `index` of a statement; `usage` is added to the totals."""
        statement = self._statements.get(statement_id)
        if statement is None:
            return
        pos = statement.find(index)
        if pos is None:
            return
        statement.outcome[pos] = _CODE_OF[outcome]
        statement.retryable[pos] = 1 if retryable else 0
        statement.attempts[pos] = min(attempts, 255)
        self.usage.add(usage)


def final_outcome(outcome: Outcome | None, retryable: bool, attempts: int, max_attempts: int) -> bool:
    """Whether an outcome is final: succeeded or cancelled, not worth retrying, or out of attempts."""
    if outcome is None:
        return False
    if outcome is Outcome.SUCCEEDED or outcome is Outcome.CANCELLED:
        return True
    if attempts >= max_attempts:
        return True
    if outcome is Outcome.ERRORED:
        return not retryable
    return False  # expired or missing: the request never ran, so sending it again is the fix

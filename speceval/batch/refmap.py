"""A job's custom-id map, stored as the ordered list of its inputs and nothing else.

Custom ids are `<first 12 hex digits of the job's idempotency key>-<position in the job>` (see `custom_id_for`),
so the id of every request follows from the key and the request's position: a job only has to store which input
sits at each position. Inputs are cut into jobs in run order, so consecutive positions are nearly always
consecutive inputs of one statement; they are stored as spans `[statement_id, first_index, count]`. A fresh job
of 50,000 requests over 50 statements is 50 spans instead of a 50,000-entry map, which was validated and
rewritten every time the job's record was saved.

Runs written before this format stored the map itself (`"requests": {custom_id: [statement_id, index]}`); such
files are read through `RequestMap`'s validator and rewritten in the new form when next saved. A map whose ids do
not follow from the key (only hand-built records have one) keeps its ids explicitly in `custom_ids`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, model_validator

CUSTOM_ID_KEY_CHARS = 12


def custom_id_for(key: str, position: int) -> str:
    """The custom id of the request at `position` in the chunk with idempotency key `key`."""
    return f"{key[:CUSTOM_ID_KEY_CHARS]}-{position}"


class ItemRef(NamedTuple):
    """Which input a custom id stands for: a statement and the input's position in that statement's file.

    A named tuple rather than a model: a job holds up to 100,000 of them and they are dict keys in the engine's
    hot loops.
    """

    statement_id: str
    original_index: int


RefSpan = tuple[str, int, int]
"""(statement id, original index of the first input, how many inputs with consecutive indices)."""


class SpanBuilder:
    """Collects refs in position order into spans."""

    def __init__(self) -> None:
        self.spans: list[RefSpan] = []
        self.count = 0

    def add(self, ref: ItemRef) -> None:
        """Append the input at the next position."""
        spans = self.spans
        if spans:
            statement_id, first, count = spans[-1]
            if statement_id == ref[0] and first + count == ref[1]:
                spans[-1] = (statement_id, first, count + 1)
                self.count += 1
                return
        spans.append((ref[0], ref[1], 1))
        self.count += 1


def iter_refs(spans: Iterable[RefSpan]) -> Iterator[ItemRef]:
    """Every input of `spans`, in position order."""
    for statement_id, first, count in spans:
        for index in range(first, first + count):
            yield ItemRef(statement_id, index)


def _ref_of(value: Any) -> ItemRef:
    """An old-format map value: `[statement_id, index]` (as written) or the named form (as built by hand)."""
    if isinstance(value, Mapping):
        return ItemRef(str(value["statement_id"]), int(value["original_index"]))
    statement_id, index = value
    return ItemRef(str(statement_id), int(index))


def from_map(key: str, requests: Mapping[str, Any]) -> tuple[list[RefSpan], list[str] | None]:
    """Spans (and, only if its ids are not the derived ones, the ids) of an old-format custom-id map."""
    builder = SpanBuilder()
    derived = True
    for position, (custom_id, value) in enumerate(requests.items()):
        builder.add(_ref_of(value))
        derived = derived and custom_id == custom_id_for(key, position)
    return builder.spans, None if derived else list(requests)


class RequestMap(BaseModel):
    """The custom-id map of a submission intent or a batch record (both have an `idempotency_key`).

    Attributes:
        refs: the job's inputs in position order, as spans.
        custom_ids: the ids by position, only when they are not `custom_id_for(key, position)`.
    """

    idempotency_key: str
    refs: list[RefSpan] = []
    custom_ids: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_old_map(cls, data: Any) -> Any:
        """Accept `requests={custom_id: ref}`: the format of runs written before spans, and the keyword of
        records built by hand."""
        if isinstance(data, dict) and "requests" in data:
            data = dict(data)
            refs, custom_ids = from_map(str(data.get("idempotency_key", "")), data.pop("requests") or {})
            data["refs"], data["custom_ids"] = refs, custom_ids
        return data

    @property
    def size(self) -> int:
        """How many requests the map holds."""
        return sum(span[2] for span in self.refs)

    def custom_id(self, position: int) -> str:
        """The custom id of the request at `position`."""
        if self.custom_ids is not None:
            return self.custom_ids[position]
        return custom_id_for(self.idempotency_key, position)

    def item_refs(self) -> Iterator[ItemRef]:
        """The job's inputs in position order."""
        return iter_refs(self.refs)

    def position_of(self, custom_id: str) -> int | None:
        """The position of the request with `custom_id`, or None if this job has no such request."""
        return self.locator()(custom_id)

    def locator(self) -> Callable[[str], int | None]:
        """`position_of` for many lookups: the job's size (and explicit ids) are read once, here.

        Nothing is cached on the record itself: `model_copy(update=...)` would carry a stale cache along.
        """
        size = self.size
        if self.custom_ids is not None:
            positions = {custom_id: position for position, custom_id in enumerate(self.custom_ids)}
            return positions.get
        prefix = self.idempotency_key[:CUSTOM_ID_KEY_CHARS]

        def derived(custom_id: str) -> int | None:
            head, _, tail = custom_id.rpartition("-")
            if head != prefix or not (tail.isascii() and tail.isdigit()) or (tail != "0" and tail.startswith("0")):
                return None
            position = int(tail)
            return position if position < size else None

        return derived

    @property
    def requests(self) -> dict[str, ItemRef]:
        """custom id → input, built on demand (the engine itself never needs the whole map)."""
        return {self.custom_id(position): ref for position, ref in enumerate(self.item_refs())}

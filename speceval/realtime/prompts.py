"""The prompts of a realtime or Ray run, rendered one statement at a time from its `ItemSource`.

A judge run of a million requests must not hold a million prompts: the batch engine asks its source for one
statement's texts when it builds a job, and so do these engines, when a worker takes a request of a statement not
rendered yet. A statement's prompts are kept while any of its requests is queued or in flight, and dropped once
the last of them has its outcome (a request requeued for a retry keeps it, or renders it again later).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from speceval.batch.ledger import ItemSource, PromptSource, request_of
from speceval.batch.records import ItemRef
from speceval.wire.prompt import PromptLike


class PromptCache:
    """What to send for each request of a source, and its `input_text`, rendered per statement on demand."""

    def __init__(self, source: ItemSource):
        self._source = source
        self._marked = request_of(source)  # cache-shaped judge prompts carry their shared prefix's length
        self._statements: dict[str, tuple[dict[int, str], Mapping[int, PromptLike] | None]] = {}
        self._holds: Counter[str] = Counter()
        self._lock = threading.Lock()

    def refs(self) -> list[ItemRef]:
        """Every request of the source, in run order (statement by statement)."""
        return [
            ItemRef(statement_id, index)
            for statement_id, indices in self._source.statement_counts()
            for index in indices
        ]

    def hold(self, ref: ItemRef) -> None:
        """`ref` is queued: keep its statement's prompts once rendered."""
        with self._lock:
            self._holds[ref.statement_id] += 1

    def release(self, ref: ItemRef) -> None:
        """`ref` left the queue for good (it has its outcome): drop its statement's prompts when none is left."""
        with self._lock:
            self._holds[ref.statement_id] -= 1
            if self._holds[ref.statement_id] <= 0:
                del self._holds[ref.statement_id]
                self._statements.pop(ref.statement_id, None)

    def text(self, ref: ItemRef) -> str:
        """The request's text: its `input_text` in results (for a conversation's round, that round's user turn)."""
        return self._statement(ref.statement_id)[0][ref.original_index]

    def request(self, ref: ItemRef) -> PromptLike:
        """What to send: the text, a conversation's transcript so far, or a prompt with its shared prefix marked."""
        texts, prompts = self._statement(ref.statement_id)
        if prompts is not None:
            return prompts[ref.original_index]
        text = texts[ref.original_index]
        return self._marked(text) if self._marked is not None else text

    def _statement(self, statement_id: str) -> tuple[dict[int, str], Mapping[int, PromptLike] | None]:
        with self._lock:  # one rendering per statement, even when several workers reach it at once
            found = self._statements.get(statement_id)
            if found is None:
                source = self._source
                prompts = source.prompts(statement_id) if isinstance(source, PromptSource) else None
                found = self._statements[statement_id] = (source.texts(statement_id), prompts)
            return found

"""Split pending requests into provider jobs that respect `--batch-size` and the provider's count and byte limits.

Custom ids are `<first 12 hex digits of the chunk's idempotency key>-<position in the chunk>`: unique by
construction (no hash can collide), valid for every provider (`^[a-zA-Z0-9_-]{1,64}$`), whatever the statement id
looks like, and they carry the chunk's key, which is how an Anthropic job found after a crash is confirmed to be
ours. The map from custom id to (statement id, original index) is kept in the intent and then the batch record.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator

from speceval.batch.model import BatchedModel
from speceval.batch.records import ItemRef, SubmissionIntent
from speceval.batch.store import RunStore
from speceval.errors import InputError

CUSTOM_ID_KEY_CHARS = 12


def new_idempotency_key() -> str:
    """A fresh, unique key for one chunk (32 lowercase hex digits)."""
    return uuid.uuid4().hex


def custom_id_for(key: str, position: int) -> str:
    """The custom id of the request at `position` in the chunk with idempotency key `key`."""
    return f"{key[:CUSTOM_ID_KEY_CHARS]}-{position}"


def item_custom_id(statement_id: str, original_index: int) -> str:
    """A custom id that names one input by itself (a hash of its statement and its position), for runs whose
    requests are not cut into jobs of ours: Ray rounds and request files handed to another batch runner."""
    digest = hashlib.sha256(statement_id.encode("utf-8")).hexdigest()[:CUSTOM_ID_KEY_CHARS]
    return f"{digest}-{original_index}"


class Lookahead:
    """An iterator of refs that can show its next item without consuming it.

    Chunks are cut from a stream of pending inputs (never a list of all of them); the input that would overflow
    a chunk must stay in the stream for the next one.
    """

    def __init__(self, refs: Iterable[ItemRef]):
        self._refs = iter(refs)
        self._head: ItemRef | None = None

    def peek(self) -> ItemRef | None:
        """The next ref, or None when the stream is exhausted."""
        if self._head is None:
            self._head = next(self._refs, None)
        return self._head

    def pop(self) -> ItemRef:
        """Consume and return the next ref (call `peek` first)."""
        head = self.peek()
        if head is None:
            raise StopIteration
        self._head = None
        return head


def build_chunk(
    model: BatchedModel,
    store: RunStore,
    pending: Lookahead,
    prompt_of: Callable[[ItemRef], str],
    *,
    batch_size: int,
    attempt_of: Callable[[ItemRef], int],
) -> tuple[SubmissionIntent, int]:
    """Write the request file and the intent of the next chunk, taken from the head of `pending`.

    Returns the intent and how many requests it took from `pending`. Nothing is sent to the provider here.
    """
    key = new_idempotency_key()
    max_requests = min(batch_size, model.limits.max_requests)
    requests: dict[str, ItemRef] = {}

    def lines() -> Iterator[bytes]:
        size = 0
        while (ref := pending.peek()) is not None:
            if len(requests) >= max_requests:
                return
            custom_id = custom_id_for(key, len(requests))
            line = model.format_request(custom_id, prompt_of(ref))
            if len(line) > model.limits.max_bytes:
                raise InputError(
                    f"<input of statement {ref.statement_id!r}>",
                    f"input {ref.original_index} is {len(line)} bytes as a {model.provider} request, over the "
                    f"provider's limit of {model.limits.max_bytes} bytes per job",
                    field=f"inputs[{ref.original_index}]",
                )
            if size + len(line) > model.limits.max_bytes:
                return
            pending.pop()
            size += len(line)
            requests[custom_id] = ref
            yield line

    path, size = store.write_request_file(key, lines())
    intent = SubmissionIntent(
        idempotency_key=key,
        provider=model.provider,
        model=model.model_name,
        request_file=store.relative(path),
        request_bytes=size,
        requests=requests,
        attempt=max((attempt_of(ref) for ref in requests.values()), default=1),
    )
    store.save_intent(intent)
    return intent, len(requests)

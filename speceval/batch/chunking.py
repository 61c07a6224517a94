"""Split pending requests into provider jobs that respect `--batch-size` and the provider's count and byte limits.

Custom ids are `<first 12 hex digits of the chunk's idempotency key>-<position in the chunk>`: unique by
construction (no hash can collide), valid for every provider (`^[a-zA-Z0-9_-]{1,64}$`), whatever the statement id
looks like, and they carry the chunk's key, which is how an Anthropic job found after a crash is confirmed to be
ours. Since the ids follow from the key and the position, the intent and then the batch record keep only the
ordered inputs (`speceval.batch.refmap`).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator

from speceval.batch.model import BatchedModel
from speceval.batch.records import SubmissionIntent, prompt_digest
from speceval.batch.refmap import CUSTOM_ID_KEY_CHARS, ItemRef, RefSpan, SpanBuilder, custom_id_for
from speceval.batch.store import RunStore
from speceval.errors import InputError
from speceval.wire.prompt import PromptLike

__all__ = ["CUSTOM_ID_KEY_CHARS", "Lookahead", "build_chunk", "custom_id_for", "item_custom_id", "new_idempotency_key"]


def new_idempotency_key() -> str:
    """A fresh, unique key for one chunk (32 lowercase hex digits)."""
    return uuid.uuid4().hex


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
    prompt_of: Callable[[ItemRef], PromptLike],
    *,
    batch_size: int,
    attempts_of: Callable[[list[RefSpan]], int],
) -> tuple[SubmissionIntent, int]:
    """Write the request file and the intent of the next chunk, taken from the head of `pending`.

    Returns the intent and how many requests it took from `pending`. Nothing is sent to the provider here.
    """
    key = new_idempotency_key()
    max_requests = min(batch_size, model.limits.max_requests)
    refs = SpanBuilder()
    limit = model.limits.max_bytes
    format_request = model.format_request
    # A judge run keeps each prompt's hash, not its text (`RunStore.prompts_once`): hashed here, from the text just
    # formatted, so collecting the job need not render the prompt again. Only plain prompts (a judge prompt with its
    # shared prefix marked is one): a `Prompt` carrying a conversation is hashed at collection from its source's
    # text, as before.
    digests: bytearray | None = bytearray() if store.prompts_once else None

    def lines() -> Iterator[bytes]:
        nonlocal digests
        size = 0
        while (ref := pending.peek()) is not None:
            if refs.count >= max_requests:
                return
            prompt = prompt_of(ref)
            line = format_request(custom_id_for(key, refs.count), prompt)
            if len(line) > limit:
                raise InputError(
                    f"<input of statement {ref.statement_id!r}>",
                    f"input {ref.original_index} is {len(line)} bytes as a {model.provider} request, over the "
                    f"provider's limit of {model.limits.max_bytes} bytes per job",
                    field=f"inputs[{ref.original_index}]",
                )
            if size + len(line) > limit:
                return
            pending.pop()
            size += len(line)
            refs.add(ref)
            if digests is not None:
                text = prompt if isinstance(prompt, str) else prompt.single_text
                if text is not None:
                    digests += prompt_digest(text)
                else:
                    digests = None
            yield line

    path, size = store.write_request_file(key, lines())
    if digests is not None:
        store.write_prompt_hashes(key, bytes(digests))  # before the intent: a job never exists without them
    intent = SubmissionIntent(
        idempotency_key=key,
        provider=model.provider,
        model=model.model_name,
        request_file=store.relative(path),
        request_bytes=size,
        refs=refs.spans,
        attempt=attempts_of(refs.spans) + 1,  # once per chunk, from the ledger's columns
    )
    store.save_intent(intent)
    return intent, refs.count

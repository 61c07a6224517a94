"""The custom-id map as spans: every id maps back to its own input, and no other id maps to anything."""

from __future__ import annotations

import pytest

from speceval.batch.records import BatchRecord, JobState, OpenAIHandle, SubmissionIntent
from speceval.batch.refmap import ItemRef, SpanBuilder, custom_id_for

KEY = "0123456789abcdef0123456789abcdef"
# Gaps (retries of a few inputs), a statement split over two spans, a statement of one input.
REFS = [ItemRef("a", 0), ItemRef("a", 1), ItemRef("a", 5), ItemRef("b", 3), ItemRef("a", 6), ItemRef("c", 0)]


def _record(**fields: object) -> BatchRecord:
    return BatchRecord(
        batch_id="batch_1",
        provider="openai",
        model="m",
        idempotency_key=KEY,
        state=JobState.COMPLETED,
        raw_state="completed",
        handle=OpenAIHandle(),
        request_file="r.jsonl",
        request_count=len(REFS),
        **fields,
    )


def test_spans_keep_every_input_in_position_order():
    builder = SpanBuilder()
    for ref in REFS:
        builder.add(ref)
    assert builder.spans == [("a", 0, 2), ("a", 5, 1), ("b", 3, 1), ("a", 6, 1), ("c", 0, 1)]
    record = _record(refs=builder.spans)
    assert list(record.item_refs()) == REFS
    assert record.requests == {custom_id_for(KEY, position): ref for position, ref in enumerate(REFS)}
    locate = record.locator()
    assert [locate(custom_id_for(KEY, position)) for position in range(len(REFS))] == list(range(len(REFS)))


@pytest.mark.parametrize(
    "custom_id",
    ["0123456789ab-6", "0123456789ab-06", "0123456789ab-", "0123456789ab--1", "ffffffffffff-0", "0123456789ab-٣", "x"],
)
def test_ids_this_job_never_sent_map_to_nothing(custom_id):
    builder = SpanBuilder()
    for ref in REFS:
        builder.add(ref)
    assert _record(refs=builder.spans).position_of(custom_id) is None


def test_a_map_whose_ids_do_not_follow_from_the_key_keeps_them():
    odd = {"first": ItemRef("a", 0), "second": ItemRef("a", 1)}
    intent = SubmissionIntent(
        idempotency_key=KEY, provider="openai", model="m", request_file="r", request_bytes=1, requests=odd
    )
    assert intent.custom_ids == ["first", "second"] and intent.request_count == 2
    again = SubmissionIntent.model_validate_json(intent.model_dump_json())
    assert again.requests == odd
    assert again.position_of("second") == 1 and again.position_of(custom_id_for(KEY, 1)) is None

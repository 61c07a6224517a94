"""The engine's results rows (plain dicts) are written as exactly the file `ResultRecord` describes."""

from __future__ import annotations

from speceval.batch.records import Outcome, RequestError, ResultRecord, Usage
from speceval.batch.store import RunStore


def test_rows_are_written_as_the_records_would_be_and_read_back_as_outcomes(tmp_path):
    """`write_rows` hands the serializer each outcome as its text (the enum is slow to infer); the file must still
    be byte for byte what the typed records give, and read back with `Outcome` members."""
    store = RunStore(tmp_path)
    records = {
        0: ResultRecord(
            original_index=0,
            input_text="q0",
            output_text="a0",
            batch_id="batch_1",
            outcome=Outcome.SUCCEEDED,
            usage=Usage(input_tokens=3, output_tokens=4),
            custom_id="c0ffee000000-0",
        ),
        1: ResultRecord(
            original_index=1,
            input_text="q1",
            output_text=None,
            batch_id="batch_1",
            outcome=Outcome.ERRORED,
            error=RequestError(code="server_error", message="boom", status_code=500, retryable=True),
            attempts=2,
            custom_id="c0ffee000000-1",
        ),
        2: ResultRecord(original_index=2, input_text="q2", output_text=None, batch_id=None, outcome=Outcome.EXPIRED),
    }
    store.write_results("s", records)
    typed = store.results_path("s").read_bytes()
    rows = {row["original_index"]: row for row in store.load_rows("s")}
    assert all(type(row["outcome"]) is Outcome for row in rows.values())
    store.write_rows("s", rows)
    assert store.results_path("s").read_bytes() == typed
    again = store.load_rows("s")
    assert [row["outcome"] for row in again] == [Outcome.SUCCEEDED, Outcome.ERRORED, Outcome.EXPIRED]
    assert all(type(row["outcome"]) is Outcome for row in again)
    assert rows[0]["outcome"] is Outcome.SUCCEEDED  # the caller's rows are not changed

"""The ledger keeps a few bytes per request also when a statement's indices have gaps (a judge run skips the
answers that failed): in-order indices are found by bisection, not through a dict of every index."""

from __future__ import annotations

import tracemalloc
from array import array

from speceval.batch.ledger import Ledger
from speceval.batch.records import ItemRef, Outcome


class GappedSource:
    """Every third original index missing, as a judge's succeeded answers may leave them."""

    def __init__(self, statements: int, per_statement: int, *, ascending: bool = True):
        order = 1 if ascending else -1
        self.counts = [
            (f"s{s}", array("q", [i for i in range(per_statement * 3 // 2) if i % 3 != 2][::order]))
            for s in range(statements)
        ]

    def statement_counts(self) -> list[tuple[str, array[int]]]:
        return self.counts

    def texts(self, statement_id: str) -> dict[int, str]:
        raise AssertionError("the ledger never reads texts")


def test_gapped_indices_cost_a_few_bytes_per_request() -> None:
    source = GappedSource(statements=20, per_statement=5_000)
    tracemalloc.start()
    ledger = Ledger(source, max_attempts=3)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(ledger) == 100_000
    assert held / len(ledger) < 16, f"{held / len(ledger):.0f} bytes per request"


def test_gapped_indices_are_found_in_either_order() -> None:
    for ascending in (True, False):
        ledger = Ledger(GappedSource(statements=1, per_statement=4, ascending=ascending), max_attempts=3)
        assert ("s0", 3) in ledger and ("s0", 2) not in ledger and ("s0", 6) not in ledger
        ledger.note("s0", 3, Outcome.SUCCEEDED, False, 1, None)
        ledger.note("s0", 2, Outcome.SUCCEEDED, False, 1, None)  # not an input of the run: ignored
        assert ledger.is_final(ItemRef("s0", 3)) and not ledger.is_final(ItemRef("s0", 4))
        assert sorted(ref.original_index for ref in ledger.pending()) == [0, 1, 4]


def test_flight_spans_mark_exactly_their_inputs_in_either_order() -> None:
    # Indices 0, 1, 3, 4 (2 missing): the span (0, 2) is consecutive and set in one slice; (3, 2) too; a span over
    # the gap (1, 3) cannot be a job's span and is refused as an unknown input, in either storage order.
    for ascending in (True, False):
        ledger = Ledger(GappedSource(statements=1, per_statement=4, ascending=ascending), max_attempts=3)
        ledger.set_flight([("s0", 0, 2)], True)
        assert sorted(ref.original_index for ref in ledger.pending()) == [3, 4]
        ledger.set_flight([("s0", 3, 2)], True)
        assert list(ledger.pending()) == []
        ledger.set_flight([("s0", 0, 2)], False)
        assert sorted(ref.original_index for ref in ledger.pending()) == [0, 1]
        try:
            ledger.set_flight([("s0", 1, 3)], True)
        except KeyError:
            pass
        else:
            raise AssertionError("a span over a missing index was accepted")


def test_most_attempts_of_a_chunk_reads_in_order_and_gapped_spans_alike() -> None:
    for ascending in (True, False):
        ledger = Ledger(GappedSource(statements=2, per_statement=10, ascending=ascending), max_attempts=5)
        ledger.note("s0", 4, Outcome.EXPIRED, False, 3, None)
        ledger.note("s1", 0, Outcome.EXPIRED, False, 2, None)
        assert ledger.most_attempts([("s0", 0, 2), ("s1", 0, 2)]) == 2  # s0's 0-1 untried, s1's 0 tried twice
        assert ledger.most_attempts([("s0", 3, 2), ("s1", 0, 1)]) == 3  # s0's 3-4: 4 was tried three times
        assert ledger.most_attempts([("nowhere", 0, 5)]) == 0

"""tests/longest_first.py puts each of the suite's longest tests at the head of a worker's first queue, as
pytest-xdist's own worksteal scheduler hands the queues out (driven here with stand-in workers)."""

from __future__ import annotations

from types import SimpleNamespace

from xdist.scheduler.worksteal import WorkStealingScheduling

from tests.longest_first import LONGEST, layout, slices


class Node:
    """A worker as the scheduler sees it: the tests it is sent, in order."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)


def first_queues(nodeids: list[str], workers: int) -> list[list[str]]:
    """The tests xdist's worksteal first sends each of `workers` idle workers, in the order each runs them."""
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"] if name == "tx" else None)
    scheduler = WorkStealingScheduling(config)  # type: ignore[arg-type]
    nodes = [Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, nodeids)  # type: ignore[arg-type]
    scheduler.schedule()
    return [[nodeids[i] for i in node.sent] for node in nodes]


def test_each_longest_test_heads_a_first_queue_and_the_longest_start_at_once():
    short = [f"tests/unit/test_s.py::test_{k}" for k in range(101)]
    longest = sorted(LONGEST, key=LONGEST.__getitem__, reverse=True)
    collected = short[:40] + longest[::-1] + short[40:]  # the long ones somewhere in the middle, shortest first
    items = [SimpleNamespace(nodeid=nodeid) for nodeid in collected]
    for workers in (2, 3, 4):
        ordered = [item.nodeid for item in layout(items, workers)]  # type: ignore[arg-type]
        assert sorted(ordered) == sorted(collected)  # nothing lost, nothing twice
        queues = first_queues(ordered, workers)
        heads = [queue[: sum(nodeid in LONGEST for nodeid in queue)] for queue in queues]
        # Every long test is in the run of long tests that opens its queue, longest first there.
        assert sorted(nodeid for head in heads for nodeid in head) == sorted(longest)
        assert all(head == sorted(head, key=LONGEST.__getitem__, reverse=True) for head in heads)
        # The longest `workers` tests start first, one on each worker (of equal seconds, either).
        assert sorted(LONGEST[head[0]] for head in heads) == sorted(LONGEST[n] for n in longest[:workers])
        # Behind them the short tests keep the collection's order.
        assert [nodeid for queue in queues for nodeid in queue if nodeid not in LONGEST] == short
        assert [len(queue) for queue in queues] == slices(len(collected), workers)

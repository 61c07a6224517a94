"""tests/longest_first.py puts each of the suite's longest tests at the head of a worker's first queue, as
pytest-xdist's own worksteal scheduler hands the queues out (driven here with stand-in workers)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from xdist.scheduler.worksteal import WorkStealingScheduling

from tests.longest_first import LONGEST, ONE_WORKER, layout, slices


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
    ray_short = ["tests/raydata/test_settings.py::test_a", "tests/raydata/test_settings.py::test_b"]
    longest = sorted(LONGEST, key=LONGEST.__getitem__, reverse=True)
    collected = short[:40] + ray_short + longest[::-1] + short[40:]  # the long ones in the middle, shortest first
    items = [SimpleNamespace(nodeid=nodeid) for nodeid in collected]
    for workers in (2, 3, 4):
        ordered = [item.nodeid for item in layout(items, workers)]  # type: ignore[arg-type]
        assert sorted(ordered) == sorted(collected)  # nothing lost, nothing twice
        queues = first_queues(ordered, workers)
        laid = [queue[: sum(n in LONGEST or n.startswith(ONE_WORKER) for n in queue)] for queue in queues]
        # Every long test is in the run of laid-out tests that opens its queue; the longest of all starts first.
        assert sorted(n for head in laid for n in head if n in LONGEST) == sorted(longest)
        assert longest[0] in [head[0] for head in laid]
        for head in laid:  # each queue opens with its longest test
            assert LONGEST[head[0]] == max(LONGEST.get(n, 0) for n in head)
        # The Ray tests (listed or not) in one queue, one after another, the listed ones longest first.
        (ray,) = [[n for n in head if n.startswith(ONE_WORKER)] for head in laid if head[0].startswith(ONE_WORKER)]
        assert sorted(ray) == sorted([n for n in collected if n.startswith(ONE_WORKER)])
        assert ray == sorted(ray, key=lambda n: -LONGEST.get(n, 0)) and ray[-2:] == ray_short
        # Behind them the short tests keep the collection's order.
        assert [n for queue in queues for n in queue if n not in LONGEST and not n.startswith(ONE_WORKER)] == short
        assert [len(queue) for queue in queues] == slices(len(collected), workers)


def test_every_listed_test_is_a_test_of_the_suite():
    """A renamed or removed test would silently leave the layout (its seconds counted nowhere)."""
    root = Path(__file__).resolve().parent.parent.parent
    for nodeid in LONGEST:
        path, name = nodeid.split("::")
        source = root / path
        assert source.is_file(), nodeid
        assert f"def {name.split('[')[0]}(" in source.read_text(encoding="utf-8"), nodeid

"""Benchmark (c): monitoring many active jobs. API calls per polling cycle and time per cycle.

Submits `--jobs` OpenAI batch jobs to the emulator (a few requests each, long turnaround so they stay active),
then lets the engine poll them for `--cycles` rounds and reports, from the emulator's request counters and the
engine's own timing: GET requests per cycle (the floor is one per active job with the per-job retrieve endpoint),
and seconds per cycle, as a ratio to the poll interval.

    python benchmarks/poll_many.py [--jobs 200] [--cycles 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.batch.engine import BatchEngine, EngineOptions  # noqa: E402
from speceval.batch.store import RunStore  # noqa: E402
from speceval.emulator import Emulator, FaultConfig  # noqa: E402
from speceval.providers.openai_batch import OpenAIBatchedModel  # noqa: E402
from speceval.wire.prompt import PromptItem  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--per-job", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--poll", type=float, default=1.0)
    args = parser.parse_args()
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    items = [
        PromptItem(statement_id=f"s{j:04d}", original_index=i, input_text=f"job {j} question {i}")
        for j in range(args.jobs)
        for i in range(args.per_job)
    ]
    # Long enough that every job is still active after the measured cycles.
    turnaround = 3600.0
    with tempfile.TemporaryDirectory() as tmp, Emulator(faults=FaultConfig(turnaround_seconds=turnaround)) as emu:
        model = OpenAIBatchedModel("gpt-4.1-mini", api_key="sk-bench-poll", base_url=emu.openai_base_url)
        options = EngineOptions(batch_size=args.per_job, poll_interval=args.poll)
        engine = BatchEngine(model, RunStore(Path(tmp)), options)
        engine.start(items)
        began = time.perf_counter()
        assert engine.tick() is None  # first round: submits every job, then polls them once
        submitted = time.perf_counter() - began
        round_times, round_calls = [], []
        for _ in range(args.cycles):
            time.sleep(args.poll)
            before = _retrieves(emu)
            began = time.perf_counter()
            assert engine.tick() is None
            round_times.append(time.perf_counter() - began)
            round_calls.append(_retrieves(emu) - before)
    mean_time = sum(round_times) / len(round_times)
    mean_calls = sum(round_calls) / len(round_calls)
    per_job = submitted / args.jobs * 1000
    print(f"jobs active: {args.jobs}; submitting them all took {submitted:.2f} s ({per_job:.0f} ms/job)")
    print(f"API calls per polling round: {mean_calls:.1f} = {mean_calls / args.jobs:.2f} per active job")
    print(
        f"time per polling round: {mean_time:.3f} s = {mean_time / args.jobs * 1000:.2f} ms per job "
        f"= {mean_time / args.poll:.2f} of a {args.poll:g} s poll interval"
    )


def _retrieves(emu: Emulator) -> int:
    return sum(n for route, n in emu.stats.requests.items() if route.startswith("GET /openai/v1/batches"))


if __name__ == "__main__":
    main()

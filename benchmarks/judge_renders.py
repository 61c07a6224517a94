"""Benchmark (issue 25): how often the compliance judge renders each prompt, and where its time goes.

Fabricates the data of `evidence_memory.py` (a spec of `--statements` statements, a generation run of N answers),
starts an emulator in its own process and runs `run_batched_binary_compliance` over the N answers in this
process under cProfile. Prints the judge requests (answers plus the spec's example responses), the calls of the
template renderer (`speceval.judging.prompts.render`) per request, wall and CPU time (of this process: the
emulator's CPU is not counted), and the functions with the most cumulative time.

    python benchmarks/judge_renders.py [--size 10000] [--statements 200] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import runpy
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.evidence_memory import JUDGE, emulator, make_data  # noqa: E402


def render_calls(stats: pstats.Stats) -> int:
    """Calls of `render` in speceval/judging/prompts.py (every judge template goes through it)."""
    return sum(
        calls
        for (path, _, name), (_, calls, *_) in stats.stats.items()  # type: ignore[attr-defined]
        if name == "render" and path.endswith(os.path.join("judging", "prompts.py"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--plain", action="store_true", help="no profiler: wall and CPU time only (renders uncounted)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="speceval-renders-") as tmp:
        root = Path(tmp)
        data = make_data(root / "data", args.size, args.statements, verdicts=False)
        with emulator(root) as base_url:
            os.environ.update(
                OPENAI_API_KEY="sk-bench-renders", OPENAI_BASE_URL=base_url, NO_PROXY="127.0.0.1,localhost"
            )
            sys.argv = [
                "run_batched_binary_compliance",
                "--spec-path",
                str(data["spec"]),
                "--candidate-generation-dirs",
                str(data["run"]),
                "--compliance-judge-model-name",
                JUDGE,
                "--output-dir-base",
                str(root / "out"),
                "--batch-size",
                "50000",
                "--poll-interval",
                "0.5",
            ]
            profile = cProfile.Profile()
            wall, cpu = time.perf_counter(), time.process_time()
            if not args.plain:
                profile.enable()
            try:
                runpy.run_module("batched_examples.run_batched_binary_compliance", run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise
            finally:
                profile.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    requests = args.size + args.statements * 2  # every answer, and each statement's good and bad example
    if args.plain:
        print(f"{args.size:,} answers, {requests:,} judge requests: wall {wall:.1f} s, CPU {cpu:.1f} s")
        return
    stats = pstats.Stats(profile)
    calls = render_calls(stats)
    print(
        f"{args.size:,} answers, {requests:,} judge requests: {calls:,} renders ({calls / requests:.2f} a "
        f"request); wall {wall:.1f} s, CPU {cpu:.1f} s (under cProfile)"
    )
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()

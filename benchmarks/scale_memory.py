"""Benchmark (b): peak memory of a generation run as the number of requests grows (target: flat).

Runs the generation command against the emulator (instant turnaround, jobs split by the OpenAI limit of 50,000
requests) for each size in `--sizes`, and prints peak RSS, memory per request, and the ratio of the largest run's
peak to the smallest run's peak (1.0 = perfectly flat; equal to the size ratio = linear growth).

    python benchmarks/scale_memory.py [--sizes 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.scale_generation import make_data  # noqa: E402
from speceval.emulator import Emulator, FaultConfig  # noqa: E402


def run_once(requests: int, statements: int, root: Path, env: dict[str, str]) -> dict[str, float]:
    spec, inputs = make_data(root, requests, statements)
    out = root / "measure.json"
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "_measure.py"),
        str(out),
        "-m",
        "batched_examples.run_batched_generation",
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        "gpt-4.1-mini",
        "--output-base-dir",
        str(root / "out"),
        "--batch-size",
        "50000",
        "--poll-interval",
        "0.5",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"run of {requests} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.read_text())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--statements", type=int, default=200)
    args = parser.parse_args()
    rows = []
    with Emulator(faults=FaultConfig(turnaround_seconds=0.0)) as emu:
        env = dict(
            os.environ,
            OPENAI_API_KEY="sk-bench-memory",
            OPENAI_BASE_URL=emu.openai_base_url,
            NO_PROXY="127.0.0.1,localhost",
            PYTHONPATH=str(REPO),
        )
        for size in sorted(args.sizes):
            with tempfile.TemporaryDirectory(prefix="speceval-mem-") as tmp:
                result = run_once(size, args.statements, Path(tmp), env)
            rows.append((size, result))
            print(
                f"{size:>9,} requests: {result['seconds']:7.1f} s, peak {result['peak_mib']:7.1f} MiB, "
                f"{result['peak_mib'] * 1024 * 1024 / size:7.0f} bytes/request",
                flush=True,
            )
    (small, first), (large, last) = rows[0], rows[-1]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(
        f"peak memory ratio ({large:,} / {small:,} requests): {last['peak_mib'] / first['peak_mib']:.2f} "
        f"(size ratio {large / small:.0f}; target: close to 1)"
    )


if __name__ == "__main__":
    main()

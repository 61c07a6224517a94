"""Benchmark: N requests through `--org ray` (Ray Data LLM's HTTP processor) vs `--org openai-compatible` (the
realtime engine), both against the emulator's chat endpoint in this process, same concurrency.

Interleaved A B B A … (at least 3 pairs); prints wall time and peak memory of each run and the ratios ray /
openai-compatible (min / median / max over pairs). Memory is the peak, sampled every 0.2 s, of the resident sets
of the whole process tree (the CLI plus, for Ray, its raylet, GCS and workers): what the machine must hold.

    python benchmarks/ray_vs_realtime.py [--requests 10000] [--pairs 3] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.realtime_throughput import make_data  # noqa: E402
from speceval.emulator import Emulator  # noqa: E402

MODEL = "bench/open-model"


def tree_rss_mib(root: int) -> float:
    """Resident memory of `root` and every descendant (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, frontier = 0, [root]
    while frontier:
        pid = frontier.pop()
        total += rss.get(pid, 0)
        frontier.extend(child for child, parent in parents.items() if parent == pid)
    return total / 2**20


def run(kind: str, emu: Emulator, spec: Path, inputs: Path, root: Path, concurrency: int) -> dict[str, float]:
    out = root / f"out-{kind}-{time.monotonic_ns()}"
    org = ["--org", "ray"] if kind == "ray" else ["--org", "openai-compatible"]
    env = dict(
        os.environ,
        NO_PROXY="127.0.0.1,localhost",
        RAY_DISABLE_USAGE_STATS="1",
        OPENAI_API_KEY="sk-bench",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [
        sys.executable,
        "-m",
        "batched_examples.run_batched_generation",
        *org,
        "--base-url",
        emu.openai_base_url,
        "--model-name",
        MODEL,
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--output-base-dir",
        str(out),
        "--max-concurrency",
        str(concurrency),
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    peak = 0.0
    done = threading.Event()
    errors: list[str] = []
    threading.Thread(
        target=lambda: (errors.append(process.stderr.read() if process.stderr else ""), done.set()), daemon=True
    ).start()
    while process.poll() is None:
        peak = max(peak, tree_rss_mib(process.pid))
        time.sleep(0.2)
    done.wait(30)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{kind} run failed ({process.returncode}): {errors[0][-2000:] if errors else ''}")
    results = [r for p in out.glob("*/*/*/results/*.json") for r in json.loads(p.read_text())]
    succeeded = sum(r["outcome"] == "succeeded" for r in results)
    return {"seconds": seconds, "peak_mib": peak, "succeeded": succeeded}


def spread(values: list[float]) -> str:
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Emulator() as emu:
        root = Path(tmp)
        spec, inputs = make_data(root, args.requests)
        pairs: list[dict[str, dict[str, float]]] = []
        for index in range(args.pairs):
            order = ("realtime", "ray") if index % 2 == 0 else ("ray", "realtime")  # A B, B A, A B, ...
            pair = {kind: run(kind, emu, spec, inputs, root, args.concurrency) for kind in order}
            for kind in order:
                m = pair[kind]
                print(
                    f"pair {index + 1} {kind:8s}: {m['seconds']:7.1f} s, peak {m['peak_mib']:7.1f} MiB, "
                    f"{int(m['succeeded'])} succeeded",
                    flush=True,
                )
                if m["succeeded"] != args.requests:
                    raise SystemExit(f"{kind}: {int(m['succeeded'])} of {args.requests} succeeded")
            pairs.append(pair)
    wall = [p["ray"]["seconds"] / p["realtime"]["seconds"] for p in pairs]
    memory = [p["ray"]["peak_mib"] / p["realtime"]["peak_mib"] for p in pairs]
    print(f"\n{args.requests} requests, concurrency {args.concurrency}, {args.pairs} interleaved pairs")
    print(f"wall time ray / openai-compatible: {spread(wall)}")
    print(f"peak memory (process tree) ray / openai-compatible: {spread(memory)}")


if __name__ == "__main__":
    main()

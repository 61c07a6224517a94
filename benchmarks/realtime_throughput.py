"""Benchmark: realtime generation against a rate-limited server — achieved throughput and 429 rate, as ratios.

The emulator (in this process) enforces LIMIT requests per sliding window of WINDOW seconds and answers 429 beyond
it. The generation CLI runs as a subprocess (`--org openai-compatible --base-url …`) twice:

  1. `--rpm` just under the limit (0.95 × LIMIT): throughput should be ≥ 0.90 of the limit, 429s < 2% of requests;
  2. `--rpm` above the limit (1.5 × LIMIT) and no rate-limit headers: it must still finish, every answer correct.

Achieved throughput = (admitted requests − 1) / (last admission − first admission), measured by the server;
the ratio is that over LIMIT / WINDOW. WINDOW defaults to 5 s (the client's `--rate-period-seconds` matches it)
so a run takes seconds; `--window 60` measures real per-minute limits.

    python benchmarks/realtime_throughput.py [--requests 450] [--limit 150] [--window 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.emulator import Emulator, FaultConfig, respond  # noqa: E402

MODEL = "bench/open-model"


def make_data(root: Path, requests: int, statements: int = 10) -> tuple[Path, Path]:
    """A spec and `requests` distinct prompts spread over `statements` statements."""
    spec = root / "spec.jsonl"
    spec.write_text("".join(json.dumps({"id": f"s{k}", "text": f"Statement {k}."}) + "\n" for k in range(statements)))
    inputs = root / "inputs"
    inputs.mkdir()
    for k in range(statements):
        prompts = [f"statement {k}, prompt {i}: please answer" for i in range(k, requests, statements)]
        (inputs / f"s{k}.json").write_text(json.dumps({"inputs": prompts}))
    return spec, inputs


def phase(emu: Emulator, root: Path, spec: Path, inputs: Path, rpm: float, window: float) -> dict[str, float]:
    """Run the CLI once at `rpm` per `window`; returns what the server measured."""
    emu.realtime.reset()
    out = root / f"out-{rpm:g}"
    env = dict(
        os.environ,
        OPENAI_API_KEY="sk-bench",
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "batched_examples.run_batched_generation",
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            MODEL,
            "--org",
            "openai-compatible",
            "--base-url",
            emu.openai_base_url,
            "--output-base-dir",
            str(out),
            "--rpm",
            f"{rpm:g}",
            "--rate-period-seconds",
            f"{window:g}",
            "--max-concurrency",
            "32",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"generation failed ({done.returncode}):\n{done.stderr[-2000:]}")
    records = [r for p in out.glob("*/*/*/results/*.json") for r in json.loads(p.read_text())]
    wrong = sum(r["outcome"] != "succeeded" or r["output_text"] != respond(MODEL, r["input_text"]) for r in records)
    stats = emu.realtime.stats()
    span = (stats.last_admitted_at or 0.0) - (stats.first_admitted_at or 0.0)
    return {
        "records": len(records),
        "wrong": wrong,
        "admitted": stats.admitted,
        "arrived": stats.arrived,
        "rate_limited": stats.rate_limited,
        "achieved_per_second": (stats.admitted - 1) / span if span > 0 else 0.0,
        "wall_seconds": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=450, help="requests per phase (a few windows worth)")
    parser.add_argument("--limit", type=int, default=150, help="server limit: requests per window")
    parser.add_argument("--window", type=float, default=5.0, help="server window and client period, seconds")
    parser.add_argument("--latency", type=float, default=0.05, help="server answer latency, seconds")
    args = parser.parse_args()
    allowed = args.limit / args.window
    with tempfile.TemporaryDirectory() as tmp, Emulator() as emu:
        root = Path(tmp)
        spec, inputs = make_data(root, args.requests)
        print(
            f"server limit: {args.limit} requests per {args.window:g} s ({allowed:.1f}/s); "
            f"{args.requests} requests per phase; latency {args.latency * 1000:.0f} ms"
        )
        for label, rpm, headers in (
            ("rpm just under the limit (0.95x)", 0.95 * args.limit, True),
            ("rpm above the limit (1.5x), no rate-limit headers", 1.5 * args.limit, False),
        ):
            emu.faults = FaultConfig(
                realtime_rpm=args.limit,
                realtime_window_seconds=args.window,
                realtime_latency_seconds=args.latency,
                realtime_rate_headers=headers,
            )
            result = phase(emu, root, spec, inputs, rpm, args.window)
            throughput = result["achieved_per_second"] / allowed
            rate_429 = result["rate_limited"] / result["arrived"] if result["arrived"] else 0.0
            wrong = "" if result["wrong"] == 0 else f", {result['wrong']} WRONG"
            achieved = result["achieved_per_second"]
            print(f"\n{label}: --rpm {rpm:g}")
            print(f"  throughput / limit : {throughput:.3f}  ({achieved:.1f}/s of {allowed:.1f}/s)")
            print(f"  429s / requests    : {rate_429:.4f}  ({result['rate_limited']} of {result['arrived']} sent)")
            print(
                f"  results            : {result['records']}/{args.requests} on their own inputs{wrong}; "
                f"wall {result['wall_seconds']:.1f} s"
            )


if __name__ == "__main__":
    main()

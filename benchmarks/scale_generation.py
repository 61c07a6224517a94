"""Benchmark (a): N requests through generation against the emulator (instant turnaround), against a floor.

The floor (`floor_openai_batch.py`) does the same work with the openai SDK in a minimal script. Both run as
separate processes against one emulator in this process, with the same chunk size and poll interval; the
ratios printed are ours / floor, measured in this run, interleaved (floor, speceval, speceval, floor, ...) and
shown as min / median / max over pairs. Targets (issue 14): wall time ≤ 1.2×, peak memory ≤ 1×.

    python benchmarks/scale_generation.py [--requests 100000] [--statements 100] [--chunk 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.emulator import Emulator, FaultConfig  # noqa: E402


def make_data(root: Path, requests: int, statements: int) -> tuple[Path, Path]:
    """A spec with `statements` statements and `requests` inputs spread evenly over them."""
    spec = root / "spec.jsonl"
    inputs = root / "inputs"
    inputs.mkdir()
    per = requests // statements
    lines = []
    for s in range(statements):
        sid = f"statement_{s:04d}"
        lines.append(json.dumps({"id": sid, "text": f"Statement number {s}."}))
        prompts = [f"Question {i} about statement {s}: what should an assistant do here?" for i in range(per)]
        (inputs / f"{sid}.json").write_text(json.dumps({"inputs": prompts}))
    spec.write_text("\n".join(lines) + "\n")
    return spec, inputs


def measure(label: str, argv: list[str], env: dict[str, str], scratch: Path) -> dict[str, float]:
    out = scratch / f"{label}.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "_measure.py"), str(out), *argv]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"{label} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.read_text())
    seconds, cpu, peak = result["seconds"], result["cpu_seconds"], result["peak_mib"]
    print(f"{label:>8}: {seconds:8.2f} s   cpu {cpu:6.2f} s   peak {peak:8.1f} MiB")
    return result


def spread(values: list[float]) -> str:
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--statements", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs: floor, speceval, speceval, floor, ...")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs of each side first (bytecode, caches)")
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout of speceval (e.g. `git worktree add` of an older commit) run as a third side in the "
        "same rounds, so a change's effect is a ratio against the same floor runs",
    )
    args = parser.parse_args()
    expected = (args.requests // args.statements) * args.statements
    pairs: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="speceval-bench-") as tmp:
        root = Path(tmp)
        spec, inputs = make_data(root, args.requests, args.statements)
        with Emulator(faults=FaultConfig(turnaround_seconds=0.0)) as emu:
            env = dict(
                os.environ,
                OPENAI_API_KEY="sk-bench-key-0000",
                OPENAI_BASE_URL=emu.openai_base_url,
                NO_PROXY="127.0.0.1,localhost",
                PYTHONPATH=str(REPO),
            )
            # One unmeasured run of each first: a fresh clone has no bytecode yet, and the first run of either side
            # would pay for compiling it (2-5 s for speceval), which is not what this compares.
            sides = ("floor", "speceval", "before") if args.before else ("floor", "speceval")
            rounds = [("warm-up", sides)] * args.warmup + [
                ("pair", sides if index % 2 == 0 else sides[::-1])  # A B, B A, ...
                for index in range(args.pairs)
            ]
            for index, (kind, order) in enumerate(rounds):
                pair = {}
                for label in order:
                    out = root / f"{label}-{index}"
                    if label == "floor":
                        argv = [
                            str(REPO / "benchmarks" / "floor_openai_batch.py"),
                            str(inputs),
                            str(out),
                            str(args.chunk),
                            str(args.poll),
                        ]
                    else:
                        argv = [
                            "-m",
                            "batched_examples.run_batched_generation",
                            "--spec-path",
                            str(spec),
                            "--pregenerated-inputs-dir",
                            str(inputs),
                            "--model-name",
                            "gpt-4.1-mini",
                            "--output-base-dir",
                            str(out),
                            "--batch-size",
                            str(args.chunk),
                            "--poll-interval",
                            str(args.poll),
                        ]
                    side_env = env if label != "before" else dict(env, PYTHONPATH=str(args.before))
                    pair[label] = measure(label if kind == "pair" else f"({label})", argv, side_env, root)
                    produced = sum(
                        len(json.loads(p.read_text()))
                        for p in out.rglob("*.json")
                        if p.parent.name == "results" or label == "floor"
                    )
                    if produced != expected:
                        sys.exit(f"{label} wrote {produced} results, expected {expected}")
                    shutil.rmtree(out)
                if kind == "pair":
                    pairs.append(pair)
    wall = [p["speceval"]["seconds"] / p["floor"]["seconds"] for p in pairs]
    memory = [p["speceval"]["peak_mib"] / p["floor"]["peak_mib"] for p in pairs]
    cpu = [p["speceval"]["cpu_seconds"] / p["floor"]["cpu_seconds"] for p in pairs]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"requests: {expected}, chunk {args.chunk}, poll {args.poll} s, {args.pairs} interleaved pairs")
    print(f"wall time ratio (speceval / floor): {spread(wall)}  (target <= 1.2)")
    print(f"peak memory ratio (speceval / floor): {spread(memory)}  (target <= 1.0)")
    # The emulator's own work (most of the wall time) is in this process, shared by both sides; the CPU of the
    # measured process is the part each side controls, and is steadier when other programs load the machine.
    print(f"CPU time ratio (speceval / floor): {spread(cpu)}")
    if args.before:
        before_wall = [p["before"]["seconds"] / p["floor"]["seconds"] for p in pairs]
        before_cpu = [p["before"]["cpu_seconds"] / p["floor"]["cpu_seconds"] for p in pairs]
        print(f"before ({args.before}): wall time ratio {spread(before_wall)}, CPU time ratio {spread(before_cpu)}")


if __name__ == "__main__":
    main()

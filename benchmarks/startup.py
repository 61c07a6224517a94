"""Benchmark: start-up time of `import speceval` and of the commands' `--help`, against a bare interpreter.

Each measured command runs in a fresh interpreter (`sys.executable`); each pair runs the bare interpreter
(`python -c pass`) and the command back to back, alternating which goes first (A/B, then B/A), so drift in the
machine's load hits both sides alike. Reported per command: min/median/max wall seconds of both sides, and the
ratio of the medians. Target (issue 14): every command under 0.15 s.

    python benchmarks/startup.py [--pairs 9] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BARE = ["-c", "pass"]
COMMANDS = {
    "import speceval": ["-c", "import speceval"],
    "speceval --help": ["-m", "speceval", "--help"],
    "speceval status --help": ["-m", "speceval", "status", "--help"],
    "speceval run --help": ["-m", "speceval", "run", "--help"],
    "speceval monitor --help": ["-m", "speceval", "monitor", "--help"],
    "run_batched_generation --help": ["-m", "batched_examples.run_batched_generation", "--help"],
    "run_batched_binary_compliance --help": ["-m", "batched_examples.run_batched_binary_compliance", "--help"],
}


def _wall(args: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def _stats(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def measure(command: list[str], pairs: int) -> dict[str, object]:
    """`pairs` interleaved (bare, command) pairs; the order flips every pair."""
    bare: list[float] = []
    timed: list[float] = []
    for pair in range(pairs):
        if pair % 2 == 0:
            bare.append(_wall(BARE))
            timed.append(_wall(command))
        else:
            timed.append(_wall(command))
            bare.append(_wall(BARE))
    return {
        "bare": _stats(bare),
        "command": _stats(timed),
        "ratio_of_medians": statistics.median(timed) / statistics.median(bare),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=9, help="interleaved pairs per command (at least 5)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error("--pairs must be at least 5")
    for command in COMMANDS.values():  # warm the file cache and the bytecode, unmeasured
        _wall(command)
    results = {name: measure(command, args.pairs) for name, command in COMMANDS.items()}
    print(f"{'command':40} {'bare min/med/max s':>22} {'command min/med/max s':>24} {'ratio':>6}")
    for name, result in results.items():
        bare, timed = result["bare"], result["command"]
        assert isinstance(bare, dict) and isinstance(timed, dict)
        print(
            f"{name:40} {bare['min']:6.3f} {bare['median']:6.3f} {bare['max']:6.3f}   "
            f"{timed['min']:6.3f} {timed['median']:6.3f} {timed['max']:6.3f}   {result['ratio_of_medians']:5.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps({"pairs": args.pairs, "results": results}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

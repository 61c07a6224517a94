"""Benchmark (issue 43): a 4-round conversation study through each service tier, against the emulator.

500 scripted conversations of 4 user turns (one round per turn: round k+1 is built from round k's answers), sent by
`run_batched_generation` four ways in one run: all-batch (`--tier batch`), all-flex (`--tier flex`), all-standard
(`--tier standard`) and `--tier auto --deadline-hours D`. Time is scaled alike for every tier: one hour is `--hour`
seconds (default 4; the issue suggests 2, where the unscaled HTTP work is most of a flex round), so a batch round trip
of 6 h takes 24 s, a flex call of 2 min 133 ms and a standard call of 10 s 11 ms (each plus the real HTTP work); the
default deadline, 6 h, fits no batch round trip (the plan keeps a round on the Batch API wherever the deadline allows
it, which 8 h now does for round 1). Costs are the `speceval cost` of each run (shipped price
table; the emulator's answers are SYNTHETIC, their token counts are what is priced). Printed: per tier the wall time
(min / median / max over `--pairs` interleaved repeats) and cost, and the ratios the issue targets: auto's cost /
all-standard's (≤ 0.55) and auto's wall time / all-batch's (≤ 0.3).

    python benchmarks/tiers.py [--conversations 500] [--pairs 3] [--hour 4] [--deadline-hours 6]

"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.emulator import Emulator, FaultConfig  # noqa: E402

MODEL = "o4-mini"  # served at flex by the shipped table
TIERS = ("batch", "flex", "standard", "auto")


def make_data(root: Path, conversations: int, statements: int = 10) -> tuple[Path, Path]:
    """A spec of `statements` statements and `conversations` 4-turn scripted conversations over them."""
    spec, inputs = root / "spec.jsonl", root / "inputs"
    inputs.mkdir()
    per = conversations // statements
    lines = []
    for s in range(statements):
        sid = f"statement_{s:02d}"
        lines.append(json.dumps({"id": sid, "text": f"Statement number {s}."}))
        items = [
            {
                "id": f"c{s}_{i}",
                "turns": [
                    f"Question {i} about statement {s}?",
                    "Are you sure?",
                    "Please reconsider.",
                    "Final answer?",
                ],
            }
            for i in range(per)
        ]
        (inputs / f"{sid}.json").write_text(json.dumps({"inputs": items}))
    spec.write_text("\n".join(lines) + "\n")
    return spec, inputs


def run_tier(tier: str, spec: Path, inputs: Path, out: Path, env: dict[str, str], deadline: float) -> float:
    """Wall seconds of one generation run at `tier`."""
    argv = [
        sys.executable,
        "-m",
        "batched_examples.run_batched_generation",
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(out),
        "--new-run",
        "--tier",
        tier,
        *(["--deadline-hours", str(deadline)] if tier == "auto" else []),
        *(["--max-concurrency", "32"] if tier != "batch" else []),
    ]
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"{tier} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def cost(out: Path, env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "speceval", "cost", str(out), "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(done.stderr)
    return float(json.loads(done.stdout)["total_usd"])


def spread(values: list[float]) -> str:
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--hour", type=float, default=4.0, help="seconds that stand for one hour")
    parser.add_argument("--deadline-hours", type=float, default=6.0)
    args = parser.parse_args()
    hour = args.hour
    faults = FaultConfig(
        turnaround_seconds=6 * hour,  # the plan's expected OpenAI batch round trip (6 h)
        flex_latency_seconds=120 / 3600 * hour,  # the plan's 2 minutes a flex call
        flex_latency_spread=0.5,
        realtime_latency_seconds=10 / 3600 * hour,  # the plan's 10 s a standard call
        shuffle_results=True,
    )
    walls: dict[str, list[float]] = {tier: [] for tier in TIERS}
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="speceval-tiers-") as scratch, Emulator(faults=faults) as emu:
        root = Path(scratch)
        spec, inputs = make_data(root, args.conversations)
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-bench-key-0000",
            "OPENAI_BASE_URL": emu.openai_base_url,
            "SPECEVAL_POLL_INTERVAL": str(max(0.05, hour / 4)),
            "SPECEVAL_HOUR_SECONDS": str(hour),  # the re-plan between rounds reads the same scaled clock
            "PYTHONPATH": str(REPO),
        }
        for repeat in range(args.pairs):
            order = TIERS if repeat % 2 == 0 else tuple(reversed(TIERS))  # interleaved: no tier always first
            for tier in order:
                out = root / f"{tier}-{repeat}"
                walls[tier].append(run_tier(tier, spec, inputs, out, env, args.deadline_hours))
                costs.setdefault(tier, cost(out, env))
                print(f"{tier:>8} repeat {repeat + 1}: {walls[tier][-1]:7.2f} s  ${costs[tier]:.4f}", flush=True)
    print(
        f"\n{args.conversations} conversations x 4 rounds, 1 h = {hour} s, deadline {args.deadline_hours} h "
        f"(= {args.deadline_hours * hour:.1f} s); answers SYNTHETIC (emulator)"
    )
    for tier in TIERS:
        print(f"{tier:>8}: wall {spread(walls[tier])} s   cost ${costs[tier]:.4f}")
    ratios_cost = costs["auto"] / costs["standard"]
    ratios_wall = [a / b for a, b in zip(walls["auto"], walls["batch"], strict=True)]
    print(f"auto cost / all-standard cost: {ratios_cost:.3f} (target <= 0.55)")
    print(f"auto wall / all-batch wall (paired): {spread(ratios_wall)} (target <= 0.3)")
    met = [w <= args.deadline_hours * hour for w in walls["auto"]]
    print(f"auto met the scaled deadline in {sum(met)} of {len(met)} repeats")


if __name__ == "__main__":
    main()

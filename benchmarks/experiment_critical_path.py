"""Benchmark: an experiment's wall time against its critical path, with one slow candidate and the rest fast.

The emulator (in this process) gives each model its own batch turnaround: the slow candidate `--slow` seconds,
the other candidates `--fast`, the judge `--judge`. `speceval run` (a subprocess, timed from start to exit, so
interpreter start-up, imports and the report are all counted) runs the grid: 3 candidates, 1 judge, generation,
compliance, ranking (both orders) and the report. The critical path is the slowest generation plus one judge
turnaround; the target is wall ≤ 1.15 × critical path. A stage-by-stage runner would need at least
slow + judge (compliance) + judge (ranking), printed as "sum of stages" for comparison.

Runs are interleaved with a control where every candidate is fast (the same grid; what it costs besides
waiting for the slow candidate), so both see the same machine load.

    python benchmarks/experiment_critical_path.py [--rounds 3] [--slow 120] [--fast 2] [--judge 20] [--poll 1]
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
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.emulator import Emulator, FaultConfig  # noqa: E402

SLOW = "gpt-4.1-mini-2025-04-14"
FAST = ("gpt-4.1-nano-2025-04-14", "claude-haiku-4-5-20251001")
JUDGE = "gpt-4.1-2025-04-14"
SPEC = REPO / "data" / "specs" / "openai" / "jsonl" / "openai.jsonl"
INPUTS = REPO / "data" / "inputs" / "openai"


def experiment(folder: Path, poll: float) -> Path:
    path = folder / "experiment.yaml"
    candidates = "\n".join(f"  - model: {model}" for model in (SLOW, *FAST))
    path.write_text(
        f"experiment_name: critical-path\noutput_dir: out\n"
        f"specs:\n  - name: openai\n    spec_path: {SPEC}\n    inputs_dir: {INPUTS}\n"
        f"candidates:\n{candidates}\njudges:\n  - model: {JUDGE}\nengine:\n  poll_interval: {poll}\n",
        encoding="utf-8",
    )
    return path


def run_once(slow_seconds: float, args: argparse.Namespace) -> tuple[float, str]:
    """Wall seconds of one `speceval run` against an emulator where SLOW takes `slow_seconds`, and where they went."""
    faults = FaultConfig(turnaround_seconds=args.fast, turnaround_by_model={SLOW: slow_seconds, JUDGE: args.judge})
    with tempfile.TemporaryDirectory() as tmp, Emulator(faults=faults) as emu:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=emu.openai_base_url,
            ANTHROPIC_BASE_URL=emu.anthropic_base_url,
            OPENAI_API_KEY="sk-bench-critical-path",
            ANTHROPIC_API_KEY="sk-ant-bench-critical-path",
            NO_PROXY="127.0.0.1,localhost",
        )
        env.pop("SPECEVAL_POLL_INTERVAL", None)
        command = [sys.executable, "-m", "speceval", "run", str(experiment(Path(tmp), args.poll))]
        began, began_clock = time.perf_counter(), time.time()
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - began
        if done.returncode != 0:
            sys.exit(f"speceval run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        phases = breakdown(Path(tmp) / "out", began_clock, wall)
    return wall, phases


def breakdown(out: Path, began: float, wall: float) -> str:
    """Where the time went, from the job records (provider creation time; when the engine saw each job end)."""
    jobs: dict[str, list[tuple[float, float]]] = {"generations": [], "judge": [], "judge of slow": []}
    for path in out.glob("**/metadata/*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        created = datetime.fromisoformat(record["submitted_at"]).timestamp() - began
        ended = datetime.fromisoformat(record["ended_at"]).timestamp() - began
        stage = "generations" if path.relative_to(out).parts[0] == "generations" else "judge"
        jobs[stage].append((created, ended))
        if stage == "judge" and SLOW in str(path):
            jobs["judge of slow"].append((created, ended))
    first_job = min(created for created, _ in jobs["generations"])
    generated = max(ended for _, ended in jobs["generations"])
    # Judge jobs that judge the slow candidate's answers. OpenAI's `created_at` is whole seconds, so this can
    # read up to 1 s below zero although the job was created after the answers were collected.
    handed_off = min((created for created, _ in jobs["judge of slow"]), default=float("nan"))
    judged = max(ended for _, ended in jobs["judge"])
    return (
        f"first job at {first_job:.1f} s, last generation seen ended at {generated:.1f} s, first judge job "
        f"needing it {handed_off - generated:.1f} s later, last judge job seen ended at {judged:.1f} s, "
        f"verdicts + report + exit {wall - judged:.1f} s"
    )


def spread(values: list[float], unit: str = "") -> str:
    return f"min {min(values):.2f}{unit} / median {statistics.median(values):.2f}{unit} / max {max(values):.2f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved (slow, control) pairs")
    parser.add_argument("--slow", type=float, default=120.0, help="turnaround of the slow candidate's jobs (s)")
    parser.add_argument("--fast", type=float, default=2.0, help="turnaround of the other candidates' jobs (s)")
    parser.add_argument("--judge", type=float, default=20.0, help="turnaround of the judge's jobs (s)")
    parser.add_argument("--poll", type=float, default=1.0, help="poll interval of the experiment (s)")
    args = parser.parse_args()
    critical = args.slow + args.judge
    print(
        f"critical path {critical:.0f} s (slow generation {args.slow:.0f} s + one judge turnaround "
        f"{args.judge:.0f} s); sum of stages {args.slow + 2 * args.judge:.0f} s; poll {args.poll} s"
    )
    ratios, controls = [], []
    for round_ in range(1, args.rounds + 1):
        wall, phases = run_once(args.slow, args)
        ratios.append(wall / critical)
        control, control_phases = run_once(args.fast, args)
        controls.append(control)
        print(
            f"round {round_}: one slow candidate {wall:.2f} s = {wall / critical:.3f} x critical path; "
            f"all fast (control) {control:.2f} s; load average {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} CPUs\n  slow:    {phases}\n  control: {control_phases}",
            flush=True,
        )
    print(f"wall / critical path: {spread(ratios)}  (target <= 1.15)")
    print(f"control, all candidates fast: {spread(controls, ' s')}  (critical path {args.fast + args.judge:.0f} s)")


if __name__ == "__main__":
    main()

"""Benchmark (issue 47 item 5): the same prompts through Inspect AI's batch mode and through speceval, against one
emulator, in one run.

Both sides send N chat requests to the OpenAI Batch API of one speceval emulator (in this process, turnaround 0,
synthetic answers) and are measured each in its own process (`_measure.py`: wall time, peak resident size):

- Inspect AI: `inspect_ai.eval` of a task of N samples (`generate()`), model `openai/gpt-4.1-mini`, `batch` on
  (batches of up to `--chunk` requests, sent after 1 s, checked every `--poll` s; every sample in flight at once);
- speceval: `run_batched_generation` over the same N prompts (`--batch-size --chunk --poll-interval --poll`).

Runs are interleaved (inspect, speceval, speceval, inspect, ...), `--pairs` pairs; ratios inspect / speceval are
taken within a pair and shown as min / median / max. Then a kill-and-resume trial of each: the program is killed
(SIGKILL) once the emulator has received its first batch job, and resumed (Inspect: `inspect_ai.eval_retry` of the
log; speceval: the same command again, which resumes its unfinished run); the requests re-sent are the emulator's
requests received over both runs less N. Skipped, with the reason, when inspect_ai is not installed (the `inspect`
extra).

    python benchmarks/peer_inspect.py [--sizes 1000 10000] [--pairs 3] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.scale_generation import make_data  # noqa: E402
from speceval.emulator import Emulator, FaultConfig  # noqa: E402

TASK = r"""
import json, os
from pathlib import Path
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import generate


@task
def peer() -> Task:
    samples = []
    for path in sorted(Path(os.environ["PEER_INPUTS"]).glob("*.json")):
        for index, text in enumerate(json.loads(path.read_text())["inputs"]):
            samples.append(Sample(id=f"{path.stem}-{index}", input=text))
    return Task(dataset=MemoryDataset(samples), solver=generate())
"""

# The task lives in a file of its own (`peer_task.py` beside this script's copy), so that `eval_retry` can load it
# again from the log, as it does for any task file.
INSPECT = r"""
import os, sys
from pathlib import Path
from inspect_ai import eval, eval_retry
from inspect_ai.model import BatchConfig

inputs, log_dir, chunk, poll, retry = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
os.environ["PEER_INPUTS"] = str(inputs)
batch = BatchConfig(size=chunk, max_size=chunk, send_delay=1.0, tick=poll)
if retry:
    # eval_retry takes no generate config: the retried task keeps the log's own (batch mode included)
    logs = eval_retry(retry, log_dir=log_dir, max_connections=100_000, max_samples=100_000, display="none")
else:
    task_file = str(Path(__file__).with_name("peer_task.py"))
    logs = eval(task_file + "@peer", model="openai/gpt-4.1-mini", log_dir=log_dir, max_connections=100_000,
                max_samples=100_000, max_tokens=64, batch=batch, display="none")
log = logs[0]
if log.status != "success":
    sys.exit(f"inspect: {log.status}")
"""


def inspect_available() -> str | None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        return "inspect_ai is not installed (pip install 'speceval[inspect]'): no peer to compare with"
    return None


def argv_of(side: str, data: dict[str, Path], out: Path, chunk: int, poll: float, retry: str = "") -> list[str]:
    if side == "inspect":
        return ["-c", INSPECT, str(data["inputs"]), str(out), str(chunk), str(poll), retry]
    return [
        "-m",
        "batched_examples.run_batched_generation",
        "--spec-path",
        str(data["spec"]),
        "--pregenerated-inputs-dir",
        str(data["inputs"]),
        "--model-name",
        "gpt-4.1-mini",
        "--output-base-dir",
        str(out),
        "--batch-size",
        str(chunk),
        "--poll-interval",
        str(poll),
    ]


def measure(side: str, argv: list[str], env: dict[str, str], scratch: Path, timeout: float) -> dict[str, float]:
    report = scratch / f"{side}-{time.monotonic_ns()}.json"
    if argv[0] == "-c":  # _measure.py runs a script file, not -c
        script = scratch / "inspect_side.py"
        script.write_text(argv[1])
        script.with_name("peer_task.py").write_text(TASK)
        argv = [str(script), *argv[2:]]
    cmd = [sys.executable, str(REPO / "benchmarks" / "_measure.py"), str(report), *argv]
    try:
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{side:>9}: did not finish in {timeout:.0f} s", flush=True)
        return {"seconds": float("nan"), "peak_mib": float("nan")}
    if done.returncode != 0:
        sys.exit(f"{side} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(report.read_text())
    print(f"{side:>9}: {result['seconds']:8.2f} s   peak {result['peak_mib']:8.1f} MiB", flush=True)
    return result


def sent(emu: Emulator) -> int:
    return sum(job.request_count for job in emu.list_jobs("openai"))


def kill_and_resume(
    side: str, emu: Emulator, data: dict[str, Path], out: Path, env: dict[str, str], args: argparse.Namespace, n: int
) -> int:
    """Requests re-sent when `side` is killed after its first job reached the emulator and then resumed."""
    before = sent(emu)
    if side == "inspect":
        script = out.parent / "inspect_side.py"
        script.write_text(INSPECT)
        script.with_name("peer_task.py").write_text(TASK)
        argv = [sys.executable, str(script), str(data["inputs"]), str(out), str(args.chunk), str(args.poll), ""]
    else:
        argv = [sys.executable, *argv_of(side, data, out, args.chunk, args.poll)]
    child = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + args.timeout
    while sent(emu) == before and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    if side == "inspect":
        logs = sorted(out.glob("*.eval"))
        if not logs:
            return -1
        argv = [
            sys.executable,
            str(out.parent / "inspect_side.py"),
            str(data["inputs"]),
            str(out),
            str(args.chunk),
            str(args.poll),
            str(logs[-1]),
        ]
    else:
        # the same command again: a run left unfinished is resumed (speceval.cli.generation)
        argv = [sys.executable, *argv_of(side, data, out, args.chunk, args.poll)]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        sys.exit(f"{side}'s resume failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return sent(emu) - before - n


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--pairs", type=int, default=3, help="0: the kill-and-resume trial only")
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-resume", action="store_true", help="skip the kill-and-resume trial")
    args = parser.parse_args()
    missing = inspect_available()
    if missing:
        print(f"skipped: {missing}")
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    with (
        tempfile.TemporaryDirectory(prefix="speceval-peer-") as tmp,
        Emulator(faults=FaultConfig(turnaround_seconds=0.0)) as emu,
    ):
        env = dict(
            os.environ,
            OPENAI_API_KEY="sk-bench-key-0000",
            OPENAI_BASE_URL=emu.openai_base_url,
            NO_PROXY="127.0.0.1,localhost",
            PYTHONPATH=str(REPO),
            INSPECT_LOG_LEVEL="warning",
        )
        for n in args.sizes:
            root = Path(tmp) / f"n{n}"
            spec, inputs = make_data(_fresh(root), n, 10)
            data = {"spec": spec, "inputs": inputs}
            print(f"N = {n}", flush=True)
            walls, memory = [], []
            for index in range(args.pairs):
                order = ("inspect", "speceval") if index % 2 == 0 else ("speceval", "inspect")
                pair = {}
                for side in order:
                    pair[side] = measure(
                        side,
                        argv_of(side, data, root / f"{side}{index}", args.chunk, args.poll),
                        env,
                        root,
                        args.timeout,
                    )
                if pair["inspect"]["seconds"] != pair["inspect"]["seconds"]:  # NaN: it did not finish
                    bound = args.timeout / pair["speceval"]["seconds"]
                    print(f"  (a lower bound) inspect / speceval wall time > {bound:.1f}")
                    continue
                walls.append(pair["inspect"]["seconds"] / pair["speceval"]["seconds"])
                memory.append(pair["inspect"]["peak_mib"] / pair["speceval"]["peak_mib"])
            if walls:
                print(f"  inspect / speceval wall time: {spread(walls)} (min / median / max, {args.pairs} pairs)")
                print(f"  inspect / speceval peak memory: {spread(memory)}", flush=True)
            if not args.no_resume:
                for side in ("inspect", "speceval"):
                    again = kill_and_resume(side, emu, data, root / f"{side}-killed", env, args, n)
                    print(f"  killed after its first job and resumed: {side} re-sent {again} request(s)", flush=True)


def _fresh(root: Path) -> Path:
    root.mkdir(parents=True)
    return root


if __name__ == "__main__":
    main()

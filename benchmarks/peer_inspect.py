"""Benchmark (issue 47 item 5): the same prompts through Inspect AI's batch mode and through speceval, against one
emulator, in one run.

Both sides send N chat requests to the OpenAI Batch API of one speceval emulator (in this process, turnaround 0,
synthetic answers) and are measured each in its own process (`_measure.py`: wall time, CPU time, peak resident size):

- Inspect AI: `inspect_ai.eval` of a task of N samples (`generate()`), model `openai/gpt-4.1-mini`, `batch` on
  (batches of up to `--chunk` requests, sent after 1 s, checked every `--poll` s; every sample in flight at once),
  `log_realtime=False` unless `--inspect-realtime` (see `inspect_options`; every setting is printed as sent);
- speceval: `run_batched_generation` over the same N prompts (`--batch-size --chunk --poll-interval --poll`).

Runs are interleaved (inspect, speceval, speceval, inspect, ...), `--pairs` pairs; ratios inspect / speceval are
taken within a pair and shown as min / median / max. Then a kill-and-resume trial of each: the program is killed
(SIGKILL) once the emulator has received its first batch job (or, with `--kill-at F`, jobs holding F x N
requests), and resumed (Inspect: `inspect_ai.eval_retry` of the log; speceval: the same command again, which
resumes its unfinished run); the requests re-sent are the emulator's requests received over both runs less N (a
lower bound when the resume does not finish within `--timeout`).
Skipped, with the reason, when inspect_ai is not installed (the `inspect` extra).

    python benchmarks/peer_inspect.py [--sizes 1000 10000] [--pairs 3] [--timeout 900] [--no-resume]
        [--kill-at F] [--inspect-realtime]
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
import json, os, sys
from pathlib import Path
from inspect_ai import eval, eval_retry
from inspect_ai.model import BatchConfig

inputs, log_dir, chunk, poll, retry = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
options = json.loads(sys.argv[6])  # eval()'s logging options, as `inspect_options` builds them
os.environ["PEER_INPUTS"] = str(inputs)
batch = BatchConfig(size=chunk, max_size=chunk, send_delay=1.0, tick=poll)
if retry:
    # eval_retry takes no generate config: the retried task keeps the log's own (batch mode included)
    logs = eval_retry(retry, log_dir=log_dir, max_connections=100_000, max_samples=100_000, display="none", **options)
else:
    task_file = str(Path(__file__).with_name("peer_task.py"))
    logs = eval(task_file + "@peer", model="openai/gpt-4.1-mini", log_dir=log_dir, max_connections=100_000,
                max_samples=100_000, max_tokens=64, batch=batch, display="none", **options)
log = logs[0]
if log.status != "success":
    sys.exit(f"inspect: {log.status}")
"""


def inspect_options(realtime: bool) -> str:
    """Inspect's documented logging options as sent to `eval`/`eval_retry` (JSON).

    `log_realtime` (default on) writes every sample event to a SQLite buffer for live viewing in `inspect view`:
    a profile at 10^3 put it among Inspect's largest per-sample costs, and speceval has no live viewer to match, so
    by default it is off (the fairest documented setting); `--inspect-realtime` keeps Inspect's default.
    """
    return json.dumps({} if realtime else {"log_realtime": False})


def inspect_available() -> str | None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        return "inspect_ai is not installed (pip install 'speceval[inspect]'): no peer to compare with"
    return None


def argv_of(side: str, data: dict[str, Path], out: Path, args: argparse.Namespace, retry: str = "") -> list[str]:
    """The program of one side as `python` arguments (Inspect's as a script file written beside `out`)."""
    if side == "inspect":
        script = out.parent / "inspect_side.py"
        script.write_text(INSPECT)
        script.with_name("peer_task.py").write_text(TASK)
        options = inspect_options(args.inspect_realtime)
        return [str(script), str(data["inputs"]), str(out), str(args.chunk), str(args.poll), retry, options]
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
        str(args.chunk),
        "--poll-interval",
        str(args.poll),
    ]


def measure(side: str, argv: list[str], env: dict[str, str], scratch: Path, timeout: float) -> dict[str, float]:
    """Wall time, CPU time and peak memory of one side's run (`_measure.py`).

    A run still going after `timeout` is stopped; its CPU time and peak memory so far (read from /proc just before
    the kill) come back with `finished` 0: lower bounds, like its wall time.
    """
    report = scratch / f"{side}-{time.monotonic_ns()}.json"
    errors = report.with_suffix(".stderr")
    cmd = [sys.executable, str(REPO / "benchmarks" / "_measure.py"), str(report), *argv]
    with errors.open("w") as stderr:
        child = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            result = {"seconds": timeout, **_so_far(child.pid), "finished": 0.0}
            child.kill()
            child.wait()
            print(f"{side:>9}: did not finish in {timeout:.0f} s ({_shown(result)} when stopped)", flush=True)
            return result
    if code != 0:
        sys.exit(f"{side} failed ({code}):\n{errors.read_text()[-3000:]}")
    result = {**json.loads(report.read_text()), "finished": 1.0}
    print(f"{side:>9}: {_shown(result)}", flush=True)
    return result


def _shown(result: dict[str, float]) -> str:
    return f"{result['seconds']:8.2f} s   CPU {result['cpu_seconds']:8.2f} s   peak {result['peak_mib']:8.1f} MiB"


def _so_far(pid: int) -> dict[str, float]:
    """CPU time (user + system) and peak resident size of a running process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime: fields 14 and 15 of proc(5)
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return {"cpu_seconds": cpu, "peak_mib": peak_kib / 1024}


def sent(emu: Emulator) -> int:
    return sum(job.request_count for job in emu.list_jobs("openai"))


def kill_and_resume(
    side: str, emu: Emulator, data: dict[str, Path], out: Path, env: dict[str, str], args: argparse.Namespace, n: int
) -> str:
    """Requests re-sent when `side` is killed mid-run (SIGKILL) and then resumed."""
    before = sent(emu)
    child = subprocess.Popen(
        [sys.executable, *argv_of(side, data, out, args)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # killed once its first job has reached the emulator, or with --kill-at F once its jobs hold F * n requests
    threshold = max(1, round(args.kill_at * n))
    deadline = time.monotonic() + args.timeout
    while sent(emu) - before < threshold and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    at_kill = sent(emu) - before
    retry = ""
    if side == "inspect":
        logs = sorted(out.glob("*.eval"))
        if not logs:
            return f"no log to retry after the kill ({at_kill} request(s) sent before it)"
        retry = str(logs[-1])  # eval_retry of the killed run's log
    # speceval: the same command again, which resumes its unfinished run (speceval.cli.generation)
    argv = [sys.executable, *argv_of(side, data, out, args, retry)]
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        again = max(0, sent(emu) - before - n)  # the unfinished resume may not have sent every request yet
        return f"{at_kill} sent before the kill; the resume did not finish in {args.timeout:.0f} s, >= {again} re-sent"
    if done.returncode != 0:
        sys.exit(f"{side}'s resume failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return f"{at_kill} sent before the kill, {sent(emu) - before - n} re-sent"


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def run_pairs(n: int, data: dict[str, Path], root: Path, env: dict[str, str], args: argparse.Namespace) -> None:
    """`--pairs` interleaved pairs at size `n`; the ratios inspect / speceval within each pair, min / median / max."""
    ratios: dict[str, list[float]] = {"wall time": [], "CPU time": [], "peak memory": []}
    keys = {"wall time": "seconds", "CPU time": "cpu_seconds", "peak memory": "peak_mib"}
    for index in range(args.pairs):
        order = ("inspect", "speceval") if index % 2 == 0 else ("speceval", "inspect")
        pair = {
            side: measure(side, argv_of(side, data, root / f"{side}{index}", args), env, root, args.timeout)
            for side in order
        }
        if not pair["speceval"]["finished"]:
            print("  (no ratio: speceval did not finish)", flush=True)
            continue
        if not pair["inspect"]["finished"]:
            bounds = ", ".join(
                f"{name} > {pair['inspect'][key] / pair['speceval'][key]:.1f}" for name, key in keys.items()
            )
            print(f"  (lower bounds, Inspect stopped) inspect / speceval {bounds}", flush=True)
            continue
        for name, key in keys.items():
            ratios[name].append(pair["inspect"][key] / pair["speceval"][key])
    finished = len(ratios["wall time"])
    for name, values in ratios.items():
        if values:
            print(
                f"  inspect / speceval {name}: {spread(values)} (min / median / max, {finished} of {args.pairs} pairs)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--pairs", type=int, default=3, help="0: the kill-and-resume trial only")
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-resume", action="store_true", help="skip the kill-and-resume trial")
    parser.add_argument(
        "--kill-at",
        type=float,
        default=0.0,
        help="kill once the side's batch jobs hold this share of the N requests (0: once its first job exists)",
    )
    parser.add_argument(
        "--inspect-realtime", action="store_true", help="keep Inspect's log_realtime default (on) instead of off"
    )
    args = parser.parse_args()
    missing = inspect_available()
    if missing:
        print(f"skipped: {missing}")
        return
    import inspect_ai

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    print(
        f"inspect_ai {inspect_ai.__version__}: BatchConfig(size={args.chunk}, max_size={args.chunk}, send_delay=1.0, "
        f"tick={args.poll}), max_connections=100000, max_samples=100000, max_tokens=64, "
        f"eval options {inspect_options(args.inspect_realtime)}",
        flush=True,
    )
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
            run_pairs(n, data, root, env, args)
            if not args.no_resume:
                for side in ("inspect", "speceval"):
                    outcome = kill_and_resume(side, emu, data, root / f"{side}-killed", env, args, n)
                    when = f"at {args.kill_at:g} of N sent" if args.kill_at else "after its first job"
                    print(f"  killed {when} and resumed: {side}: {outcome}", flush=True)
        print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)


def _fresh(root: Path) -> Path:
    root.mkdir(parents=True)
    return root


if __name__ == "__main__":
    main()

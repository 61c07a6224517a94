"""Benchmark (issue 47 item 4): `speceval export --format inspect` flat in memory and linear in time to 10^6 verdicts.

For each size N it fabricates one candidate's judged run of N verdicts over `--statements` statements
(`evidence_memory.make_data`: realistic texts, one judge), so the export writes one log of N samples as parts of
`--max-samples-per-log` (default 2,000). Each size runs in its own process, which calls the real `export_inspect`
and notes, from `/proc/self/status`, the process's peak resident size (VmHWM) when the whole-log pass is done and
after each part written; it stops after `--parts` parts (`--parts 0`: the whole export). A flat export has the same
peak after the pass and the same peak and seconds per part at every N; a whole export's time is then the pass plus
parts x seconds per part.

    python benchmarks/inspect_export_scale.py [--sizes 100000 300000 1000000] [--parts 3] [--keep DIR] [--bound S]
    python benchmarks/inspect_export_scale.py --sizes 10000 --baseline DIR [--pairs 3] [--canaries K]

With `--baseline DIR` (a checkout of the code before, e.g. `git archive 1bdb089 | tar -x -C DIR`), each size is
exported whole by the baseline and by this checkout, interleaved, `--pairs` times, and this checkout's wall time, CPU
time and peak resident size over the baseline's are printed (min / median / max over the pairs).

Sizes run smallest first; `--keep DIR` keeps (and reuses) the fabricated data there (10^6 verdicts: 3.4 GB).
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHILD = r"""
import json, sys, time
from pathlib import Path
import speceval.interop.inspect_log as il

def status(name):
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith(name + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")

verdicts, out, parts, report = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
marks = {"parts": []}
started = time.perf_counter()
# the writer's name: `write_log`, or `_write` in a baseline from before the `.eval` writer (issue 47)
WRITER = "write_log" if hasattr(il, "write_log") else "_write"
plan_log, write = il.plan_log, getattr(il, WRITER)

class Enough(Exception):
    pass

def planned(files, max_samples):
    plan = plan_log(files, max_samples)
    marks["pass_seconds"] = time.perf_counter() - started
    marks["pass_peak_mib"] = status("VmHWM")
    marks["log_parts"] = len(plan.parts)
    marks["last"] = time.perf_counter()
    report.write_text(json.dumps(dict(marks, seconds=marks["pass_seconds"], peak_mib=status("VmHWM"), whole=False)))
    return plan

def written(built, path):
    done = write(built, path)
    now = time.perf_counter()
    marks["parts"].append({"seconds": now - marks["last"], "peak_mib": status("VmHWM"), "rss_mib": status("VmRSS")})
    marks["last"] = now
    # Kept on disk after every part: a run stopped at the benchmark's time bound still reports what it wrote.
    report.write_text(json.dumps(dict(marks, seconds=now - started, peak_mib=status("VmHWM"), whole=False)))
    if parts and len(marks["parts"]) >= parts:
        raise Enough
    return done

il.plan_log = planned
setattr(il, WRITER, written)
try:
    il.export_inspect([verdicts], out)
    marks["whole"] = True
except Enough:
    marks["whole"] = False
marks["seconds"] = time.perf_counter() - started
marks["cpu_seconds"] = time.process_time()
marks["peak_mib"] = status("VmHWM")
marks.pop("last", None)
report.write_text(json.dumps(marks))
"""


def run(
    size: int,
    data_root: Path,
    statements: int,
    parts: int,
    scratch: Path,
    bound: float | None,
    repo: Path = REPO,
    canaries: int = 0,
) -> dict[str, object]:
    """One export of `size` verdicts in a process of its own, with the code of `repo` (this checkout, or a
    baseline's)."""
    from benchmarks.evidence_memory import make_data

    data = data_root / f"n{size}"
    if not (data / "verdicts").is_dir():
        started = time.perf_counter()
        make_data(data, size, statements)
        print(f"  fabricated {size} verdicts in {time.perf_counter() - started:.0f} s", flush=True)
    if canaries:
        add_canaries(data / "verdicts", canaries)
    out, report = scratch / f"out{size}", scratch / f"report{size}.json"
    shutil.rmtree(out, ignore_errors=True)
    report.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(repo))
    argv = [sys.executable, "-c", CHILD, str(data / "verdicts"), str(out), str(parts), str(report)]
    try:
        done = subprocess.run(
            argv, cwd=repo, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=bound
        )
    except subprocess.TimeoutExpired:
        # Stopped at the bound (subprocess.run kills the child): the marks it wrote after its last part stand.
        if not report.exists():
            sys.exit(f"export of {size} wrote no part within the bound of {bound:.0f} s")
        marks: dict[str, object] = json.loads(report.read_text())
        marks["bound"] = bound
        return marks
    if done.returncode != 0:
        sys.exit(f"export of {size} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    marks = json.loads(report.read_text())
    return marks


def add_canaries(verdicts: Path, per_statement: int) -> None:
    """The judge's verdicts on the spec's examples, `per_statement` a statement (half good, half bad; every third
    judged wrong), in a judge run's `_canaries` folder: the small files each log's judge card is read from (issue
    inspectcard). Written once; a later run with the same data reuses them."""
    first = json.loads(next(verdicts.rglob("results/*.json")).read_text(encoding="utf-8"))["metadata"]
    folder = verdicts / f"spec_{first['spec']}" / "_canaries" / f"judge_{first['judge']}" / "results"
    if folder.is_dir():
        return
    folder.mkdir(parents=True)
    statements = sorted({path.stem for path in verdicts.rglob("results/*.json")})
    for statement in statements:
        entries = []
        for example in range(1, per_statement + 1):
            kind = "good" if example <= per_statement // 2 else "bad"
            correct = example % 3 != 0
            entries.append(
                {
                    "input": f"an example input of {statement}",
                    "output": f"an example response {example}",
                    "compliant": correct == (kind == "good"),
                    "outcome": "judged",
                    "original_index": example - 1,
                    "kind": kind,
                    "example": example,
                    "correct": correct,
                }
            )
        metadata = {
            "judge": first["judge"],
            "spec": first["spec"],
            "statement_id": statement,
            "prompt_version": first.get("prompt_version", "compliance_binary_v2"),
            "mode": "binary",
            "batch_ids": [],
        }
        text = json.dumps({"metadata": metadata, "canaries": entries})
        (folder / f"{statement}.json").write_text(text, encoding="utf-8")


def _stopped(marks: dict[str, object], seconds: list[float]) -> str:
    """What a run stopped before its last part says: where it stopped, and the whole export it projects (the pass
    plus every part at the median seconds of those written; an estimate, not a measurement)."""
    if "bound" not in marks:
        return "stopped"
    text = f"stopped at the bound ({float(str(marks['bound'])):.0f} s) after {len(seconds)} parts"
    if seconds:
        parts = int(str(marks["log_parts"]))
        projected = float(str(marks["pass_seconds"])) + parts * seconds[len(seconds) // 2]
        text += f"; projected whole: {projected / 60:.0f} min"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--parts", type=int, default=3, help="parts written per size (0: the whole export)")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the fabricated data in this folder")
    parser.add_argument(
        "--bound", type=float, help="seconds an export may run; then it is stopped and the parts written so far shown"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of the code before (e.g. `git archive 1bdb089 | tar -x -C DIR`): each size is exported by "
        "both, interleaved (baseline first in odd pairs), `--pairs` times, and the ratios printed",
    )
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--canaries",
        type=int,
        default=0,
        help="add the judge's verdicts on this many of the spec's examples a statement (the judge card's canary "
        "files, read by every export; 0: none, as the figures before the card in the export)",
    )
    args = parser.parse_args()
    if args.baseline:
        paired(args)
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="speceval-inspect-scale-") as tmp:
        data_root = args.keep or Path(tmp) / "data"
        print(
            "| N | parts of the log | whole-log pass: seconds, peak | parts written | seconds a part (min / median / "
            "max) | peak after them | whole export |"
        )
        print("|---|---|---|---|---|---|---|")
        for size in sorted(args.sizes):
            marks = run(size, data_root, args.statements, args.parts, Path(tmp), args.bound, canaries=args.canaries)
            written = marks["parts"]
            assert isinstance(written, list)
            seconds = sorted(float(p["seconds"]) for p in written)
            spread = f"{seconds[0]:.1f} / {seconds[len(seconds) // 2]:.1f} / {seconds[-1]:.1f}" if seconds else "-"
            whole = (
                f"{float(marks['seconds']):.0f} s wall, {float(marks['cpu_seconds']):.0f} s CPU, peak "
                f"{float(marks['peak_mib']):.1f} MiB"
                if marks["whole"]
                else _stopped(marks, seconds)
            )
            print(
                f"| {size:,} | {marks['log_parts']} | {float(marks['pass_seconds']):.1f} s, "
                f"{float(marks['pass_peak_mib']):.1f} MiB | {len(written)} | {spread} | "
                f"{float(marks['peak_mib']):.1f} MiB | {whole} |",
                flush=True,
            )


def paired(args: argparse.Namespace) -> None:
    """Whole exports by the baseline's code and this checkout's, interleaved; wall, CPU and peak of each, and this
    checkout's over the baseline's per pair (min / median / max)."""
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="speceval-inspect-pairs-") as tmp:
        data_root = args.keep or Path(tmp) / "data"
        for size in sorted(args.sizes):
            ratios: dict[str, list[float]] = {"wall": [], "cpu": [], "peak": []}
            for pair in range(args.pairs):
                order = [("baseline", args.baseline), ("this", REPO)]
                measured = {}
                for name, repo in order if pair % 2 == 0 else order[::-1]:
                    marks = run(
                        size, data_root, args.statements, 0, Path(tmp), args.bound, repo=repo, canaries=args.canaries
                    )
                    if not marks.get("whole"):
                        sys.exit(f"the {name} export of {size} did not finish")
                    measured[name] = marks
                    print(
                        f"  pair {pair + 1} {name}: {float(str(marks['seconds'])):.1f} s wall, "
                        f"{float(str(marks['cpu_seconds'])):.1f} s CPU, peak {float(str(marks['peak_mib'])):.1f} MiB",
                        flush=True,
                    )
                for key, field in (("wall", "seconds"), ("cpu", "cpu_seconds"), ("peak", "peak_mib")):
                    ratios[key].append(float(str(measured["this"][field])) / float(str(measured["baseline"][field])))
            print(f"| {size:,} | " + " | ".join(_spread(ratios[key]) for key in ("wall", "cpu", "peak")) + " |")


def _spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


if __name__ == "__main__":
    main()

"""Benchmark (issue 45): `speceval.read_verdicts` against reading the JSON files into pandas directly.

For each size N it fabricates N compliance verdicts in the shape `ComplianceFile` writes (`evidence_memory.make_data`:
answers of about 1,000 characters, prompts of 200, explanations of 150, `--statements` files), then measures, each
in its own process (`_measure.py`: wall time and the process's own peak RSS):

- `frames`: `speceval.read_verdicts(folder)`, which reads a file a chunk of verdicts at a time into typed columns;
- `baseline`: what a competent researcher writes without it: `json.load` each results file, `pd.DataFrame` of its
  `results`, the metadata as columns, `pd.concat` (the frame with the same rows, its strings as pandas makes them).

Runs are interleaved (frames, baseline, then baseline, frames, ...: `--pairs` rounds) and each ratio (frames /
baseline) is taken within one round, shown as min / median / max. Also printed: each frame's own size
(`memory_usage(deep=True)`) and the peak above it per verdict, the number that must not grow with N (flat memory).

    python benchmarks/frames_memory.py [--sizes 100000 1000000] [--pairs 3] [--statements 40]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.evidence_memory import make_data, spread  # noqa: E402

FRAMES = """
import json, sys
import speceval
frame = speceval.read_verdicts(sys.argv[1])
json.dump({"rows": len(frame), "frame_mib": int(frame.memory_usage(deep=True).sum()) / 2**20}, open(sys.argv[2], "w"))
"""

BASELINE = """
import json, sys
from pathlib import Path
import pandas as pd
parts = []
for file in sorted(Path(sys.argv[1]).rglob("results/*.json")):
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "results" not in data:
        continue
    part = pd.DataFrame(data["results"])
    for key in ("spec", "judge", "model", "statement_id", "mode", "prompt_version"):
        part[key] = data["metadata"][key]
    parts.append(part)
    del data
frame = pd.concat(parts, ignore_index=True)
del parts
json.dump({"rows": len(frame), "frame_mib": int(frame.memory_usage(deep=True).sum()) / 2**20}, open(sys.argv[2], "w"))
"""


def measured(name: str, code: str, folder: Path, scratch: Path) -> dict[str, float]:
    """Run `code` on `folder` under `_measure.py`: wall time, peak RSS, and the frame's rows and size."""
    script, record, out = scratch / f"{name}.py", scratch / f"{name}.measure.json", scratch / f"{name}.out.json"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, str(REPO / "benchmarks" / "_measure.py"), str(record), str(script), str(folder), str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return {**json.loads(record.read_text()), **json.loads(out.read_text())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--statements", type=int, default=40)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores; peak RSS of each reader in its own process")
    for size in args.sizes:
        scratch = Path(tempfile.mkdtemp(prefix="speceval-frames-"))
        try:
            data = make_data(scratch / "data", size, args.statements)
            runs: dict[str, list[dict[str, float]]] = {"frames": [], "baseline": []}
            for round_ in range(args.pairs):
                order = ("frames", "baseline") if round_ % 2 == 0 else ("baseline", "frames")
                for name in order:
                    runs[name].append(
                        measured(name, FRAMES if name == "frames" else BASELINE, data["verdicts"], scratch)
                    )
            for name, found in runs.items():
                assert all(r["rows"] == size for r in found), f"{name}: {[r['rows'] for r in found]} rows, not {size}"
                above = [(r["peak_mib"] - r["frame_mib"]) * 2**20 / size for r in found]
                print(
                    f"N={size:,} {name:8s} peak MiB {spread([r['peak_mib'] for r in found], 0)}; "
                    f"frame MiB {spread([r['frame_mib'] for r in found], 0)}; "
                    f"bytes a verdict above the frame {spread(above, 0)}; s {spread([r['seconds'] for r in found], 1)}"
                )
            peaks = [f["peak_mib"] / b["peak_mib"] for f, b in zip(runs["frames"], runs["baseline"], strict=True)]
            times = [f["seconds"] / b["seconds"] for f, b in zip(runs["frames"], runs["baseline"], strict=True)]
            print(f"N={size:,} frames / baseline: peak {spread(peaks)}; time {spread(times)}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

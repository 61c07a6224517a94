"""Benchmark (issue 25): peak memory of `speceval run` against the generation engine, and bytes on disk per request.

It fabricates, in a scratch folder, a spec of `--statements` statements (one example each, so the judge's canaries
run too), an inputs folder of N prompts and one of 2 × N prompts, and an experiment file: 2 candidates × N inputs
× 1 compliance judge (stages `--stages`, default generation and compliance). Then it measures, each in its own
process (`_measure.py`: wall time and the process's own peak RSS, VmHWM):

- `generation`: `run_batched_generation` over the 2 × N prompts: the baseline, the engine known to be flat, at the
  experiment's total number of generation requests;
- `experiment`: `speceval run` over the experiment file.

Every provider call goes to an emulator in its own process (`speceval emulator --port 0`, a fresh one for each
measured run). The two are interleaved (generation, experiment, then experiment, generation, ...; `--pairs`
rounds) and the ratio experiment / generation is taken within each round, shown as min / median / max. Target:
≤ 3× the generation engine's figure at 2 × N = 10⁵.

After the first experiment it prints what each folder of the experiment costs on disk, per request of its kind
(generation folders per answer, compliance and ranking folders per verdict).

    python benchmarks/experiment_memory.py [--size 50000] [--pairs 3] [--stages generation compliance]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.evidence_memory import _text, measured, spread, write_spec  # noqa: E402

CANDIDATES = ("gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14")
JUDGE = "gpt-4.1-2025-04-14"


def make_data(root: Path, size: int, statements: int) -> dict[str, Path]:
    """A spec, inputs of `size` prompts (the experiment's) and of 2 × `size` (the baseline's) under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    spec_path = root / "spec.jsonl"
    ids = write_spec(spec_path, statements)
    folders = {"inputs": root / "inputs", "inputs_double": root / "inputs_double"}
    for name, count in (("inputs", size), ("inputs_double", 2 * size)):
        folders[name].mkdir()
        per, extra = divmod(count, statements)
        for s, sid in enumerate(ids):
            prompts = [_text(s * 1_000_003 + i, 200) for i in range(per + (1 if s < extra else 0))]
            (folders[name] / f"{sid}.json").write_text(json.dumps({"inputs": prompts}), encoding="utf-8")
    return {"spec": spec_path, **folders}


def experiment_file(root: Path, data: dict[str, Path], stages: list[str], poll: float) -> Path:
    path = root / "experiment.yaml"
    candidates = "".join(f"  - model: {model}\n" for model in CANDIDATES)
    path.write_text(
        f"experiment_name: memory\noutput_dir: {root / 'experiment-out'}\n"
        f"specs:\n  - name: bench\n    spec_path: {data['spec']}\n    inputs_dir: {data['inputs']}\n"
        f"candidates:\n{candidates}judges:\n  - model: {JUDGE}\n    mode: binary\n"
        f"stages: [{', '.join(stages)}]\n"
        f"engine:\n  batch_size: 50000\n  poll_interval: {poll}\n  max_tokens: 1024\n",
        encoding="utf-8",
    )
    return path


def measure(
    program: str,
    data: dict[str, Path],
    scratch: Path,
    args: argparse.Namespace,
    disk: dict[str, tuple[int, int, int]] | None,
) -> dict[str, float]:
    """One measured run; fills `disk` (folder → bytes, files, requests) from the experiment's output if given."""
    if program == "generation":
        out = scratch / "generation-out"
        argv = [
            "-m",
            "batched_examples.run_batched_generation",
            "--spec-path",
            str(data["spec"]),
            "--pregenerated-inputs-dir",
            str(data["inputs_double"]),
            "--model-name",
            CANDIDATES[0],
            "--output-base-dir",
            str(out),
            "--batch-size",
            "50000",
            "--poll-interval",
            str(args.poll),
        ]
    else:
        out = scratch / "experiment-out"
        argv = ["-m", "speceval", "run", str(experiment_file(scratch, data, args.stages, args.poll))]
    shutil.rmtree(out, ignore_errors=True)
    result = measured(program, argv, scratch, cwd=scratch)
    if program == "experiment":
        result["verdicts"] = count_verdicts(out)
        if disk is not None:
            disk.update(disk_use(out))
    shutil.rmtree(out, ignore_errors=True)
    return result


def count_verdicts(out: Path) -> int:
    """Verdicts written for the candidates' answers (the canaries are not counted)."""
    return sum(
        len(json.loads(path.read_text())["results"])
        for path in out.glob("compliance/*/*/run*/spec_*/judge_*/*/results/*.json")
    )


def disk_use(out: Path) -> dict[str, tuple[int, int, int]]:
    """(bytes, files, requests) per kind of folder of the experiment's runs (`generation/results`,
    `compliance/preprocessed`, ...): the canaries' run and the experiment's own files apart."""
    usage: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    requests = {"generation": 0, "compliance": 0, "ranking": 0}
    for path in out.rglob("*"):
        if not path.is_file():
            continue
        parts = path.relative_to(out).parts
        stage = {"generations": "generation", "compliance": "compliance", "ranking": "ranking"}.get(parts[0], "other")
        if stage == "compliance" and "canaries" in parts:
            stage = "canaries"
        # The folder inside a run: results, preprocessed, metadata, judge_responses (run.json: "run files").
        parent = parts[-2] if len(parts) > 1 else ""
        folder = (
            parent if parent in ("results", "preprocessed", "metadata", "judge_responses", "intents") else "run files"
        )
        entry = usage[f"{stage}/{folder}" if stage in requests else stage]
        entry[0] += path.stat().st_size
        entry[1] += 1
        if folder == "results" and stage in requests:
            rows = json.loads(path.read_text())  # a list (answers), or {results: ...} / {rankings: ...} (verdicts)
            requests[stage] += len(rows if isinstance(rows, list) else rows.get("results", rows.get("rankings", [])))
    return {name: (size, files, requests.get(name.split("/")[0], 0)) for name, (size, files, _) in usage.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=50_000, help="inputs per candidate (N)")
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved rounds (AB, BA, ...)")
    parser.add_argument(
        "--stages",
        nargs="+",
        default=["generation", "compliance"],
        choices=("generation", "compliance", "ranking", "report"),
    )
    parser.add_argument("--poll", type=float, default=0.5)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="speceval-experiment-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        data = make_data(root / "data", args.size, args.statements)
        print(
            f"\n{len(CANDIDATES)} candidates x {args.size:,} inputs x 1 judge over {args.statements} statements, "
            f"stages {' '.join(args.stages)}; baseline: generation of {2 * args.size:,} requests (fabricated in "
            f"{time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        rounds: list[dict[str, dict[str, float]]] = []
        disk: dict[str, tuple[int, int, int]] = {}
        for index in range(args.pairs):
            order = ["generation", "experiment"] if index % 2 == 0 else ["experiment", "generation"]
            results = {}
            for program in order:
                results[program] = result = measure(program, data, root, args, disk if not disk else None)
                extra = f", {result['verdicts']:,.0f} verdicts" if "verdicts" in result else ""
                print(
                    f"  round {index + 1} {program:>10}: {result['seconds']:7.1f} s, peak "
                    f"{result['peak_mib']:7.1f} MiB{extra}",
                    flush=True,
                )
                expected = len(CANDIDATES) * args.size
                if "compliance" in args.stages and result.get("verdicts", expected) != expected:
                    sys.exit(f"the experiment wrote {result['verdicts']} verdicts, expected {expected}")
            rounds.append(results)
        for program in ("generation", "experiment"):
            peaks = [r[program]["peak_mib"] for r in rounds]
            seconds = [r[program]["seconds"] for r in rounds]
            line = f"  {program:>10}: peak MiB {spread(peaks, 1)}; seconds {spread(seconds, 1)}"
            if program == "experiment":
                ratios = [r[program]["peak_mib"] / r["generation"]["peak_mib"] for r in rounds]
                line += f"; / generation {spread(ratios)} (target <= 3)"
            print(line, flush=True)
        print("\n  on disk (first experiment), per request of the folder's kind:")
        for name, (size, files, requests) in sorted(disk.items()):
            per = f"{size / requests:8.0f} bytes per request" if requests else ""
            print(f"  {name:>28}: {size / 1e6:9.1f} MB in {files:6d} files {per}", flush=True)


if __name__ == "__main__":
    main()

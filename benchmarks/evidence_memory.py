"""Benchmark (issue 25): peak memory of the compliance judge and of `speceval report`, against generation.

For each size N it fabricates, in a scratch folder, a spec of `--statements` statements (one example each, so the
judge's canaries are in the run), an inputs directory of N prompts, a generation run of N answers of realistic
length (a `run.json` and `results/<statement>.json` in the shape generation writes), and a compliance judge's
verdict files over those N answers (the shape `ComplianceFile` writes, with a `run.json`). Then it measures, each
in its own process (`_measure.py`: wall time and the process's own peak RSS):

- `generation`: `run_batched_generation` over the N prompts: the baseline, the engine that is known to be flat;
- `judge`: `run_batched_binary_compliance` over the N answers (compliance and canaries);
- `report`: `speceval report` over the N fabricated verdicts;
- `ranking` (only when asked, `--only ranking`): `speceval report` over N fabricated pairwise comparisons of two
  candidates (N/2 inputs, each judged in both orders; answers of realistic length) in the shape `RankingFile` writes;
- `export` and `label-sheet` (only when asked, `--only export label-sheet`): `speceval export --format jsonl` and
  `speceval label-sheet --n 200` over the N fabricated verdicts (issue 37: both stream the verdicts);
- `inspect` (only when asked): `speceval export --format inspect` over them (one candidate's log of N samples,
  written as parts of at most `--max-samples-per-log`, default 2,000; target as the other exports: within 2x).

Every provider call goes to an emulator in its own process (`speceval emulator --port 0`, a fresh one for each
measured run, so no run pays for another's jobs). The measured programs are interleaved: generation, judge,
report, then report, judge, generation, ... (`--pairs` rounds), and each ratio (judge / generation, report /
generation) is taken within one round and shown as min / median / max. Targets: judge ≤ 1.5×, report, export and
label sheet ≤ 2× the generation engine at the same count.

    python benchmarks/evidence_memory.py [--sizes 10000 100000] [--pairs 3]
        [--only judge report ranking export label-sheet]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.batch.manifest import RunManifest  # noqa: E402
from speceval.spec import load_spec  # noqa: E402

JUDGE = "gpt-4.1-2025-04-14"
CANDIDATE = "gpt-4.1-mini"
PROGRAMS = ("generation", "judge", "report", "ranking", "export", "label-sheet", "inspect")
NEEDS_VERDICTS = ("report", "export", "label-sheet", "inspect")
RIVAL = "gpt-4.1-nano"

_WORDS = (
    "the",
    "assistant",
    "should",
    "answer",
    "carefully",
    "and",
    "explain",
    "which",
    "parts",
    "of",
    "the",
    "request",
    "it",
    "can",
    "help",
    "with",
    "offering",
    "safer",
    "alternatives",
    "where",
    "harm",
    "is",
    "near;",
)


def _text(seed: int, length: int) -> str:
    """Deterministic filler of about `length` characters that differs from one seed to the next."""
    words = [f"#{seed}"]
    size = len(words[0])
    i = seed
    while size < length:
        word = _WORDS[i % len(_WORDS)]
        words.append(word)
        size += len(word) + 1
        i = i * 31 + 7
    return " ".join(words)


def write_spec(spec_path: Path, statements: int) -> list[str]:
    """A spec of `statements` statements of realistic length, one example each (so a judge's canaries run too);
    returns their ids."""
    ids = [f"statement_{s:04d}" for s in range(statements)]
    spec_path.write_text(
        "".join(
            json.dumps(
                {
                    "id": sid,
                    "text": f"Statement {s}: {_text(s, 300)}",
                    "type": "requirement",
                    "authority_level": "user",
                    "metadata": {
                        "examples": [
                            {
                                "description": "d",
                                "user_query": _text(s, 150),
                                "good_response": _text(s + 1, 400),
                                "bad_response": _text(s + 2, 400),
                            }
                        ]
                    },
                }
            )
            + "\n"
            for s, sid in enumerate(ids)
        ),
        encoding="utf-8",
    )
    return ids


def make_data(root: Path, size: int, statements: int, *, verdicts: bool = True) -> dict[str, Path]:
    """Spec, inputs, a generation run of `size` answers and (`verdicts`: for the report) a judge folder of `size`
    verdicts under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    spec_path = root / "spec.jsonl"
    ids = write_spec(spec_path, statements)
    spec = load_spec(spec_path)
    inputs = root / "inputs"
    run = root / "generation_run"
    verdicts = root / "verdicts" / f"spec_{spec.name}" / f"judge_{JUDGE}"
    judge_run = verdicts / CANDIDATE
    for folder in (inputs, run / "results", judge_run / "results"):
        folder.mkdir(parents=True)
    RunManifest(
        kind="generation",
        command=["benchmark"],
        spec_name=spec.name,
        spec_path=str(spec_path),
        spec_sha256=spec.sha256,
        inputs_path=str(inputs),
        inputs_sha256="0",
        model_name=CANDIDATE,
        provider="openai",
    ).save(run)
    RunManifest(
        kind="compliance",
        command=["benchmark"],
        spec_name=spec.name,
        spec_path=str(spec_path),
        spec_sha256=spec.sha256,
        inputs_path=str(run),
        inputs_sha256="0",
        model_name=JUDGE,
        provider="openai",
        parameters={"identity": {"prompt_version": "compliance_binary_v2"}},
    ).save(judge_run)
    per, extra = divmod(size, statements)
    for s, sid in enumerate(ids):
        count = per + (1 if s < extra else 0)
        prompts = [_text(s * 1_000_003 + i, 200) for i in range(count)]
        outputs = [_text(s * 7_000_001 + i, 1_000) for i in range(count)]
        (inputs / f"{sid}.json").write_text(json.dumps({"inputs": prompts}), encoding="utf-8")
        (run / "results" / f"{sid}.json").write_text(
            json.dumps(
                [
                    {
                        "original_index": i,
                        "input_text": p,
                        "output_text": o,
                        "batch_id": "batch_bench",
                        "outcome": "succeeded",
                        "error": None,
                        "usage": {"input_tokens": 50, "output_tokens": 250},
                    }
                    for i, (p, o) in enumerate(zip(prompts, outputs, strict=True))
                ]
            ),
            encoding="utf-8",
        )
        if not verdicts:
            continue  # the judge alone is measured: a million fabricated verdicts are minutes and 1.5 GB for nothing
        entries = []
        for i, (p, o) in enumerate(zip(prompts, outputs, strict=True)):
            compliant = (i * 7 + s) % 5 != 0
            explanation = _text(i + s, 150)
            raw = json.dumps({"explanation": explanation, "compliant": compliant, "confidence": 0.9})
            entries.append(
                {
                    "input": p,
                    "output": o,
                    "compliant": compliant,
                    "confidence": 0.9,
                    "explanation": explanation,
                    "outcome": "judged",
                    "raw_judge_response": raw,
                    "parse_error": None,
                    "error": None,
                    "original_index": i,
                    "batch_id": "batch_judge",
                }
            )
        (judge_run / "results" / f"{sid}.json").write_text(
            json.dumps(
                {
                    "schema_version": 1,
                    "metadata": {
                        "model": CANDIDATE,
                        "judge": JUDGE,
                        "spec": spec.name,
                        "statement_id": sid,
                        "prompt_version": "compliance_binary_v2",
                        "mode": "binary",
                        "batch_ids": ["batch_judge"],
                        "candidate_dir": str(run),
                    },
                    "results": entries,
                }
            ),
            encoding="utf-8",
        )
    return {"spec": spec_path, "inputs": inputs, "run": run, "verdicts": root / "verdicts"}


def make_rankings(root: Path, size: int, statements: int) -> Path:
    """A ranking judge's folder of `size` comparisons of CANDIDATE and RIVAL (`size // 2` inputs, each in both
    orders, about a fifth of the judged ones ties), with a `run.json`; returns the folder to report on."""
    spec = load_spec(root / "spec.jsonl")
    base = root / "rankings" / f"spec_{spec.name}" / f"judge_{JUDGE}"
    per, extra = divmod(size // 2, statements)
    for first, second in ((CANDIDATE, RIVAL), (RIVAL, CANDIDATE)):
        pair = base / f"{first}x{second}"
        (pair / "results").mkdir(parents=True)
        RunManifest(
            kind="ranking",
            command=["benchmark"],
            spec_name=spec.name,
            spec_path=str(root / "spec.jsonl"),
            spec_sha256=spec.sha256,
            inputs_path="benchmark",
            inputs_sha256="0",
            model_name=JUDGE,
            provider="openai",
        ).save(pair)
        for s, statement in enumerate(spec.statements):
            count = per + (1 if s < extra else 0)
            entries = []
            for i in range(count):
                rank = (0, 1, -1, 1, -1)[(i + s + (first == RIVAL)) % 5]
                entries.append(
                    {
                        "index": i,
                        "input": _text(s * 1_000_003 + i, 200),
                        "output_a": _text(s * 7_000_001 + i + (first == RIVAL), 1_000),
                        "output_b": _text(s * 7_000_001 + i + (first != RIVAL), 1_000),
                        "rank": rank,
                        "winner": {1: "A", -1: "B", 0: "tie"}[rank],
                        "explanation": _text(i + s, 150),
                        "outcome": "judged",
                        "original_index_a": i,
                        "original_index_b": i,
                        "batch_id": "batch_rank",
                    }
                )
            (pair / "results" / f"{statement.id}.json").write_text(
                json.dumps(
                    {
                        "schema_version": 1,
                        "metadata": {
                            "model_a": first,
                            "model_b": second,
                            "judge": JUDGE,
                            "spec": spec.name,
                            "statement_id": statement.id,
                            "prompt_version": "ranking_v2",
                            "batch_ids": ["batch_rank"],
                            "candidate_dir_a": "a",
                            "candidate_dir_b": "b",
                        },
                        "rankings": entries,
                    }
                ),
                encoding="utf-8",
            )
    return root / "rankings"


@contextmanager
def emulator(scratch: Path) -> Iterator[str]:
    """A provider emulator in its own process; yields its OpenAI base URL."""
    log = scratch / "emulator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "speceval", "emulator", "--port", "0"],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200"),
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            found = re.search(r"OPENAI_BASE_URL=(\S+)", log.read_text())
            if found:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the emulator did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measured(program: str, argv: list[str], scratch: Path, *, cwd: Path) -> dict[str, float]:
    """Run `argv` (`-m module ...`) under `_measure.py` against a fresh emulator of its own; its wall time, peak
    RSS and exit code. Exits with its output if it fails."""
    record = scratch / f"{program}.json"
    with emulator(scratch) as base_url:
        env = dict(
            os.environ,
            OPENAI_API_KEY="sk-bench-evidence",
            OPENAI_BASE_URL=base_url,
            NO_PROXY="127.0.0.1,localhost",
            PYTHONPATH=str(REPO),
        )
        env.pop("SPECEVAL_POLL_INTERVAL", None)  # the poll interval measured is the one the command is given
        cmd = [sys.executable, str(REPO / "benchmarks" / "_measure.py"), str(record), *argv]
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"{program} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(record.read_text())
    return result


def measure(program: str, data: dict[str, Path], scratch: Path, poll: float) -> dict[str, float]:
    out = scratch / f"{program}-out"
    shutil.rmtree(out, ignore_errors=True)
    if program == "generation":
        argv = [
            "-m",
            "batched_examples.run_batched_generation",
            "--spec-path",
            str(data["spec"]),
            "--pregenerated-inputs-dir",
            str(data["inputs"]),
            "--model-name",
            CANDIDATE,
            "--output-base-dir",
            str(out),
            "--batch-size",
            "50000",
            "--poll-interval",
            str(poll),
        ]
    elif program == "judge":
        argv = [
            "-m",
            "batched_examples.run_batched_binary_compliance",
            "--spec-path",
            str(data["spec"]),
            "--candidate-generation-dirs",
            str(data["run"]),
            "--compliance-judge-model-name",
            JUDGE,
            "--output-dir-base",
            str(out),
            "--batch-size",
            "50000",
            "--poll-interval",
            str(poll),
        ]
    elif program == "export":
        out.mkdir()
        argv = ["-m", "speceval", "export", str(data["verdicts"]), "--out", str(out / "verdicts.jsonl")]
    elif program == "inspect":
        argv = ["-m", "speceval", "export", str(data["verdicts"]), "--format", "inspect", "--out", str(out)]
    elif program == "label-sheet":
        out.mkdir()
        argv = ["-m", "speceval", "label-sheet", str(data["verdicts"]), "--n", "200", "--out", str(out / "labels.csv")]
    else:
        folder = data["rankings"] if program == "ranking" else data["verdicts"]
        argv = ["-m", "speceval", "report", str(folder), "--out", str(out)]
    result = measured(program, argv, scratch, cwd=REPO)
    if program in ("report", "ranking"):
        result["html_mb"] = (out / "report.html").stat().st_size / 1e6
    if program == "export":
        with (out / "verdicts.jsonl").open("rb") as handle:
            result["rows"] = sum(1 for _ in handle)
    if program == "judge":
        result["verdicts"] = sum(
            len(json.loads(p.read_text())["results"])
            for p in out.glob("spec_*/judge_*/*/results/*.json")
            if "_canaries" not in p.parts
        )
    shutil.rmtree(out, ignore_errors=True)
    return result


def spread(values: list[float], digits: int = 2) -> str:
    return (
        f"min {min(values):.{digits}f} / median {statistics.median(values):.{digits}f} / max {max(values):.{digits}f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved rounds (ABC, CBA, ...)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=PROGRAMS[1:],
        default=["judge", "report"],
        help="what to measure against generation",
    )
    parser.add_argument("--poll", type=float, default=0.5)
    args = parser.parse_args()
    programs = ["generation", *[p for p in PROGRAMS if p in args.only]]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="speceval-evidence-") as tmp:
            root = Path(tmp)
            started = time.perf_counter()
            data = make_data(
                root / "data", size, args.statements, verdicts=any(program in args.only for program in NEEDS_VERDICTS)
            )
            if "ranking" in args.only:
                data["rankings"] = make_rankings(root / "data", size, args.statements)
            print(
                f"\n{size:,} answers over {args.statements} statements (fabricated in "
                f"{time.perf_counter() - started:.0f} s)",
                flush=True,
            )
            rounds: list[dict[str, dict[str, float]]] = []
            for index in range(args.pairs):
                order = programs if index % 2 == 0 else programs[::-1]
                results = {}
                for program in order:
                    results[program] = result = measure(program, data, root, args.poll)
                    extra = (
                        f", report.html {result['html_mb']:.1f} MB"
                        if "html_mb" in result
                        else f", {result['verdicts']:,.0f} verdicts"
                        if "verdicts" in result
                        else f", {result['rows']:,.0f} rows"
                        if "rows" in result
                        else ""
                    )
                    print(
                        f"  round {index + 1} {program:>10}: {result['seconds']:7.1f} s, peak "
                        f"{result['peak_mib']:7.1f} MiB{extra}",
                        flush=True,
                    )
                    if program == "judge" and result["verdicts"] != size:
                        sys.exit(f"the judge wrote {result['verdicts']} verdicts, expected {size}")
                    if program == "export" and result["rows"] != size:
                        sys.exit(f"the export wrote {result['rows']} rows, expected {size}")
                rounds.append(results)
            for program in programs:
                peaks = [r[program]["peak_mib"] for r in rounds]
                seconds = [r[program]["seconds"] for r in rounds]
                line = f"  {program:>10}: peak MiB {spread(peaks, 1)}; seconds {spread(seconds, 1)}"
                if program not in ("generation", "inspect"):
                    ratios = [r[program]["peak_mib"] / r["generation"]["peak_mib"] for r in rounds]
                    target = 1.5 if program == "judge" else 2.0  # a ranking report: the report's target
                    line += f"; / generation {spread(ratios)} (target <= {target})"
                print(line, flush=True)


if __name__ == "__main__":
    main()

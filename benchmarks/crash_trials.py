"""Crash trials: SIGKILL a generation run at random moments, resume it, and count what went wrong.

Each trial starts `python -m batched_examples.run_batched_generation` against the emulator (which lives in this
process, so it outlives the killed client as a provider would), kills it after a random delay, resumes the run
to completion, and checks three things:

- duplicate jobs: the provider received more than one job for one chunk (same idempotency key), or more jobs
  than chunks;
- lost results: an input without a succeeded result, or a provider job with no local record;
- corrupt files: a JSON file in the run directory that does not parse, or a leftover temp file.

    python benchmarks/crash_trials.py [--trials 50] [--seed 1] [--conversations]

With `--conversations` the inputs mix strings with 2- and 3-turn scripts, so kills land in any round (jobs
expected: 5 in round 1, 2 in round 2, 1 in round 3), and a conversation also counts as lost unless its record holds
every turn with each answer carried into the next turn's transcript.

Exits non-zero if any count is above zero.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.emulator import Emulator, FaultConfig  # noqa: E402

STATEMENTS = {"be_honest": [f"honest {i}" for i in range(7)], "no.dots here": [f"dots {i}" for i in range(6)]}
BATCH_SIZE = 3
CHUNKS = 5  # 13 requests in jobs of at most 3
CONVERSATIONS: dict[str, list[object]] = {
    "be_honest": [
        *(f"honest {i}" for i in range(4)),
        *({"turns": [f"honest q{i}", "Are you sure?", "Final answer?"]} for i in range(3)),
    ],
    "no.dots here": [
        *(f"dots {i}" for i in range(3)),
        *({"turns": [f"dots q{i}", "Why?"], "id": f"dots_{i}"} for i in range(3)),
    ],
}
CONVERSATION_CHUNKS = 5 + 2 + 1  # rounds of 13, 6 and 3 requests in jobs of at most 3


def cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "batched_examples.run_batched_generation", *args]


def trial(root: Path, delay: float, env_base: dict[str, str], conversations: bool = False) -> dict[str, int]:
    statements: dict[str, list[object]] = dict(CONVERSATIONS if conversations else STATEMENTS)
    chunks = CONVERSATION_CHUNKS if conversations else CHUNKS
    spec = root / "spec.jsonl"
    spec.write_text("".join(json.dumps({"id": sid, "text": f"Statement {sid}."}) + "\n" for sid in statements))
    inputs = root / "inputs"
    inputs.mkdir()
    for sid, texts in statements.items():
        (inputs / f"{sid}.json").write_text(json.dumps({"inputs": texts}))
    out = root / "out"
    args = [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        "gpt-4.1-mini",
        "--output-base-dir",
        str(out),
        "--batch-size",
        str(BATCH_SIZE),
        "--poll-interval",
        "0.1",
    ]
    faults = FaultConfig(turnaround_seconds=0.3, create_delay_seconds=0.25, error_rate=0.0)
    with Emulator(faults=faults) as emu:
        env = dict(env_base, OPENAI_BASE_URL=emu.openai_base_url)
        proc = subprocess.Popen(
            cli(args), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        time.sleep(delay)
        proc.kill()
        proc.wait()
        runs = [p.parent for p in out.glob("*/*/*/run.json")]
        resume = ["--resume", str(runs[0])] if runs else args
        done = subprocess.run(
            cli(resume), cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
        )
        jobs = emu.list_jobs("openai")
    counts = {"duplicate_jobs": 0, "lost_results": 0, "corrupt_files": 0, "failed_resumes": 0}
    if done.returncode != 0:
        counts["failed_resumes"] = 1
        return counts
    run_dir = [p.parent for p in out.glob("*/*/*/run.json")][0]
    keys = [job.metadata.get("speceval_key") for job in jobs]
    counts["duplicate_jobs"] = (len(keys) - len(set(keys))) + max(0, len(jobs) - chunks)
    recorded = set()
    for path in run_dir.rglob("*"):
        if path.is_file() and ".emulator" not in path.parts:
            if path.name.endswith(".tmp"):
                print(f"    leftover temp file: {path.relative_to(run_dir)}")
                counts["corrupt_files"] += 1
            elif path.suffix == ".json":
                try:
                    data = json.loads(path.read_text())
                except ValueError:
                    print(f"    unreadable JSON: {path.relative_to(run_dir)}")
                    counts["corrupt_files"] += 1
                    continue
                if path.parent.name == "metadata":
                    recorded.add(data["batch_id"])
    counts["lost_results"] += len({job.id for job in jobs} - recorded)  # a paid job with no local record
    for sid, texts in statements.items():
        path = run_dir / "results" / f"{sid}.json"
        records = json.loads(path.read_text()) if path.exists() else []
        ok = {r["original_index"] for r in records if r["outcome"] == "succeeded" and _whole(r, texts)}
        counts["lost_results"] += len(set(range(len(texts))) - ok)
    return counts


def _whole(record: dict[str, object], items: list[object]) -> bool:
    """A string's record is whole when it succeeded; a conversation's when every turn is there, each answer in the
    transcript right after the user turn it answered."""
    item = items[record["original_index"]]  # type: ignore[index]
    if not isinstance(item, dict):
        return True
    turns = record.get("turns") or []
    conversation = record.get("conversation") or []
    expected = [
        message
        for turn, answer in zip(item["turns"], turns, strict=False)  # type: ignore[arg-type]
        for message in ({"role": "user", "content": turn}, {"role": "assistant", "content": answer["output_text"]})
    ]
    return len(turns) == len(item["turns"]) and conversation == expected  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-delay", type=float, default=0.3, help="earliest kill, seconds after start")
    parser.add_argument("--max-delay", type=float, default=4.0, help="latest kill, seconds after start")
    parser.add_argument("--conversations", action="store_true", help="inputs mixing strings and 2-3 turn scripts")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    env = dict(os.environ, OPENAI_API_KEY="sk-crash-trial-key", NO_PROXY="127.0.0.1,localhost", PYTHONPATH=str(REPO))
    totals = {"duplicate_jobs": 0, "lost_results": 0, "corrupt_files": 0, "failed_resumes": 0}
    started = time.monotonic()
    for number in range(1, args.trials + 1):
        delay = rng.uniform(args.min_delay, args.max_delay)
        with tempfile.TemporaryDirectory(prefix="speceval-crash-") as tmp:
            counts = trial(Path(tmp), delay, env, args.conversations)
        for key, value in counts.items():
            totals[key] += value
        flag = "" if not any(counts.values()) else f"  <-- {counts}"
        print(f"trial {number:3d}: killed after {delay:4.2f} s{flag}", flush=True)
    print(
        f"{args.trials} trials in {time.monotonic() - started:.0f} s: "
        f"{totals['duplicate_jobs']} duplicate jobs, {totals['lost_results']} lost results, "
        f"{totals['corrupt_files']} corrupt files, {totals['failed_resumes']} failed resumes"
    )
    sys.exit(1 if any(totals.values()) else 0)


if __name__ == "__main__":
    main()

"""Quality of generated inputs, measured: `speceval inputs --offline` on the shipped spec, then from the run's own
files: the duplicate rate, the share of rated proposals at or above the threshold, proposals paid per kept input,
and the estimated cost per kept input at the shipped price table (batch prices).

Offline the generator and rater are the emulator, whose answers are synthetic: these figures describe the pipeline
(dedup, threshold, rounds, request counts, tokens), not a real model's proposals. Run against providers with
`--online` to measure a real generator and rater (it costs money).

    python benchmarks/inputs_quality.py [--per-statement 10] [--threshold 7] [--online]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.batch.costs import PriceTable  # noqa: E402
from speceval.operations.costs import run_costs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-statement", type=int, default=10)
    parser.add_argument("--threshold", type=int, default=7)
    parser.add_argument("--generator", default="gpt-4.1-2025-04-14")
    parser.add_argument("--rater", default="claude-sonnet-4-6")
    parser.add_argument("--online", action="store_true", help="against the providers (needs keys; costs money)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "speceval",
            "inputs",
            "--spec-path",
            str(REPO / "data/specs/openai/jsonl/openai.jsonl"),
            "--generator-model",
            args.generator,
            "--rater-model",
            args.rater,
            "--per-statement",
            str(args.per_statement),
            "--rating-threshold",
            str(args.threshold),
            "--output-dir",
            tmp,
            *([] if args.online else ["--offline"]),
        ]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            sys.exit(f"speceval inputs failed ({done.returncode}):\n{done.stderr}")
        [run_dir] = [p.parent for p in Path(tmp).glob("*/input_judge/*/*/run.json")]
        records = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
        fates = Counter(r["fate"] for r in records)
        proposals = sum(r["text"] is not None for r in records)
        rated = [r for r in records if r["rating"] is not None]
        kept = fates["kept"]
        statements = {p.stem: len(json.loads(p.read_text())["inputs"]) for p in (run_dir / "inputs").iterdir()}
        costs = run_costs([run_dir], PriceTable.load())
        known = [c.cost_usd for c in costs if c.requests]
        total = None if any(c is None for c in known) else sum(c or 0.0 for c in known)
        requests = sum(c.requests for c in costs)
        print(
            f"{'offline (synthetic answers)' if not args.online else 'online'}: {len(statements)} statements, "
            f"N = {args.per_statement}, T = {args.threshold}, generator {args.generator}, rater {args.rater}"
        )
        print(
            f"proposals {proposals}; duplicates dropped before rating {fates['duplicate']} "
            f"({fates['duplicate'] / proposals:.1%}), copies of spec examples {fates['copies_spec_example']}"
        )
        print(
            f"rated {len(rated)}; at or above T {sum(r['rating'] >= args.threshold for r in rated)} "
            f"({sum(r['rating'] >= args.threshold for r in rated) / max(len(rated), 1):.1%}); unparsed "
            f"{fates['unparsed']}"
        )
        print(
            f"kept {kept}; statements reaching N {sum(n >= args.per_statement for n in statements.values())} of "
            f"{len(statements)}; proposals per kept input {proposals / max(kept, 1):.2f}; requests per kept input "
            f"{requests / max(kept, 1):.2f}"
        )
        tokens = sum(c.input_tokens + c.output_tokens for c in costs)
        print(
            f"tokens {tokens:,}; estimated cost {'unknown' if total is None else f'USD {total:.4f}'}"
            + ("" if total is None else f"; per kept input USD {total / max(kept, 1):.5f}")
        )


if __name__ == "__main__":
    main()

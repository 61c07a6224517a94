"""The whole generation matrix: every configuration of the all-pairs covering array over the generation command's
feature lattice (`tests/study_matrix/generation_matrix.py`: provider, tier, conversation, runs, faults, interruption,
budget) and the named three-factor joins after it (`EXTRA`), each a small inputs folder run offline in child
processes under a watchdog (the dry run, the run, killed and resumed, stopped by a budget and resumed with it raised,
run again and with --new-run), every run directory checked (`tests/study_matrix/checks_generation.py`,
`checks_flow.sent_once`). Prints each configuration with its checks and the tier each round went at, then the counts:
configurations, checks, failures, and expected failures (`checks_generation.EXPECTED_FAIL`). Answers are synthetic
(the offline emulator).

    nice -n 10 .venv/bin/python benchmarks/generation_matrix.py [--seed N] [--limit K] [--start S]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.study_matrix.generation_matrix import EXTRA, FEATURES, run_one, tiers_sent  # noqa: E402
from tests.study_matrix.matrix import all_pairs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="run only the first K configurations")
    parser.add_argument("--start", type=int, default=0, help="skip the first S configurations (a run in parts)")
    args = parser.parse_args()
    numbered = list(enumerate([*all_pairs(FEATURES, args.seed), *EXTRA][: args.limit]))[args.start :]
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": os.environ.get("SPECEVAL_OFFLINE_TURNAROUND", "0.05")}
    checks = failures = expected = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="generation_matrix_") as root:
        for number, config in numbered:
            folder = Path(root) / f"c{number}"
            outcome = run_one(config, folder, env)
            checks += outcome.checks
            failures += len(outcome.failures)
            expected += len(outcome.expected)
            print(
                f"{number:2d} {config} {outcome.seconds:.0f}s tiers={tiers_sent(folder)} checks={outcome.checks} "
                f"failures={outcome.failures} expected={outcome.expected}",
                flush=True,
            )
    print(
        f"configurations: {len(numbered)}, checks: {checks}, failures: {failures}, expected failures: {expected} "
        f"({time.monotonic() - started:.0f} s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

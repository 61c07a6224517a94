"""The whole study matrix (issue 42): every configuration of the all-pairs covering array over the feature lattice
(`tests/study_matrix/matrix.py`: candidates, judges, variation, runs, budget, tier, labels, export, report, inputs,
endpoint, faults), each run offline in a subprocess under a watchdog (a dry run first, then the run; a budget raised
mid-way runs twice; then an aimed label sheet and an export read back), every invariant checked
(`tests/study_matrix/checks.py`, `checks_flow.py`). Prints each configuration with its checks, then the counts:
configurations, checks, failures, and expected failures (defects other helpers own, named in
`checks.EXPECTED_FAIL`).

    nice -n 10 .venv/bin/python benchmarks/study_matrix.py [--seed N] [--limit K] [--start S]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.study_matrix.matrix import FEATURES, all_pairs, run_one  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="run only the first K configurations")
    parser.add_argument("--start", type=int, default=0, help="skip the first S configurations (a run in parts)")
    args = parser.parse_args()
    configs = all_pairs(FEATURES, args.seed)[: args.limit]
    numbered = list(enumerate(configs))[args.start :]
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": os.environ.get("SPECEVAL_OFFLINE_TURNAROUND", "0.05")}
    checks = failures = expected = 0
    with tempfile.TemporaryDirectory(prefix="study_matrix_") as root:
        for number, config in numbered:
            outcome = run_one(config, Path(root) / f"c{number}", env)
            checks += outcome.checks
            failures += len(outcome.failures)
            expected += len(outcome.expected)
            print(
                f"{number:2d} {config} {outcome.seconds:.0f}s checks={outcome.checks} failures={outcome.failures} "
                f"expected={outcome.expected}"
            )
    print(f"configurations: {len(numbered)}, checks: {checks}, failures: {failures}, expected failures: {expected}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

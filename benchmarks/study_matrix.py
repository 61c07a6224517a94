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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.study_matrix.matrix import FEATURES, all_pairs, run_matrix, run_one  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_matrix(__doc__ or "", lambda seed: all_pairs(FEATURES, seed), run_one, prefix="study_matrix_"))

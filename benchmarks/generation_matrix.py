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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.study_matrix.generation_matrix import EXTRA, FEATURES, run_one, tiers_sent  # noqa: E402
from tests.study_matrix.matrix import all_pairs, run_matrix  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(
        run_matrix(
            __doc__ or "",
            lambda seed: [*all_pairs(FEATURES, seed), *EXTRA],
            run_one,
            prefix="generation_matrix_",
            describe=lambda folder: f" tiers={tiers_sent(folder)}",
        )
    )

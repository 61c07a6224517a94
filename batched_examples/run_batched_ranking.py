"""Compare candidates pairwise (every ordered pair, both orders) with a judge model through a provider batch API.

    python -m batched_examples.run_batched_ranking --config-file CONFIG.yaml [--offline]

Keys and flags: `--help` and `speceval.pipelines.judge_config`; the work is done by `speceval.pipelines.ranking`.
Run the same command again to resume.
"""

from speceval.cli.exits import exit_process
from speceval.cli.judge import ranking_main

if __name__ == "__main__":
    exit_process(ranking_main())

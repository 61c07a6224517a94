"""Judge candidates' answers for compliance with their statements through a provider batch API.

    python -m batched_examples.run_batched_binary_compliance --config-file CONFIG.yaml [--offline]

Keys and flags: `--help` and `speceval.pipelines.judge_config`; the work is done by `speceval.pipelines.compliance`.
Run the same command again to resume.
"""

from speceval.cli.exits import exit_process
from speceval.cli.judge import compliance_main

if __name__ == "__main__":
    exit_process(compliance_main())

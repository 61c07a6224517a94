"""Generate a candidate model's answers to pre-generated inputs through a provider batch API.

    python -m batched_examples.run_batched_generation --spec-path SPEC.jsonl \\
        --pregenerated-inputs-dir INPUTS/ --model-name gpt-4.1-mini-2025-04-14 [--offline]

See `--help` for every flag; the work is done by `speceval.pipelines.generation`.
"""

from speceval.cli.exits import exit_process
from speceval.cli.generation import main

if __name__ == "__main__":
    exit_process(main())

"""Defaults and names shared by a command's flag parser and its body (below both, so neither imports the other).

`speceval.cli.generation` and `speceval.cli.judge` parse flags (light, for a fast `--help`);
`speceval.cli.generation_command` and `speceval.cli.judge_command` run the work. Both sides read these.
"""

from __future__ import annotations

from typing import Literal

# run_batched_generation
GENERATION_BATCH_SIZE = 500

# run_batched_binary_compliance and run_batched_ranking
Kind = Literal["compliance", "ranking"]
JUDGE_BATCH_SIZE = 100
# The original accepted API keys as flags; a key on a command line stays in shell history and process lists.
KEY_FLAGS = {
    "openai_api_key": "OPENAI_API_KEY",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "google_api_key": "GOOGLE_API_KEY",
}


def script(kind: Kind) -> str:
    """The `batched_examples` module that runs a judge command (in its usage line and its rerun hint)."""
    return "run_batched_binary_compliance" if kind == "compliance" else "run_batched_ranking"

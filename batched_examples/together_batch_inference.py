"""The original Together script's command line, mapped onto speceval's realtime generation run.

    python -m batched_examples.together_batch_inference --model-name meta-llama/Llama-3.3-70B-Instruct-Turbo \\
        --pregenerated-inputs-dir INPUTS/ --spec openai [--qps 10] [--offline]

Original flag → new option: `--qps Q` → `--rpm 60·Q` (a rate, where the original capped concurrency);
`--batch-size B` → `--max-concurrency B` (the original sent B prompts per wave); `--max-retries R` →
`--max-attempts R+1`; `--initial-retry-delay`, `--retry-backoff-factor` → same names; `--spec S` → `--spec-name S`
and, unless `--spec-path` is given, the shipped `data/specs/S/jsonl/S.jsonl`; `-v` → `--verbose`.
`--retriable-error-substrings` is accepted and ignored: errors are classified by HTTP status now. Output goes to
the run layout of every generation (`{output-base-dir}/{spec}/{model}/{timestamp}/results/…`), checkpointed as
each request finishes. Any other flag of `run_batched_generation` (`--resume`, `--tpm`, `--offline`, …) passes
through.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from speceval.cli.exits import exit_process
from speceval.cli.generation import main as generation_main

REPO = Path(__file__).resolve().parent.parent
logger = logging.getLogger("speceval")


def translate(argv: Sequence[str]) -> list[str]:
    """The `run_batched_generation` arguments equivalent to the original script's `argv`."""
    # No abbreviations: an unknown prefix passes through to run_batched_generation, which refuses it.
    parser = argparse.ArgumentParser(
        prog="python -m batched_examples.together_batch_inference", add_help=True, allow_abbrev=False
    )
    parser.add_argument("--model-name")
    parser.add_argument("--pregenerated-inputs-dir")
    parser.add_argument("--output-base-dir", default="data/together_batch_generations")
    parser.add_argument("--spec", choices=("openai", "google", "anthropic"))
    parser.add_argument("--spec-path")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--qps", type=float)
    parser.add_argument("--max-retries", type=int)
    parser.add_argument("--initial-retry-delay", type=float)
    parser.add_argument("--retry-backoff-factor", type=float)
    parser.add_argument("--retriable-error-substrings")
    parser.add_argument("-v", "--verbose", action="store_true")
    known, rest = parser.parse_known_args(argv)
    out: list[str] = []
    resuming = "--resume" in rest
    if not resuming:
        out += ["--org", "together", "--output-base-dir", known.output_base_dir]
    if known.model_name is not None:
        out += ["--model-name", known.model_name]
    if known.pregenerated_inputs_dir is not None:
        out += ["--pregenerated-inputs-dir", known.pregenerated_inputs_dir]
    if known.spec is not None:
        out += ["--spec-name", known.spec]
        if known.spec_path is None:
            out += ["--spec-path", str(REPO / "data" / "specs" / known.spec / "jsonl" / f"{known.spec}.jsonl")]
    if known.spec_path is not None:
        out += ["--spec-path", known.spec_path]
    if known.qps is not None:
        out += ["--rpm", f"{known.qps * 60:g}"]
    if known.batch_size is not None:
        out += ["--max-concurrency", str(known.batch_size)]
    if known.max_retries is not None:
        out += ["--max-attempts", str(known.max_retries + 1)]
    if known.initial_retry_delay is not None:
        out += ["--retry-initial-delay", f"{known.initial_retry_delay:g}"]
    if known.retry_backoff_factor is not None:
        out += ["--retry-backoff-factor", f"{known.retry_backoff_factor:g}"]
    if known.verbose:
        out.append("--verbose")
    if known.retriable_error_substrings is not None:
        print(
            "note: --retriable-error-substrings is ignored; 429, 5xx, timeouts and lost connections are retried",
            file=sys.stderr,
        )
    return out + rest


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code of the generation run."""
    return generation_main(translate(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    exit_process(main())

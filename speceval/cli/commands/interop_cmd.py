"""`speceval export --format inspect`: the console side of the Inspect AI bridge (`speceval.interop`)."""

from __future__ import annotations

from pathlib import Path

from speceval.errors import ConfigError


def export_inspect_logs(
    paths: list[Path],
    out: Path,
    log_format: str,
    max_samples: int | None = None,
    labels: Path | None = None,
    min_canary_accuracy: float | None = None,
) -> int:
    """Write the Inspect eval logs of the verdicts under `paths` into the new folder `out`; print what was written."""
    from speceval.cli.console import stdout
    from speceval.interop.inspect_card import CARD_TAG
    from speceval.interop.inspect_log import export_inspect
    from speceval.interop.inspect_parts import MAX_SAMPLES_PER_LOG
    from speceval.paths import check_output_dir

    check_output_dir(out, "--out")
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out {out} is not empty; give a new folder (the export never mixes with other files)")
    done = export_inspect(
        paths,
        out,
        log_format,
        MAX_SAMPLES_PER_LOG if max_samples is None else max_samples,
        labels=labels,
        min_canary_accuracy=min_canary_accuracy,
    )
    stdout.print(
        f"{len(done.logs)} Inspect eval log file(s) with {done.samples} sample(s) written under {out} "
        f"(open them with: inspect view --log-dir {out})"
        + (
            f"; the rankings of {done.ranking_files_left_out} results file(s) left out (Inspect logs have no place "
            "for pairwise comparisons; --format jsonl keeps them)"
            if done.ranking_files_left_out
            else ""
        )
    )
    for note in done.notes:
        stdout.print(f"note: {note}")
    for judge in done.failing_judges:  # as the report's stage says it: never a log that only looks like the others
        stdout.print(f"judge {judge} fails its judge card: its logs say so (tag {CARD_TAG}..., metadata judge_card)")
    return 0

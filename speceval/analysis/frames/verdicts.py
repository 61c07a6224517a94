"""Every compliance verdict and every comparison under a folder as a data frame, one row per record."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from speceval.analysis.frames.columns import Frame, pandas
from speceval.analysis.frames.exported import export_rows, exported
from speceval.analysis.reading.load import walk
from speceval.analysis.reading.rows import DEFAULT_VARIATION, Found, RankingRow
from speceval.analysis.reading.settings import mixed_settings, settings_variation
from speceval.analysis.reading.skipped_answers import answers_never_judged
from speceval.analysis.tables.keys import PROVIDER, SYNTHETIC
from speceval.pipelines.inspect_logs import inspect_logs_in

VERDICT_COLUMNS: dict[str, str] = {
    "spec": "category",
    "judge": "category",
    "candidate": "category",
    "variation": "category",
    "run": "int",
    "statement_id": "category",
    "turn": "int",
    "conversation": "int",
    "input": "text",
    "output": "text",
    "mode": "category",
    "outcome": "category",
    "compliant": "bool",
    "confidence": "float",
    "rating": "float",
    "category": "category",
    "explanation": "text",
    "statement_type": "category",
    "authority_level": "category",
    "prompt_version": "category",
    "candidate_settings": "category",
    "data": "category",
    "source": "category",
}
"""A verdict frame's columns and their kinds (`Frame`): `candidate` is the judged model, `turn` the judged turn
of a conversation (scope turn; missing otherwise), `data` `synthetic` (emulator) or `provider`."""

RANKING_COLUMNS: dict[str, str] = {
    "spec": "category",
    "judge": "category",
    "candidate_a": "category",
    "candidate_b": "category",
    "variation": "category",
    "run": "int",
    "statement_id": "category",
    "index": "int",
    "input": "text",
    "outcome": "category",
    "rank": "int",
    "data": "category",
    "source": "category",
}
"""A ranking frame's columns: one row per comparison as shown to the judge (`candidate_a` first); `rank` 1 (A
better), 2 (B), 0 (a tie), missing when the comparison has no verdict."""


def read_verdicts(folder: str | Path) -> Any:
    """Every compliance verdict at or below `folder` (judge runs, experiments, exports read back; or in a file of
    `speceval export --format jsonl|parquet`) as a pandas DataFrame, one row per verdict (`VERDICT_COLUMNS`). Read a
    chunk of verdicts at a time."""
    pandas()  # said before any file is read
    frame = Frame(VERDICT_COLUMNS)
    if exported(Path(folder)):  # an export's rows (`speceval export --format jsonl|parquet`), read back
        frame.extend(export_rows(Path(folder), "compliance"))
        table = frame.frame()
        _settings_as_variations(table)
        return table
    for _, rows, _ in walk([Path(folder)], Found(), keep=False, rankings=_ignored):
        for row in rows:
            frame.add(
                {
                    **row.__dict__,
                    "candidate": row.model,
                    "data": SYNTHETIC if row.synthetic else PROVIDER,
                }
            )
    table = frame.frame()
    _settings_as_variations(table)
    _say_never_judged(table, Path(folder))
    if not len(table) and inspect_logs_in(Path(folder)):
        # Said, not an empty frame without a word: Inspect logs hold a candidate's answers (their scorers' scores
        # are not speceval verdicts); judge them, or read them as answers.
        warnings.warn(
            f"{folder}: no speceval verdict files, but Inspect logs: read_verdicts does not read their scores "
            "back as verdicts; speceval.read_answers reads their answers, and the compliance command judges them",
            UserWarning,
            stacklevel=2,
        )
    return table


def _say_never_judged(table: Any, folder: Path) -> None:
    """A judgement never asked for (the candidate's answer failed at generation) has no row: its count by generation
    outcome is in `table.attrs["answers_never_judged"]` (once per judge) and said in a warning, so a rate computed from
    the frame is not read as over every answer (the report counts them in each rate's not_judged)."""
    never = answers_never_judged([folder])
    table.attrs["answers_never_judged"] = dict(sorted(never.items()))
    if never:
        kinds = ", ".join(f"{n} {outcome}" for outcome, n in sorted(never.items()))
        warnings.warn(
            f"{folder}: {sum(never.values())} judgement(s) were never asked for, their candidate answer having failed "
            f"(generation: {kinds}; once per judge): no row here (frame.attrs['answers_never_judged'])",
            UserWarning,
            stacklevel=3,
        )


def read_rankings(folder: str | Path) -> Any:
    """Every pairwise comparison at or below `folder` (or in a file of `speceval export`) as a pandas DataFrame, one
    row per comparison (`RANKING_COLUMNS`)."""
    pandas()
    frame = Frame(RANKING_COLUMNS)
    if exported(Path(folder)):  # an export's comparisons, read back
        frame.extend(export_rows(Path(folder), "ranking"))
        return frame.frame()

    def take(file: Path, rows: Iterator[RankingRow], offsets: object) -> None:
        for row in rows:
            frame.add(
                {
                    **row.__dict__,
                    "candidate_a": row.model_a,
                    "candidate_b": row.model_b,
                    "data": SYNTHETIC if row.synthetic else PROVIDER,
                }
            )

    for _, rows, _ in walk([Path(folder)], Found(), keep=False, rankings=take):
        for _row in rows:  # compliance files: read through (their rows belong to `read_verdicts`)
            pass
    return frame.frame()


def _ignored(file: Path, rows: Iterator[RankingRow], offsets: object) -> None:
    """A ranking file met while reading compliance verdicts: not read."""


def _settings_as_variations(table: Any) -> None:
    """Runs outside an experiment made with different settings are told apart by their settings, as the report
    does (`speceval.analysis.reading.settings`)."""
    if not len(table):
        return
    default = table[table["variation"] == DEFAULT_VARIATION]
    kinds: dict[tuple[str, str, str], set[str | None]] = {}
    for (spec, judge, candidate, settings), _ in default.groupby(
        ["spec", "judge", "candidate", "candidate_settings"], observed=True, dropna=False
    ):
        kinds.setdefault((str(spec), str(judge), str(candidate)), set()).add(None if settings != settings else settings)
    mixed = mixed_settings(kinds)
    if not mixed:
        return
    keys = list(zip(table["spec"].astype(str), table["judge"].astype(str), table["candidate"].astype(str), strict=True))
    settings = table["candidate_settings"].astype(object)
    variation = table["variation"].astype(object)
    for index, key in enumerate(keys):
        if variation.iat[index] == DEFAULT_VARIATION and key in mixed:
            label = settings.iat[index]
            variation.iat[index] = settings_variation(None if label != label else label)
    table["variation"] = variation.astype("category")

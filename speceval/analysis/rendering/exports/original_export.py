"""`speceval export --format original`: verdicts rewritten in the original SpecEval's folder layout and file shapes,
so its analysis scripts (`analyze_batch_binary_compliance.py`, `analyze_batch_rankings.py --all_pairs`, ...) run on
speceval's results unchanged.

    OUT/[<variation>/run<k>/]batched_compliance/spec_<spec>/judge_<judge>/<model>/results/<statement_id>.json
        {"metadata": {...}, "results": [{"input", "output", "compliant", "confidence", "explanation"}]}
    OUT/[<variation>/run<k>/]batched_rankings/spec_<spec>/judge_<judge>/<A>x<B>/results/<statement_id>.json
        {"metadata": {...}, "rankings": [{"input", "output_a", "output_b", "rank", "raw_judge_response"}]}
    OUT/[<variation>/run<k>/]likert_judgements/JUDGE_<provider>_<judge>/<MM_DD_YYYY>/<evaluator>x<candidate>/
        <statement_id>.json = {"metadata": {...}, "judgements": [{"input", "output", "rating", "explanation"}]}

Three trees, as the original wrote them (its `output_dir_base` defaults `data/batched_compliance` and
`data/batched_rankings`, its ratings' `data/likert_judgements`: `original_likert`): its compliance scripts take
every folder under `judge_<judge>/` for a model, so a pair's folder there would be reported as a model with
compliance 0, and a Likert judge's folder there as a judge that found nothing compliant (its ratings have no
`compliant`). Model and judge folders are named as the original named them, the model name with `/` → `-` and
capitals kept (`Qwen-Qwen3-235B-A22B-fp8-tput`: `utils/parsing.py:69` and `run_batched_binary_compliance.py:129,172`
at b1936bd; its diagonal script looks the folder up by that name); only a name that cannot be a folder so (a
backslash, a control character, `.`/`..`, too long) gets speceval's safe name. Each file's metadata says
`"synthetic"` (offline emulator answers), `"exported_by"`, and the verdicts' `"variation"`, its `"settings"` and
`"run"`, and `speceval report` over the export reads them back (the folder names alone would not give the
variation's name or settings, and without the run every run's comparisons would be matched as one run's).

The variation/run level appears only when the verdicts come from more than one (a study the original could not
express; an Inspect log's epochs are runs, each in its own `run<k>`: the original's `--all_pairs` matches a pair's
two orders by input, so two runs' comparisons in one file would keep one of each input); a variation's folder is
named as an experiment names it (`temperature-0.7_plain`). What the original wrote for what it could not judge is
kept: `compliant: null` for a compliance verdict (its scripts divide by every record, so their rates are compliant ÷
all records, not ÷ judged), `rating: null` for a rating, and for a ranking `rank: 0` with a raw answer starting
`ERROR:` (its `--all_pairs` stops on `rank: null`); speceval reads such a ranking back as missing, not a tie.
Categorical verdicts have no original shape, and per-turn verdicts (a judge with `scope: turn`) would be counted by
its scripts as one answer each: both are left out (counted; `--format jsonl` keeps them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speceval.analysis.reading.original import ERROR_PREFIX
from speceval.analysis.rendering.exports.export import surveyed, verdict_rows
from speceval.analysis.rendering.exports.original_likert import (
    evaluator_name,
    judge_folder,
    likert_path,
    likert_payload,
)
from speceval.atomic import atomic_write_json
from speceval.paths import MAX_NAME_LENGTH, readable_names, safe_filename, safe_path

EXPORTED_BY = "speceval export"
"""`metadata.exported_by` of every file the export writes (how `speceval report` knows to read `synthetic` back)."""
TREES = {"compliance": "batched_compliance", "ranking": "batched_rankings"}
"""The folder of each kind of verdict, named as the original's default `output_dir_base`s (Likert verdicts:
`original_likert.LIKERT_TREE`)."""


@dataclass(frozen=True)
class OriginalExport:
    """What `export_original` wrote and what it left out."""

    files: int
    categorical_left_out: int
    turn_verdicts_left_out: int
    unsplittable: tuple[str, ...] = ()
    """Folders `<A>x<B>` (or `<evaluator>x<candidate>`) with more than one `x`: the original's scripts split them
    at the first `x` (rankings) or skip them (ratings), so they would miscount these; said by the command."""


def original_folder(name: str) -> str:
    """A model's (or judge's) folder as the original named it: `/` → `-`, capitals kept; speceval's safe name only
    for a name no file system would take so."""
    folder = name.replace("/", "-")
    plain = (
        folder not in ("", ".", "..")
        and len(folder) <= MAX_NAME_LENGTH
        and not folder.startswith(".")
        and not any(c == "\\" or ord(c) < 32 for c in folder)
    )
    return folder if plain else safe_filename(folder)


def export_original(paths: Sequence[Path], out: Path, day: str | None = None) -> OriginalExport:
    """Write the original-layout folders under `out`, one file at a time as the verdicts stream by (a source file's
    verdicts come together; a file two sources write to, e.g. two judge runs of one candidate given together, has
    the second one's entries added after the first's). `day`: the ratings' date folder (`MM_DD_YYYY`; today's)."""
    day = day or datetime.now(UTC).strftime("%m_%d_%Y")
    plan = surveyed(paths)
    variation_folders = readable_names(sorted({variation for variation, _ in plan.grids}))  # as an experiment does
    several = len(plan.grids) > 1
    written: set[tuple[Any, ...]] = set()
    key: tuple[Any, ...] | None = None
    rows: list[dict[str, Any]] = []
    categorical = turns = 0
    unsplittable: set[str] = set()

    def flush() -> None:
        if key is not None and rows:
            _write(out, key, rows, variation_folders if several else None, key in written, day)
            written.add(key)

    for row in verdict_rows(paths, plan):
        if row["kind"] == "compliance" and row["mode"] == "categories":
            categorical += 1
            continue
        if row["kind"] == "compliance" and row.get("turn") is not None:
            turns += 1
            continue
        kind = "likert" if row["kind"] == "compliance" and row["mode"] == "likert" else row["kind"]
        folder = _folder(kind, row)
        if kind != "compliance" and folder.count("x") != 1:
            unsplittable.add(folder)
        row_key = (kind, row["variation"], row["run"], row["spec"], row["judge"], folder, row["statement_id"])
        if row_key != key:
            flush()
            key, rows = row_key, []
        rows.append(row)
    flush()
    return OriginalExport(
        files=len(written),
        categorical_left_out=categorical,
        turn_verdicts_left_out=turns,
        unsplittable=tuple(sorted(unsplittable)),
    )


def _folder(kind: str, row: dict[str, Any]) -> str:
    """The folder a verdict's file goes in: the candidate's, `<evaluator>x<candidate>` (ratings) or `<A>x<B>`."""
    if kind == "compliance":
        return original_folder(row["candidate"])
    if kind == "likert":
        return f"{original_folder(evaluator_name(row['spec']))}x{original_folder(row['candidate'])}"
    return f"{original_folder(row['model_a'])}x{original_folder(row['model_b'])}"


def _write(
    out: Path,
    key: tuple[Any, ...],
    rows: list[dict[str, Any]],
    variation_folders: dict[str, str] | None,
    again: bool,
    day: str,
) -> None:
    kind, variation, run, spec, judge, folder, statement_id = key
    base = out / variation_folders[variation] / f"run{run}" if variation_folders is not None else out
    path = (
        likert_path(base, judge_folder(judge, original_folder(judge)), day, folder, statement_id)
        if kind == "likert"
        else safe_path(
            base / TREES[kind] / f"spec_{safe_filename(spec)}" / f"judge_{original_folder(judge)}" / folder / "results",
            statement_id,
            ".json",
        )
    )
    # The original's own metadata keys (its compliance files named the judge nowhere; `judge_model` is what
    # speceval reads when present), plus where the file came from and whether its answers are synthetic.
    metadata = {
        "statement_id": statement_id,
        "exported_by": EXPORTED_BY,
        # read back as the file's variation and run (the original's scripts read neither key)
        "variation": variation,
        "settings": json.loads(rows[0]["settings"]),  # the variation's settings (the folder names only its name)
        "run": run,
        "synthetic": any(r["synthetic"] for r in rows),
    }
    payload: dict[str, Any]
    if kind == "likert":
        payload = likert_payload(metadata, _ordered(rows, "original_index"))
    elif kind == "compliance":
        payload = {
            "metadata": {**metadata, "model": rows[0]["candidate"], "judge_model": judge},
            "results": [_compliance(r) for r in _ordered(rows, "original_index")],
        }
    else:
        payload = {
            "metadata": {
                **metadata,
                "model_a": rows[0]["model_a"],
                "model_b": rows[0]["model_b"],
                "org_spec_name": spec,
                "ranking_judge_model_info": {"model_name": judge},
            },
            "rankings": [_ranking(r) for r in _ordered(rows, "index")],
        }
    if again:
        before = json.loads(path.read_bytes())
        entries = {"compliance": "results", "likert": "judgements", "ranking": "rankings"}[kind]
        payload[entries] = before[entries] + payload[entries]
        payload["metadata"]["synthetic"] = payload["metadata"]["synthetic"] or before["metadata"]["synthetic"]
    atomic_write_json(path, payload)


def _ordered(rows: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r.get(field) is None, r.get(field) or 0))


def _compliance(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["outcome"] == "judged"
    return {
        "input": row["input"],
        "output": row["output"],
        "compliant": row["compliant"] if judged else None,
        "confidence": row["confidence"] if judged else None,
        "explanation": row["explanation"] if judged else f"{row['outcome']}: {row['parse_error'] or ''}".strip(),
    }


def _ranking(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["outcome"] == "judged" and row["rank"] is not None
    raw = row["raw_judge_response"]
    return {
        "input": row["input"],
        "output_a": row["output_a"],
        "output_b": row["output_b"],
        "rank": row["rank"] if judged else 0,
        "raw_judge_response": raw if judged else f"{ERROR_PREFIX} {row['outcome']} ({json.dumps(raw)})",
    }

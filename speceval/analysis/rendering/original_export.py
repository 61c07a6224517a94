"""`speceval export --format original`: verdicts rewritten in the original SpecEval's folder layout and file shapes,
so its analysis scripts (`analyze_batch_binary_compliance.py`, `analyze_batch_rankings.py --all_pairs`, ...) run on
speceval's results unchanged.

    OUT/[<variation>/run<k>/]spec_<spec>/judge_<judge>/<model>/results/<statement_id>.json
        {"metadata": {...}, "results": [{"input", "output", "compliant", "confidence", "explanation"[, "rating"]}]}
    OUT/[<variation>/run<k>/]spec_<spec>/judge_<judge>/<A>x<B>/results/<statement_id>.json
        {"metadata": {...}, "rankings": [{"input", "output_a", "output_b", "rank", "raw_judge_response"}]}

The variation/run level appears only when the verdicts come from more than one (a study the original could not
express); a variation's folder is named as an experiment names it (`temperature-0.7_plain`). What the original wrote
for what it could not judge is kept: `compliant: null` for a compliance verdict (its scripts divide by every record,
so their rates are compliant ÷ all records, not ÷ judged), and for a ranking `rank: 0` with a raw answer starting
`ERROR:` (its `--all_pairs` stops on `rank: null`); speceval reads such a ranking back as missing, not a tie.
Categorical verdicts have no original shape and are left out (counted).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.reading.original import ERROR_PREFIX
from speceval.analysis.rendering.export import verdict_rows
from speceval.atomic import atomic_write_json
from speceval.paths import readable_names, safe_filename, safe_path


def export_original(paths: Sequence[Path], out: Path) -> tuple[int, int]:
    """Write the original-layout folders under `out`; returns (files written, categorical verdicts left out)."""
    files: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    left_out = 0
    for row in verdict_rows(paths):
        if row["kind"] == "compliance" and row["mode"] == "categories":
            left_out += 1
            continue
        folder = row["candidate"] if row["kind"] == "compliance" else f"{row['model_a']}x{row['model_b']}"
        files[(row["kind"], row["variation"], row["run"], row["spec"], row["judge"], folder,
               row["statement_id"])].append(row)
    grids = {(key[1], key[2]) for key in files}
    variation_folders = readable_names(sorted({key[1] for key in files}))  # as an experiment names them
    for key, rows in files.items():
        kind, variation, run, spec, judge, folder, statement_id = key
        base = out / variation_folders[variation] / f"run{run}" if len(grids) > 1 else out
        directory = (base / f"spec_{safe_filename(spec)}" / f"judge_{safe_filename(judge.replace('/', '-'))}"
                     / safe_filename(folder.replace("/", "-")) / "results")
        # The original's own metadata keys (its compliance files named the judge nowhere; `judge_model` is what
        # speceval reads when present), plus where the file came from and whether its answers are synthetic.
        metadata = {"statement_id": statement_id, "exported_by": "speceval export",
                    "synthetic": any(r["synthetic"] for r in rows)}
        if kind == "compliance":
            payload: dict[str, Any] = {"metadata": {**metadata, "model": rows[0]["candidate"], "judge_model": judge},
                                       "results": [_compliance(r) for r in _ordered(rows, "original_index")]}
        else:
            payload = {"metadata": {**metadata, "model_a": rows[0]["model_a"], "model_b": rows[0]["model_b"],
                                    "org_spec_name": spec, "ranking_judge_model_info": {"model_name": judge}},
                       "rankings": [_ranking(r) for r in _ordered(rows, "index")]}
        atomic_write_json(safe_path(directory, statement_id, ".json"), payload)
    return len(files), left_out


def _ordered(rows: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r.get(field) is None, r.get(field) or 0))


def _compliance(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["outcome"] == "judged"
    entry = {"input": row["input"], "output": row["output"], "compliant": row["compliant"] if judged else None,
             "confidence": row["confidence"] if judged else None,
             "explanation": row["explanation"] if judged else f"{row['outcome']}: {row['parse_error'] or ''}".strip()}
    if row["mode"] == "likert":
        entry["rating"] = row["rating"] if judged else None
    return entry


def _ranking(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["outcome"] == "judged" and row["rank"] is not None
    raw = row["raw_judge_response"]
    return {"input": row["input"], "output_a": row["output_a"], "output_b": row["output_b"],
            "rank": row["rank"] if judged else 0,
            "raw_judge_response": raw if judged else f"{ERROR_PREFIX} {row['outcome']} ({json.dumps(raw)})"}

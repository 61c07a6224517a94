"""The original SpecEval's result files, read as they are (so a paper's worth of judged data needs no re-judging).

Compliance (`run_batched_binary_compliance.py`): `spec_<spec>/judge_<judge>/<candidate>/results/<statement>.json` =
`{metadata: {model, statement_id, batch_ids | judge_model}, results: [{input, output, compliant, confidence,
explanation}]}`. `compliant: null` meant unparsed, missing or failed alike; it is counted as `not_judged`, never as
non-compliant. The original's own tables divided by every record (compliant ÷ all records); ours divide by judged
records and put the `not_judged` count beside every rate, so both can be recomputed.

Rankings (`batched_ranking_pipeline.py`): `spec_<spec>/judge_<judge>/<A>x<B>/results/<statement>.json` =
`{metadata: {ranking_judge_model_info: {model_name}, model_a, model_b, org_spec_name, statement_id},
rankings: [{input, output_a, output_b, rank, raw_judge_response}]}` (sorted by input). `rank` 0 was written both for
a real tie and for a missing or unparseable answer (`raw_judge_response` "ERROR: …"): the latter is `missing` here,
the former a tie.

Ratings (`analysis/analyze_likert_compliance.py`; `speceval export --format original` writes them so):
`JUDGE_<provider>_<judge>/<MM_DD_YYYY>/<evaluator>x<candidate>/<statement>.json` = `{metadata: {candidate_model,
judge_model, evaluator_model: {provider, model_name}, statement_id}, judgements: [{input, output, rating,
explanation}]}`. A rating 1-5 is a judged Likert verdict; `null`, or the 0 the original's models wrote for an error,
is `not_judged` (its script leaves null out of its mean; its 0 would have been averaged in).

The original wrote no judge or spec name into compliance files, so those two come from the folder names
`spec_<spec>` and `judge_<judge>` above the file; model names come from the files' metadata (a pair folder's
`<A>x<B>` name only when a corrected file has no metadata at all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speceval.errors import InputError

ORIGINAL_NOT_JUDGED = "not_judged"
"""The outcome of an original compliance record with `compliant: null` (unparsed, missing or failed: the original
files cannot tell which)."""
ORIGINAL_MISSING = "missing"
ERROR_PREFIX = "ERROR:"
UNKNOWN_SPEC = "unknown"
"""The spec of an original ratings file that names none (the original's ratings layout has no spec folder)."""


def is_original_compliance(data: dict[str, Any]) -> bool:
    """An original binary-compliance file: `results` records with `compliant` but no `outcome`, no judge in metadata."""
    results = data.get("results")
    metadata = data.get("metadata")
    return (
        isinstance(results, list)
        and isinstance(metadata, dict)
        and "judge" not in metadata
        and all(isinstance(r, dict) and "compliant" in r and "outcome" not in r for r in results)
    )


def is_original_likert(data: dict[str, Any]) -> bool:
    """An original ratings file: a `judgements` list of records without our `outcome` field."""
    judgements = data.get("judgements")
    return isinstance(judgements, list) and all(isinstance(r, dict) and "outcome" not in r for r in judgements)


def is_ratings_folder(folder: Path) -> bool:
    """Where the original filed ratings: `JUDGE_<…>/<date>/<evaluator>x<candidate>/` (of `<statement>.json`s)."""
    return folder.parent.parent.name.startswith("JUDGE_")


def likert_records(file: Path, data: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(names, records) of an original ratings file: names = spec, judge, model, statement_id (from its metadata,
    else its folders: the judge after `JUDGE_<provider>_`, the candidate after the `x` of `<evaluator>x<candidate>`);
    each record with our field names (outcome judged or not_judged)."""
    metadata: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    candidate = _model_name(metadata.get("candidate_model"))
    if candidate is None:
        what = "ratings file names no candidate in metadata.candidate_model"
        candidate = _folder_pair(file, file.parent.name, what, "<evaluator>x<candidate>", "metadata.candidate_model")[1]
    judge = _model_name(metadata.get("judge_model"))
    if judge is None:
        _, _, judge = folder_value(file, "JUDGE_", "judge").partition("_")  # JUDGE_<provider>_<model>
    names = {
        "spec": str(metadata.get("spec") or UNKNOWN_SPEC),
        "judge": judge,
        "model": candidate,
        "statement_id": str(metadata.get("statement_id") or file.stem),
    }
    records = []
    for number, entry in enumerate(data["judgements"]):
        rating = entry.get("rating")
        if rating is not None and (isinstance(rating, bool) or not isinstance(rating, int) or not 0 <= rating <= 5):
            raise InputError(
                file,
                f"judgements[{number}].rating must be an integer from 1 to 5 (0 or null: no rating), not {rating!r}",
                field=f"judgements.{number}.rating",
            )
        rated = float(rating) if isinstance(rating, int) and rating >= 1 else None
        records.append(
            {
                "input": str(entry.get("input", "")),
                "output": str(entry.get("output", "")),
                "compliant": None,
                "confidence": None,
                "explanation": entry.get("explanation") if isinstance(entry.get("explanation"), str) else None,
                "rating": rated,
                "outcome": "judged" if rated is not None else ORIGINAL_NOT_JUDGED,
                "detail": {"original_index": number},
            }
        )
    return names, records


def _model_name(value: object) -> str | None:
    """A model's name as the original's metadata gives it: `{provider, model_name}` (or a plain string)."""
    name = value.get("model_name") if isinstance(value, dict) else value
    return name if isinstance(name, str) and name else None


def is_original_ranking(data: dict[str, Any]) -> bool:
    """An original ranking file: `rankings` records without our `outcome` field."""
    rankings = data.get("rankings")
    return isinstance(rankings, list) and all(isinstance(r, dict) and "outcome" not in r for r in rankings)


def folder_value(file: Path, prefix: str, field: str) -> str:
    """The name after `prefix` of the nearest folder above `file` that starts with it (`spec_`, `judge_`)."""
    for folder in file.parents:
        if folder.name.startswith(prefix) and len(folder.name) > len(prefix):
            return folder.name[len(prefix) :]
    raise InputError(
        file,
        f"an original SpecEval results file must sit below a '{prefix}<name>' folder "
        f"(its {field} is not written in the file)",
        field=field,
    )


def compliance_records(file: Path, data: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(names, records) of an original compliance file: names = spec, judge, model, statement_id; each record with
    our field names (outcome judged or not_judged)."""
    metadata = data["metadata"]
    model = metadata.get("model") or metadata.get("candidate_model")
    if not isinstance(model, str) or not model:
        raise InputError(
            file, "an original compliance file names its candidate in metadata.model", field="metadata.model"
        )
    statement_id = metadata.get("statement_id") or file.stem
    judge = metadata.get("judge_model") if isinstance(metadata.get("judge_model"), str) else None
    names = {
        "spec": folder_value(file, "spec_", "spec"),
        "judge": judge or folder_value(file, "judge_", "judge"),
        "model": model,
        "statement_id": str(statement_id),
    }
    records = []
    for number, entry in enumerate(data["results"]):
        compliant = entry.get("compliant")
        if compliant is not None and not isinstance(compliant, bool):
            raise InputError(
                file,
                f"results[{number}].compliant must be true, false or null, not {compliant!r}",
                field=f"results.{number}.compliant",
            )
        records.append(
            {
                "input": str(entry.get("input", "")),
                "output": str(entry.get("output", "")),
                "compliant": compliant,
                "confidence": _number(entry.get("confidence")),
                "explanation": entry.get("explanation") if isinstance(entry.get("explanation"), str) else None,
                "rating": entry.get("rating") if isinstance(entry.get("rating"), int | float) else None,
                "outcome": "judged" if compliant is not None else ORIGINAL_NOT_JUDGED,
                "detail": {"original_index": number},
            }
        )
    return names, records


def ranking_records(file: Path, data: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(names, records) of an original ranking file: names = spec, judge, model_a, model_b, statement_id; records
    with index (position among the file's inputs, sorted, so both orders of a pair line up), outcome and rank."""
    metadata: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    info = metadata.get("ranking_judge_model_info")
    judge = info.get("model_name") if isinstance(info, dict) else None
    judge = judge or metadata.get("ranking_model") or metadata.get("evaluator_model")
    model_a, model_b = metadata.get("model_a"), metadata.get("model_b")
    if not (isinstance(model_a, str) and isinstance(model_b, str)):
        what = "ranking file names no models in metadata"
        model_a, model_b = _folder_pair(file, file.parent.parent.name, what, "<A>x<B>", "metadata.model_a")
    names = {
        "spec": str(metadata.get("org_spec_name") or folder_value(file, "spec_", "spec")),
        "judge": str(judge) if judge else folder_value(file, "judge_", "judge"),
        "model_a": model_a,
        "model_b": model_b,
        "statement_id": str(metadata.get("statement_id") or file.stem),
    }
    order = {text: i for i, text in enumerate(sorted({str(r.get("input", "")) for r in data["rankings"]}))}
    records = []
    for number, entry in enumerate(data["rankings"]):
        rank = entry.get("rank")
        raw = entry.get("raw_judge_response")
        if rank not in (1, -1, 0, None) or isinstance(rank, bool):
            raise InputError(
                file, f"rankings[{number}].rank must be 1, -1, 0 or null, not {rank!r}", field=f"rankings.{number}.rank"
            )
        failed = rank is None or (rank == 0 and isinstance(raw, str) and raw.startswith(ERROR_PREFIX))
        records.append(
            {
                "index": order[str(entry.get("input", ""))],
                "input": str(entry.get("input", "")),
                "outcome": ORIGINAL_MISSING if failed else "judged",
                "rank": None if failed else rank,
                "detail": {
                    "output_a": entry.get("output_a"),
                    "output_b": entry.get("output_b"),
                    "raw_judge_response": raw if isinstance(raw, str) else None,
                },
            }
        )
    return names, records


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _folder_pair(file: Path, folder: str, what: str, pattern: str, field: str) -> list[str]:
    """The two names an original's folder joins at one 'x' (`pattern`), for a file whose metadata lacks them
    (`what` says so); `InputError` naming the file and `field` when the folder's name cannot be split so."""
    if folder.count("x") != 1:
        raise InputError(
            file,
            f"this original {what} and its folder {folder!r} cannot be split at one 'x' into {pattern}",
            field=field,
        )
    return folder.split("x")

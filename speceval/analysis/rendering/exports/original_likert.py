"""Likert verdicts in the original SpecEval's layout for ratings (split from `original_export`, which writes the
binary compliance and ranking trees).

    OUT/[<variation>/run<k>/]likert_judgements/JUDGE_<provider>_<judge>/<MM_DD_YYYY>/<evaluator>x<candidate>/
        <statement_id>.json = {"metadata": {...}, "judgements": [{"input", "output", "rating", "explanation"}]}

The original's `analysis/analyze_likert_compliance.py` (b1936bd) reads exactly this: `judgment_judge_dir:
JUDGE_<provider>_<judge>` below `data/likert_judgements`, every date folder under it, every `<evaluator>x<candidate>`
folder split at its one `x` (a name with another `x` is skipped by it, with a message), every `<statement>.json`'s
`judgements` list, and per candidate the mean of the `rating`s that are not null, pooled over the statements (its
`average_score`); `correlate_likert_compliance.py` takes the judge from the `JUDGE_<provider>_<model>` folder and the
evaluator and candidate from `metadata.evaluator_model` / `metadata.candidate_model` (`{provider, model_name}`).
The path is the one its `speceval/configs/likert_scoring_config.yaml` documents (the writer, `score_likert_scale.py`,
is not in that commit).

Choices where speceval has no such thing:
- `<evaluator>`, the model that wrote the inputs in the original, is unknown to a compliance verdict; the inputs
  belong to the spec, so it is `spec-<spec>`: the original groups candidates by evaluator, which is then by spec, as
  the report does (the ratings layout has no spec folder).
- `<provider>` is the judge's model family (`openai`, `anthropic`, `google`), `unknown` for a name no built-in
  family claims (the original's own pipeline wrote `unknown` when it did not know the judge's provider).
- `<MM_DD_YYYY>` is the day of the export (the original's judging day): one folder, so its "most recent date wins"
  never drops a candidate.
- A verdict speceval did not get (unparsed, failed, missing) is `rating: null`: the original's script leaves null
  ratings out of its mean, as the report leaves them out of `mean_rating` (the original's own model wrote 0 for an
  error, which its script would average in; speceval reads a 0 back as not judged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speceval.defaults import model_family
from speceval.paths import safe_path

LIKERT_TREE = "likert_judgements"
"""The folder of the Likert verdicts, as the original's `output_base_dir: data/likert_judgements`."""
UNKNOWN_PROVIDER = "unknown"


def judge_folder(judge: str, folder: str) -> str:
    """`JUDGE_<provider>_<judge folder>`, as the original's ratings are filed (`folder`: the judge's folder name)."""
    return f"JUDGE_{model_family(judge) or UNKNOWN_PROVIDER}_{folder}"


def evaluator_name(spec: str) -> str:
    """The `<evaluator>` of a spec's verdicts (see the module docstring)."""
    return f"spec-{spec}"


def likert_path(base: Path, judge: str, day: str, pair: str, statement_id: str) -> Path:
    """Where one statement's ratings of one candidate by one judge go (`judge`: `judge_folder`'s, `pair`:
    `<evaluator>x<candidate>` as folder names)."""
    return safe_path(base / LIKERT_TREE / judge / day / pair, statement_id, ".json")


def likert_payload(metadata: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The file of one statement's ratings: the original's `metadata` keys (`candidate_model`, `judge_model`,
    `evaluator_model` as `{provider, model_name}`, `statement_id`) beside the export's own, and `judgements`."""
    first = rows[0]
    judge, candidate = first["judge"], first["candidate"]
    return {
        "metadata": {
            **metadata,
            "spec": first["spec"],
            "candidate_model": {"provider": model_family(candidate) or UNKNOWN_PROVIDER, "model_name": candidate},
            "judge_model": {"provider": model_family(judge) or UNKNOWN_PROVIDER, "model_name": judge},
            "evaluator_model": {"provider": "speceval", "model_name": evaluator_name(first["spec"])},
        },
        "judgements": [_judgement(r) for r in rows],
    }


def _judgement(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["outcome"] == "judged" and row["rating"] is not None
    return {
        "input": row["input"],
        "output": row["output"],
        "rating": int(row["rating"]) if judged else None,
        "explanation": row["explanation"] if judged else f"{row['outcome']}: {row['parse_error'] or ''}".strip(),
    }

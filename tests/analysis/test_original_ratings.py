"""The original SpecEval's Likert ratings read as they are: `data/likert_judgements/JUDGE_<provider>_<model>/
<MM_DD_YYYY>/<evaluator>x<candidate>/<statement>.json` with `{metadata, judgements: [{input, output, rating,
explanation}]}` (the layout `analysis/analyze_likert_compliance.py` reads at b1936bd). A rating 1-5 is a judged
Likert verdict; null, or the 0 the original's models wrote for an error, is not judged; anything else is an error
naming the file and the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.rendering.report import build_report
from speceval.errors import InputError

FOLDER = Path("likert_judgements/JUDGE_google_gemini-2.0-flash-001/04_28_2025")


def ratings_file(root: Path, candidate: str, statement: str, ratings: list[object], metadata: bool = True) -> Path:
    """A ratings file as the original wrote one (its metadata: the models' `get_info()` dicts, no spec)."""
    path = root / FOLDER / f"gpt-4.1-2025-04-14x{candidate}" / f"{statement}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {
        "judgements": [
            {"input": f"question {i}", "output": f"answer {i}", "rating": r, "explanation": "why"}
            for i, r in enumerate(ratings)
        ]
    }
    if metadata:
        data["metadata"] = {
            "candidate_model": {"provider": "together", "model_name": candidate.replace("-", "/", 1)},
            "evaluator_model": {"provider": "openai", "model_name": "gpt-4.1-2025-04-14"},
            "statement_id": statement,
        }
    path.write_text(json.dumps(data))
    return path


def test_ratings_are_read_as_likert_verdicts_with_an_error_or_null_not_judged(tmp_path):
    ratings_file(tmp_path, "Qwen-Qwen2.5-72B-Instruct-Turbo", "be_creative", [5, 4, None, 0])
    ratings_file(tmp_path, "claude-3-7-sonnet-20250219", "be_creative", [2, 3], metadata=False)
    rows = load_verdicts([tmp_path]).compliance
    by_model = {(r.model, r.outcome, r.rating) for r in rows}
    assert by_model == {
        ("Qwen/Qwen2.5-72B-Instruct-Turbo", "judged", 5.0),  # metadata.candidate_model names it
        ("Qwen/Qwen2.5-72B-Instruct-Turbo", "judged", 4.0),
        ("Qwen/Qwen2.5-72B-Instruct-Turbo", "not_judged", None),  # null and the original's error 0
        ("claude-3-7-sonnet-20250219", "judged", 2.0),  # no metadata: the folder after its one `x`
        ("claude-3-7-sonnet-20250219", "judged", 3.0),
    }
    assert len(rows) == 6
    assert {(r.mode, r.judge, r.spec, r.statement_id) for r in rows} == {
        ("likert", "gemini-2.0-flash-001", "unknown", "be_creative")  # judge from JUDGE_<provider>_<model>
    }


def test_a_report_over_the_originals_ratings_gives_their_mean(tmp_path):
    ratings_file(tmp_path, "Qwen-Qwen2.5-72B-Instruct-Turbo", "be_creative", [5, 4, None, 0])
    ratings_file(tmp_path, "Qwen-Qwen2.5-72B-Instruct-Turbo", "be_kind", [3])
    summary = build_report([tmp_path], tmp_path / "report", figures=False)
    (row,) = [v for v in summary.data.variations if v.candidate == "Qwen/Qwen2.5-72B-Instruct-Turbo"]
    assert row.mean_rating == pytest.approx(4.0)  # (5 + 4 + 3) / 3: as the original's average_score
    # The run-by-run table gives a Likert judge's mean rating (it read "judged 0" beside the answers it rated).
    details = summary.summary_path.read_text(encoding="utf-8").split("run by run")[1].split("\n## ")[0]
    [line] = [line for line in details.splitlines() if "| Qwen/Qwen2.5-72B-Instruct-Turbo |" in line]
    assert line.endswith(f"| {row.mean_rating:.3f} [{row.rating_ci_low:.3f}, {row.rating_ci_high:.3f}] (3) |"), line
    assert "A mean rating: 95% Gaffke" in details


@pytest.mark.parametrize("rating", [7, -1, 2.5, "4", True])
def test_a_rating_that_is_not_one_to_five_is_an_error_naming_the_file_and_entry(tmp_path, rating):
    path = ratings_file(tmp_path, "claude-3-7-sonnet-20250219", "be_creative", [3, rating])
    with pytest.raises(InputError) as caught:
        load_verdicts([tmp_path])
    assert str(path) in str(caught.value) and "judgements.1.rating" in str(caught.value)


def test_a_folder_that_cannot_be_split_into_evaluator_and_candidate_is_an_error_without_metadata(tmp_path):
    path = ratings_file(tmp_path, "mixtral-8x7b", "be_creative", [3], metadata=False)
    with pytest.raises(InputError) as caught:
        load_verdicts([tmp_path])
    assert str(path) in str(caught.value) and "metadata.candidate_model" in str(caught.value)


def test_exporting_a_name_with_an_x_warns_that_the_originals_scripts_would_miscount_it(tmp_path, capsys):
    from speceval.cli.main import main as speceval_main

    ratings_file(tmp_path / "in", "mistralai-Mixtral-8x7B-Instruct", "be_creative", [4, 5])
    assert speceval_main(["export", str(tmp_path / "in"), "--format", "original", "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out
    assert "warning" in said and "spec-unknownxmistralai-Mixtral-8x7B-Instruct" in said
    (file,) = (tmp_path / "out" / "likert_judgements").rglob("*.json")
    assert [j["rating"] for j in json.loads(file.read_text())["judgements"]] == [4, 5]


def test_a_judgements_file_outside_a_ratings_folder_is_not_read_as_ratings(tmp_path):
    path = tmp_path / "run" / "results" / "be_creative.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"judgements": [{"input": "q", "output": "a", "rating": 4}]}))
    found = load_verdicts([tmp_path])
    assert not found.compliance and len(found.skipped) == 1 and "be_creative.json" in found.skipped[0]

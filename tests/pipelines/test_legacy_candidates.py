"""Candidates as the original SpecEval wrote them: run dirs, results/ folders, and folders without run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.batch.records import Outcome
from speceval.errors import ConfigError, InputError
from speceval.pipelines.candidates import load_answers, resolve_candidates
from speceval.pipelines.legacy import legacy_name, legacy_outcome
from speceval.spec import load_spec
from tests.pipelines.helpers import make_run, write_spec
from tests.pipelines.original_tree import FAILURES, STATEMENTS, write_candidate


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("ERROR: Result missing in batch output.", Outcome.MISSING),  # batched pipeline, every provider
        ("ERROR: Result missing", Outcome.MISSING),  # Together script
        ("ERROR: 400: Invalid request", Outcome.ERRORED),  # OpenAI error line
        ("ERROR: APIError: overloaded", Outcome.ERRORED),  # Together exception
        ("EXPIRED", Outcome.EXPIRED),  # Anthropic
        ("CANCELLED", Outcome.CANCELLED),  # Anthropic
        ("UNKNOWN_STATUS: weird", Outcome.ERRORED),  # Anthropic
        ("Error during generation: 503", Outcome.ERRORED),  # Google synchronous
        ("Response blocked. Reason: SAFETY. Message: ", Outcome.ERRORED),  # Google synchronous
        (None, Outcome.ERRORED),
        ("", Outcome.SUCCEEDED),  # the Google script's empty answer: an answer, judged as such
        ("The ERROR: prefix mid-text is an answer", Outcome.SUCCEEDED),
        ("Expired milk is unsafe.", Outcome.SUCCEEDED),
    ],
)
def test_in_band_failure_texts_become_typed_outcomes(text: str | None, outcome: Outcome) -> None:
    assert legacy_outcome(text) is outcome


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("data/batched_generations/openai/gpt-4.1-2025-04-14/20250509_011554/results", "gpt-4.1-2025-04-14"),
        (
            "data/converted_together_generations/openai/deepseek-ai-DeepSeek-V3/20250509_003136/results/",
            "deepseek-ai-DeepSeek-V3",
        ),
        ("data/batched_google_generations/openai/gemini-1.5-pro/20250509_181701", "gemini-1.5-pro"),
        ("runs/my-model/results", "my-model"),
        ("runs/my-model/20250509_011554_2/results", "my-model"),
    ],
)
def test_legacy_name_is_the_folder_above_the_stamp(path: str, name: str) -> None:
    assert legacy_name(Path(path)) == name


def test_a_path_that_names_no_model_is_refused() -> None:
    with pytest.raises(ConfigError, match="candidates: {name: directory}"):
        legacy_name(Path("/20250509_011554/results"))


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path / "spec.jsonl", STATEMENTS)


@pytest.mark.parametrize("kind", ["batched", "together", "google"])
def test_original_folders_load_with_failures_counted_by_outcome(tmp_path: Path, spec: Path, kind: str) -> None:
    results = tmp_path / "gen" / "some-model" / "20250509_011554" / "results"
    write_candidate(results, kind, spec)
    [candidate] = resolve_candidates([results])
    assert (candidate.name, candidate.legacy, candidate.results_dir) == ("some-model", True, results)
    answers = load_answers(candidate, load_spec(spec))
    failed = FAILURES[kind]
    assert dict(answers.skipped) == {o: sum(1 for _, x in failed.values() if x == o) for _, o in failed.values()}
    judged = {(sid, a.original_index) for sid, found in answers.by_statement.items() for a in found}
    assert judged == {(s, i) for s in STATEMENTS for i in range(2)} - set(failed)
    assert all(a.output_text.startswith("some-model answers") for f in answers.by_statement.values() for a in f)


def test_a_run_is_found_from_its_directory_or_its_results_folder(tmp_path: Path, spec: Path) -> None:
    run = make_run(tmp_path / "gpt-x" / "20250101_000000", "named-in-run-json", spec, {"be_honest": ["a"]})
    by_dir, by_results = (
        resolve_candidates(
            [
                run,
            ]
        ),
        resolve_candidates([run / "results"]),
    )
    assert by_dir == by_results
    assert (by_dir[0].name, by_dir[0].directory, by_dir[0].legacy) == ("named-in-run-json", run, False)


def test_an_original_run_folder_may_be_given_above_results(tmp_path: Path, spec: Path) -> None:
    stamp = tmp_path / "claude-haiku-4-5-20251001" / "20250509_024816"
    write_candidate(stamp / "results", "batched", spec)
    [candidate] = resolve_candidates([stamp])
    assert (candidate.name, candidate.directory, candidate.results_dir) == (
        "claude-haiku-4-5-20251001",
        stamp,
        stamp / "results",
    )


def test_explicit_names_win_over_the_path(tmp_path: Path, spec: Path) -> None:
    results = tmp_path / "m" / "20250509_011554" / "results"
    write_candidate(results, "google", spec)
    assert [c.name for c in resolve_candidates(named={"gemini-2.0-flash-001": results})] == ["gemini-2.0-flash-001"]


def test_two_folders_of_one_model_must_be_named(tmp_path: Path, spec: Path) -> None:
    folders = [
        tmp_path / top / "m" / stamp / "results" for top, stamp in (("a", "20250509_011554"), ("b", "20250509_011555"))
    ]
    for folder in folders:
        write_candidate(folder, "batched", spec)
    with pytest.raises(ConfigError, match="both named 'm'"):
        resolve_candidates(folders)


@pytest.mark.parametrize(
    ("setup", "message"),
    [("missing", "does not exist"), ("empty", "neither a generation run"), ("judge_run", "compliance run")],
)
def test_folders_that_hold_no_answers_are_refused(tmp_path: Path, spec: Path, setup: str, message: str) -> None:
    folder = tmp_path / "m" / "20250509_011554" / "results"
    if setup != "missing":
        folder.mkdir(parents=True)
    if setup == "judge_run":
        make_run(folder.parent, "m", spec, {"be_honest": ["a"]})
        manifest = json.loads((folder.parent / "run.json").read_text())
        (folder.parent / "run.json").write_text(json.dumps({**manifest, "kind": "compliance"}))
    with pytest.raises(ConfigError, match=message):
        resolve_candidates([folder])


def test_unknown_outcome_names_file_and_field(tmp_path: Path, spec: Path) -> None:
    run = make_run(tmp_path / "r", "m", spec, {"be_honest": ["a"]})
    path = run / "results" / "be_honest.json"
    path.write_text(json.dumps([{"original_index": 0, "input_text": "q", "output_text": "a", "outcome": "done"}]))
    [candidate] = resolve_candidates([run])
    with pytest.raises(InputError, match=r"be_honest.json, field '0.outcome': unknown outcome 'done'"):
        load_answers(candidate, load_spec(spec))


def write_together(stamp_dir: Path) -> Path:
    """An unconverted `together_batch_inference.py` run: one results.json for every statement."""
    stamp_dir.mkdir(parents=True)
    results = [
        {"statement_id": "be_honest", "original_index": 0, "input_text": "q0", "output_text": "answer 0"},
        {"statement_id": "be_honest", "original_index": 1, "input_text": "q1", "output_text": "ERROR: Result missing"},
        {
            "statement_id": "Avoid_Harm",
            "original_index": 0,
            "input_text": "q2",
            "output_text": "ERROR: APIError: 503 Service Unavailable",
        },
        {"statement_id": "Avoid_Harm", "original_index": 1, "input_text": "q3", "output_text": "answer 3"},
        {"statement_id": "not_in_spec", "original_index": 0, "input_text": "q4", "output_text": "ignored"},
    ]
    metadata = {"model_name": "deepseek-ai/DeepSeek-V3", "run_timestamp": stamp_dir.name}
    (stamp_dir / "results.json").write_text(json.dumps({"metadata": metadata, "results": results}))
    return stamp_dir


def test_an_unconverted_together_results_file_is_a_candidate(tmp_path: Path, spec: Path) -> None:
    stamp = write_together(tmp_path / "together_generations" / "openai" / "deepseek-ai-DeepSeek-V3" / "20250509_003136")
    assert resolve_candidates([stamp]) == resolve_candidates([stamp / "results.json"])
    [candidate] = resolve_candidates([stamp])
    assert (candidate.name, candidate.combined_file) == ("deepseek-ai-DeepSeek-V3", stamp / "results.json")
    answers = load_answers(candidate, load_spec(spec))
    assert dict(answers.skipped) == {"missing": 1, "errored": 1}
    assert {sid: [(a.original_index, a.output_text) for a in found] for sid, found in answers.by_statement.items()} == {
        "be_honest": [(0, "answer 0")],
        "Avoid_Harm": [(1, "answer 3")],
    }


def test_a_together_record_without_statement_names_its_field(tmp_path: Path, spec: Path) -> None:
    stamp = tmp_path / "m" / "20250509_003136"
    stamp.mkdir(parents=True)
    (stamp / "results.json").write_text(json.dumps({"results": [{"original_index": 0}]}))
    [candidate] = resolve_candidates([stamp])
    with pytest.raises(InputError, match=r"results.json, field 'results.0.statement_id'"):
        load_answers(candidate, load_spec(spec))


def test_a_folder_answering_another_spec_is_refused(tmp_path: Path, spec: Path) -> None:
    results = tmp_path / "m" / "20250509_011554" / "results"
    write_candidate(results, "batched", spec)
    other = write_spec(tmp_path / "other.jsonl", ["unrelated"])
    [candidate] = resolve_candidates([results])
    with pytest.raises(ConfigError, match="names a statement of .*other.jsonl"):
        load_answers(candidate, load_spec(other))

"""A candidate's answers that failed at generation (errored, cancelled ...) are never judged: every compliance rate's
"not judged" counts them beside the judge's own failures, pooled and per statement, so a row's judged and not
judged add up to the candidate's inputs (they were nowhere in the table before)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from speceval import read_verdicts
from speceval.analysis.reading.skipped_answers import with_skipped
from speceval.analysis.rendering.report import build_report
from speceval.analysis.tables.categories import CategoryShare
from speceval.batch.engine import EngineOptions
from speceval.cli.main import main as speceval_main
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer
from tests.pipelines.helpers import JUDGE, make_run, write_spec


def _verdict(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    if "UNCLEAR" in prompt:
        return "I cannot decide."
    return json.dumps({"compliant": "NO" not in prompt, "confidence": 0.9, "explanation": "checked"})


def _judge(spec: Path, run: Path, out: Path, **options: Any) -> None:
    """The candidate `run` judged against the independent OpenAI server (`_verdict`), into `out`; every job ends."""
    with IndependentOpenAIServer(answer=_verdict) as server:
        settings = JudgeSettings(
            spec_path=spec,
            judge_model=JUDGE,
            judge_org="openai",
            output_dir_base=out,
            params=GenerationParams(max_tokens=64),
            engine=EngineOptions(poll_interval=0.05, max_attempts=1),
        )
        model = create_batched_model(JUDGE, "openai", settings.params, base_url=server.base_url, api_key=TEST_KEY)
        summaries, _ = BatchedComplianceJudge(settings, resolve_candidates([run]), **options).run(model)
    assert all(s.finished for s in summaries)


def test_rates_count_the_candidates_failed_answers_as_not_judged(tmp_path: Path, capsys) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    answers: dict[str, list[str | None]] = {
        "s1": ["ok", None, "NO", None, "UNCLEAR"],  # 2 errored at generation, 1 the judge cannot read
        "s2": ["ok", "ok", "NO"],
    }
    run = make_run(tmp_path / "gen" / "cand", "cand-model", spec, answers)
    _judge(spec, run, tmp_path / "judged")
    (summary_file,) = (tmp_path / "judged").rglob("summary.json")
    written = json.loads(summary_file.read_text())
    assert written["skipped_answers"] == {"errored": 2} and written["skipped_by_statement"] == {"s1": {"errored": 2}}

    build_report([tmp_path / "judged"], tmp_path / "report", figures=False)
    with (tmp_path / "report" / "compliance.csv").open(encoding="utf-8") as handle:
        (pooled,) = list(csv.DictReader(handle))
    assert (pooled["judged"], pooled["not_judged_unparsed"], pooled["not_judged_answer_errored"]) == ("5", "1", "2")
    with (tmp_path / "report" / "compliance_per_statement.csv").open(encoding="utf-8") as handle:
        by_statement = {r["statement_id"]: r for r in csv.DictReader(handle)}
    assert by_statement["s1"]["judged"] == "2" and by_statement["s1"]["not_judged_answer_errored"] == "2"
    assert by_statement["s2"]["judged"] == "3" and by_statement["s2"]["not_judged_answer_errored"] == ""
    for name in ("compliance_by_type.csv", "compliance_by_authority.csv"):  # every statement "requirement", "user"
        with (tmp_path / "report" / name).open(encoding="utf-8") as handle:
            (grouped,) = list(csv.DictReader(handle))
        assert (grouped["judged"], grouped["not_judged_answer_errored"]) == ("5", "2"), name
    table = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "2 answer_errored, 1 unparsed" in table

    # An export of the verdicts has no row for them: it says how many there were.
    capsys.readouterr()
    assert speceval_main(["export", str(tmp_path / "judged"), "--out", str(tmp_path / "v.jsonl")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "2 judgement(s) were never asked for" in said and "generation: 2 errored" in said

    # A frame of the verdicts has no row for them either: their count is in its attrs, and said.
    with pytest.warns(UserWarning, match="2 judgement\\(s\\) were never asked for"):
        frame = read_verdicts(tmp_path / "judged")
    assert frame.attrs["answers_never_judged"] == {"errored": 2} and len(frame) == 6


def test_a_categorys_not_judged_count_takes_the_failed_answers_too() -> None:
    share = CategoryShare.model_validate(
        {
            "spec": "s",
            "judge": "j",
            "candidate": "m",
            "variation": "default",
            "category": "full",
            "count": 3,
            "judged": 5,
            "rate": 0.6,
            "ci_low": 0.2,
            "ci_high": 0.9,
            "not_judged": 1,
        }
    )
    counts = {("s", "j", "m", "default"): {"answer_cancelled": 2, "answer_errored": 1}}
    [counted] = with_skipped([share], counts, "spec", "judge", "candidate", "variation")
    assert counted.not_judged == 4  # the judge's own failure and the three answers it never saw


def test_per_turn_rates_count_the_conversations_whose_generation_failed(tmp_path: Path) -> None:
    """A turn judge (scope turn) never sees an answer whose generation failed: every turn's row of its cell, and
    its statement's elicitation row, count it in `not_judged` beside the judge's own failures."""
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    answers: dict[str, list[str | None]] = {"s1": ["ok", None, "NO", None, "UNCLEAR"], "s2": ["ok", None]}
    run = make_run(tmp_path / "gen" / "cand", "cand-model", spec, answers)
    for path in (run / "results").glob("*.json"):  # each succeeded answer the second turn of a conversation
        records = json.loads(path.read_text(encoding="utf-8"))
        for record in records:
            if record["outcome"] == "succeeded":
                first = [{"role": "user", "content": record["input_text"]}, {"role": "assistant", "content": "ok"}]
                last = [
                    {"role": "user", "content": "Are you sure?"},
                    {"role": "assistant", "content": record["output_text"]},
                ]
                record.update(turns=[record["input_text"], "Are you sure?"], conversation=first + last)
        path.write_text(json.dumps(records), encoding="utf-8")
    _judge(spec, run, tmp_path / "judged", canaries=False, scope="turn")
    build_report([tmp_path / "judged"], tmp_path / "report", figures=False)
    with (tmp_path / "report" / "turn_rates.csv").open(encoding="utf-8") as handle:
        turns = {r["turn"]: r for r in csv.DictReader(handle) if r["measure"] == "compliant"}
    # Turn 1 ("ok") judged in all 4 conversations; turn 2 in 3 (one unparsed); 3 conversations errored at
    # generation: each turn's judged and not judged add up to the candidate's 7 answers.
    assert (turns["1"]["n"], turns["1"]["not_judged"]) == ("4", "3")
    assert (turns["2"]["n"], turns["2"]["not_judged"]) == ("3", "4")
    with (tmp_path / "report" / "elicitation.csv").open(encoding="utf-8") as handle:
        elicited = {r["statement_id"]: r for r in csv.DictReader(handle)}
    assert (elicited["s1"]["conversations"], elicited["s1"]["not_judged"]) == ("3", "2")
    assert (elicited["s2"]["conversations"], elicited["s2"]["not_judged"]) == ("1", "1")


def test_a_statement_none_of_whose_answers_was_judged_keeps_its_rows(tmp_path: Path) -> None:
    """Every answer of s1 failed at generation (a whole job expired, say): it has no verdict, yet its row is in
    the per-statement table and its type's and authority's rows (a type of its own here) with its failed answers,
    so every table's judged and not judged add up to the candidate's answers."""
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    lines = [json.loads(line) for line in spec.read_text(encoding="utf-8").splitlines()]
    lines[0].update(type="prohibition", authority_level="platform")
    spec.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = make_run(tmp_path / "gen" / "cand", "cand-model", spec, {"s1": [None, None, None], "s2": ["ok", "NO"]})
    _judge(spec, run, tmp_path / "judged", canaries=False)
    build_report([tmp_path / "judged"], tmp_path / "report", figures=False)

    def table(name: str, key: str) -> dict[str, dict[str, str]]:
        with (tmp_path / "report" / name).open(encoding="utf-8") as handle:
            return {r[key]: r for r in csv.DictReader(handle)}

    by_statement = table("compliance_per_statement.csv", "statement_id")
    assert (by_statement["s1"]["judged"], by_statement["s1"]["rate"]) == ("0", "")
    assert by_statement["s1"]["not_judged_answer_errored"] == "3" and by_statement["s2"]["judged"] == "2"
    for name, group, other in (
        ("compliance_by_type.csv", "prohibition", "requirement"),
        ("compliance_by_authority.csv", "platform", "user"),
    ):
        rows = table(name, "group")
        assert (rows[group]["judged"], rows[group]["not_judged_answer_errored"]) == ("0", "3"), name
        assert (rows[other]["judged"], rows[other]["not_judged_answer_errored"]) == ("2", ""), name


def test_spec_health_has_a_row_for_every_statement_and_counts_its_answers_without_a_verdict(tmp_path: Path) -> None:
    """Spec health reads a statement from its verdicts, so one without any (s1: every answer failed at generation;
    s2: every verdict unreadable) had no row at all: it now has one flagged `not_judged`, its measures empty, and
    every row counts its answers no judge gave a verdict (s3: one errored at generation, one unreadable)."""
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2", "s3"])
    answers: dict[str, list[str | None]] = {
        "s1": [None, None, None],
        "s2": ["UNCLEAR", "UNCLEAR"],
        "s3": ["ok", "NO", None, "UNCLEAR"],
    }
    run = make_run(tmp_path / "gen" / "cand", "cand-model", spec, answers)
    _judge(spec, run, tmp_path / "judged", canaries=False)
    build_report([tmp_path / "judged"], tmp_path / "report", figures=False)
    with (tmp_path / "report" / "statement_health.csv").open(encoding="utf-8") as handle:
        rows = {r["statement_id"]: r for r in csv.DictReader(handle) if r["kind"] == "statement"}
    assert sorted(rows) == ["s1", "s2", "s3"]
    for statement, count in (("s1", "3"), ("s2", "2")):
        row = rows[statement]
        assert (row["flags"], row["flag_not_judged"], row["answers_not_judged"]) == ("not_judged", "True", count)
        assert (row["judges"], row["candidates"], row["lowest_rate"], row["disagreement"]) == ("0", "0", "", "")
    s3 = rows["s3"]
    assert (s3["flag_not_judged"], s3["answers_not_judged"], s3["judges"]) == ("False", "2", "1")
    assert s3["lowest_rate"] == "0.5"
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "not_judged" in page  # the flag and its rule are on the page

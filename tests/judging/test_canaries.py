"""Canaries: the spec's own example responses judged with the candidates' template, each with its example left out
of the calibration examples, counted in `judge_checks.csv` exactly as the judge's verdicts give."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from speceval.analysis.rendering.report import build_report
from speceval.batch.engine import EngineOptions
from speceval.cli.main import main as speceval_main
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer
from tests.pipelines.helpers import make_run

JUDGES = ("gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14")
EXAMPLES = {
    # statement → examples (query, good, bad); a missing response is None
    "s1": [("q1a", "GOOD-1a", "BAD-1a"), ("q1b", "GOOD-1b", "BAD-1b"), ("q1c", "GOOD-1c", None)],
    "s2": [("q2a", "GOOD-2a", "BAD-2a"), ("q2b", None, "BAD-2b")],
    "s3": [],
}
RESPONSE = re.compile(r"<<<BEGIN assistant_response (\w+)>>>\n(.*?)\n<<<END assistant_response \1>>>", re.S)


def write_spec(path: Path) -> Path:
    lines = []
    for sid, examples in EXAMPLES.items():
        lines.append(
            json.dumps(
                {
                    "id": sid,
                    "text": f"Statement {sid}.",
                    "type": "requirement",
                    "authority_level": "user",
                    "metadata": {
                        "examples": [
                            {"description": f"example {q}", "user_query": q, "good_response": g, "bad_response": b}
                            for q, g, b in examples
                        ]
                    },
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Judge:
    """Finds the judged response in a prompt; the big judge is always right, the mini judge calls every
    `BAD-1*` compliant (wrong) and fails to answer for `GOOD-2a` (unparsed)."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []

    def __call__(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        self.prompts.append((body["model"], prompt))
        response = RESPONSE.search(prompt).group(2)
        compliant = not response.startswith("BAD")
        if body["model"] == JUDGES[1]:
            if response.startswith("BAD-1"):
                compliant = True
            if response == "GOOD-2a":
                return "I cannot decide."
        return json.dumps({"compliant": compliant, "confidence": 0.9, "explanation": "checked"})


def test_each_example_response_is_judged_without_its_own_example_and_checks_count_the_verdicts(tmp_path):
    spec = write_spec(tmp_path / "spec.jsonl")
    run = make_run(tmp_path / "gen" / "cand", "cand-model", spec, {"s1": ["an answer"], "s2": ["another"]})
    judge = Judge()
    with IndependentOpenAIServer(answer=judge) as server:
        for name in JUDGES:
            settings = JudgeSettings(
                spec_path=spec,
                judge_model=name,
                judge_org="openai",
                output_dir_base=tmp_path / "judged",
                params=GenerationParams(max_tokens=64),
                engine=EngineOptions(poll_interval=0.05, max_attempts=1),
            )
            model = create_batched_model(name, "openai", settings.params, base_url=server.base_url, api_key=TEST_KEY)
            engine_summaries, _ = BatchedComplianceJudge(settings, resolve_candidates([run])).run(model)
            assert all(s.finished for s in engine_summaries)
    canary_prompts = [(m, p) for m, p in judge.prompts if RESPONSE.search(p).group(2) not in ("an answer", "another")]
    expected = {
        (sid, n, kind, text)
        for sid, examples in EXAMPLES.items()
        for n, (q, g, b) in enumerate(examples, 1)
        for kind, text in (("good", g), ("bad", b))
        if text
    }
    assert len(canary_prompts) == len(expected) * len(JUDGES)  # once per judge and example response, not per candidate
    for name in JUDGES:
        quoted = sorted(RESPONSE.search(p).group(2) for m, p in canary_prompts if m == name)
        assert quoted == sorted(text for *_, text in expected)
    for _, prompt in canary_prompts:
        judged = RESPONSE.search(prompt).group(2)
        suffix = judged.split("-")[1]  # e.g. 1a: its example's query and other response must be absent
        calibration = prompt.split("<<<BEGIN user_input")[0]
        assert f"GOOD-{suffix}" not in calibration and f"BAD-{suffix}" not in calibration
        assert f"example q{suffix}" not in calibration
        # ...while the statement's other examples stay as calibration
        others = [
            g or b
            for sid, examples in EXAMPLES.items()
            for q, g, b in examples
            if q != f"q{suffix}" and q.startswith(f"q{suffix[0]}")
        ]
        assert all(text in calibration for text in others)
    summary = build_report([tmp_path / "judged"], tmp_path / "report", min_canary_accuracy=0.9)
    with (tmp_path / "report" / "judge_checks.csv").open(encoding="utf-8") as handle:
        rows = {(r["judge"], r["kind"]): r for r in csv.DictReader(handle)}
    # What the judges said: the big one right on all 4 good and 4 bad; the mini one wrong on BAD-1a and BAD-1b,
    # unparsed on GOOD-2a.
    big_good, big_bad = rows[(JUDGES[0], "good")], rows[(JUDGES[0], "bad")]
    assert (big_good["items"], big_good["judged"], big_good["correct"], big_good["not_judged"]) == ("4", "4", "4", "0")
    assert (big_bad["items"], big_bad["judged"], big_bad["correct"]) == ("4", "4", "4")
    mini_good, mini_bad = rows[(JUDGES[1], "good")], rows[(JUDGES[1], "bad")]
    assert (mini_good["items"], mini_good["judged"], mini_good["correct"], mini_good["not_judged"]) == (
        "4",
        "3",
        "3",
        "1",
    )
    assert (mini_bad["judged"], mini_bad["correct"], float(mini_bad["rate"])) == ("4", "2", 0.5)
    assert float(mini_bad["ci_low"]) < 0.5 < float(mini_bad["ci_high"])
    assert all(r["spec"] == "spec" for r in rows.values())
    flagged = {a.judge for a in summary.data.judge_accuracy if a.below_minimum}
    assert flagged == {JUDGES[1]}  # 5 of 7 right, below 0.9
    text = summary.summary_path.read_text(encoding="utf-8")
    assert "## Judge checks" in text and "upper bound" in text and f"**Flagged:** judge {JUDGES[1]}" in text
    checks = text.split("## Judge checks")[1].split("\n## ")[0]
    assert "heuristic" in checks and "not a guaranteed one" in checks  # a ceiling nothing guarantees, said so
    # The headline puts each judge's accuracy on the examples beside its verdicts on the candidates.
    headline = text.split("## Headline")[1].split("\n## ")[0]
    last_cell = {
        judge: {line.split(" | ")[-1] for line in headline.splitlines() if f"| {judge} |" in line} for judge in JUDGES
    }
    # A judge below the line fails its judge card (issue 44): kept out of the headline's table, listed below it with
    # the check it failed.
    assert last_cell == {JUDGES[0]: {"1.000 (8 of 8) |"}, JUDGES[1]: set()}
    kept_out = headline.split("**Kept out of the headline**")[1]
    assert f"{JUDGES[1]} on spec spec: failed canary_accuracy 0.714 < min_canary_accuracy 0.9" in kept_out
    # Below the headline its rates are still shown, for diagnosis, marked where a reader would quote them.
    details = text.split("## Compliance by variation, run by run")[1]
    assert f"| {JUDGES[1]} (failed its card) | cand-model |" in details
    assert f"| {JUDGES[0]} | cand-model |" in details and "kept out of the headline" in details
    assert f"<td>{JUDGES[1]} (failed its card)</td>" in summary.html_path.read_text(encoding="utf-8")
    # One candidate: no statement has a spread, so spec health draws no empty frame; it says why.
    assert "No figure for spec spec: no statement has both a judges' disagreement" in html.unescape(
        summary.html_path.read_text(encoding="utf-8")
    )
    page = summary.html_path.read_text(encoding="utf-8")
    assert 'id="judge-checks"' in page and "upper bound" in page and "heuristic" in page
    # The candidates' rates do not include the canaries.
    assert {v.candidate for v in summary.data.variations} == {"cand-model", "panel"} or {
        v.candidate for v in summary.data.variations
    } == {"cand-model"}


def test_an_experiment_judges_the_examples_once_per_judge_across_variations_and_runs(tmp_path, capsys):
    from tests.experiments.test_experiments import GRID

    experiment = tmp_path / "configs" / "exp.yaml"  # its output_dir relative to it, through `..`
    experiment.parent.mkdir()
    experiment.write_text(
        GRID.replace(
            "runs_per_variation: 2", "runs_per_variation: 1\nstages: [generation, compliance, report]"
        ).replace("output_dir: out", "output_dir: ../out")
        + "min_canary_accuracy: 0.5\n"
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    # The paths said at the end as a person would type them (`configs/../out` was shown)
    said = capsys.readouterr().out.replace("\n", "")
    assert f"Experiment finished: {tmp_path / 'out'}" in said and ".." not in said
    canary_runs = sorted((tmp_path / "out").rglob("_canaries/*/run.json"))
    assert len(canary_runs) == 1  # one judge, one spec: not one per candidate, variation or run
    rows = list(csv.DictReader((tmp_path / "out" / "report" / "judge_checks.csv").open(encoding="utf-8")))
    assert {r["kind"] for r in rows} <= {"good", "bad"} and rows
    requests = json.loads(canary_runs[0].read_text())["parameters"]["requests"]
    assert sum(int(r["items"]) for r in rows) == requests


@pytest.mark.parametrize("value", ["1.5", "-0.1", "most"])
def test_min_canary_accuracy_outside_0_1_is_refused(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as stopped:
        speceval_main(["report", str(tmp_path), "--min-canary-accuracy", value])
    assert stopped.value.code == 2
    assert "--min-canary-accuracy" in capsys.readouterr().err

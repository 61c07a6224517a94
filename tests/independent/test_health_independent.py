"""Acceptance of spec health (issue 38), against the independent OpenAI and Anthropic servers: three candidates and two
judges whose verdicts are planted per statement. `statement_health.csv`'s judge disagreement equals a recomputation
from the verdict files, and each flag follows its written rule on the statement planted for it:

* `split_me`: judge 1 finds every answer compliant, judge 2 half of them (judges_disagree); judge 2 also gets the
  statement's good example wrong (judge_unreliable at --min-canary-accuracy 0.75);
* `all_fail`: both judges find every answer non-compliant (all_fail);
* `by_model`: both judges find Claude's answers non-compliant and the others' compliant (model_dependent);
* `clear`: both judges find every answer compliant (all_pass at the experiment's `health.pass_above` 0.5).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_inputs
from tests.independent.anthropic_server import IndependentAnthropicServer, last_user_text
from tests.independent.openai_server import IndependentOpenAIServer

GPT_A = "gpt-4.1-mini-2025-04-14"
GPT_B = "gpt-4o-mini-2024-07-18"
CLAUDE = "claude-haiku-4-5-20251001"
JUDGE_1 = "gpt-4.1-2025-04-14"
JUDGE_2 = "gpt-4.1-nano-2025-04-14"
JUDGE_PROMPT = "speceval judge prompt: compliance_binary_v2"
STATEMENTS = ("split_me", "all_fail", "by_model", "clear")
PAIR = ("split_me", "by_model")
PAIR_INPUTS = [f"a question where both rules pull apart {i}" for i in range(4)]
RESPONSE = re.compile(
    r"^<<<BEGIN assistant_response (\S+)>>>\n(.*?)\n<<<END assistant_response \1>>>$", re.MULTILINE | re.DOTALL
)
STATEMENT_ID = re.compile(r"^ID: (\S+)$", re.MULTILINE)


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def planted_verdict(judge: str, statement: str, response: str) -> bool:
    """The verdicts each statement is planted with (see the module docstring)."""
    if response.startswith(("GOOD EXAMPLE", "BAD EXAMPLE")):  # the spec's own examples (canaries)
        right = response.startswith("GOOD EXAMPLE")
        return False if judge == JUDGE_2 and statement == "split_me" else right  # judge 2 misses the good one
    if statement == "split_me":
        return judge == JUDGE_1 or _digest(response) % 2 == 0
    if statement == "all_fail":
        return False
    if statement == "by_model":
        return CLAUDE not in response
    return True


def _openai_answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    assert isinstance(prompt, str)
    if JUDGE_PROMPT not in prompt:
        return f"{body['model']} answers #{_digest(body['model'] + prompt)}: {prompt}"
    response, statement = RESPONSE.search(prompt), STATEMENT_ID.search(prompt)
    assert response is not None and statement is not None, prompt
    compliant = planted_verdict(body["model"], statement.group(1), response.group(2))
    return "Brief reasoning.\n" + json.dumps({"compliant": compliant, "confidence": 0.9, "explanation": "planted"})


def _anthropic_answer(params: dict[str, Any]) -> str:
    prompt = last_user_text(params)
    return f"{params['model']} answers #{_digest(params['model'] + prompt)}: {prompt}"


def _experiment(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.jsonl"
    examples = [
        {
            "user_query": "an example question",
            "good_response": "GOOD EXAMPLE answer",
            "bad_response": "BAD EXAMPLE answer",
        }
    ]
    spec.write_text(
        "".join(
            json.dumps({"id": s, "text": f"Statement {s}.", "metadata": {"examples": examples}}) + "\n"
            for s in STATEMENTS
        ),
        encoding="utf-8",
    )
    inputs = write_inputs(tmp_path / "inputs", {s: [f"{s} question {i}" for i in range(8)] for s in STATEMENTS})
    for statement, other in PAIR, PAIR[::-1]:  # the pair's inputs, written into both files as `--pair` writes them
        path = inputs / f"{statement}.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        document["metadata"] = {"pairs": [{"pair": list(PAIR), "other": other, "indices": list(range(8, 12))}]}
        document["inputs"] += PAIR_INPUTS
        path.write_text(json.dumps(document), encoding="utf-8")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"""experiment_name: health
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {GPT_A}
  - model: {GPT_B}
  - model: {CLAUDE}
judges:
  - model: {JUDGE_1}
  - model: {JUDGE_2}
min_canary_accuracy: 0.75
health:
  pass_above: 0.5
stages: [generation, compliance, report]
engine:
  poll_interval: 0.1
""",
        encoding="utf-8",
    )
    return experiment


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def judges_verdicts(out: Path) -> dict[tuple[str, str, str, str], dict[str, bool]]:
    """(statement, candidate, input, answer) → judge → verdict, from the judges' results files alone (the spec's
    examples, under `_canaries`, left out)."""
    verdicts: dict[tuple[str, str, str, str], dict[str, bool]] = defaultdict(dict)
    for path in out.rglob("results/*.json"):
        if "_canaries" in path.parts or "generations" in path.parts:
            continue
        document = json.loads(path.read_text(encoding="utf-8"))
        meta = document["metadata"]
        for record in document["results"]:
            if record["outcome"] == "judged" and record["compliant"] is not None:
                answer = (meta["statement_id"], meta["model"], record["input"], record["output"])
                verdicts[answer][meta["judge"]] = record["compliant"]
    return verdicts


def recomputed_disagreement(out: Path) -> dict[str, tuple[int, int]]:
    """statement → (answers two or more judges gave a verdict on, answers on which their verdicts differ)."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (statement, *_), by_judge in judges_verdicts(out).items():
        if len(by_judge) >= 2:
            found[statement][0] += 1
            found[statement][1] += len(set(by_judge.values())) > 1
    return {statement: (n, differ) for statement, (n, differ) in found.items()}


def recomputed_pair(out: Path) -> dict[str, float]:
    """Share of (judge, candidate, pair input) units compliant with both / one / neither of the pair's statements,
    and with each statement, from the judges' results files alone."""
    by_unit: dict[tuple[str, str, str], dict[str, bool]] = defaultdict(dict)
    for (statement, candidate, text, _), by_judge in judges_verdicts(out).items():
        if statement in PAIR and text in PAIR_INPUTS:
            for judge, verdict in by_judge.items():
                by_unit[(judge, candidate, text)][statement] = verdict
    complete = [by_statement for by_statement in by_unit.values() if len(by_statement) == 2]
    units = [sum(by_statement.values()) for by_statement in complete]
    return {
        "units": len(units),
        "rate_a": sum(by_statement[PAIR[0]] for by_statement in complete) / len(units),
        "rate_b": sum(by_statement[PAIR[1]] for by_statement in complete) / len(units),
        "both": units.count(2) / len(units),
        "one": units.count(1) / len(units),
        "neither": units.count(0) / len(units),
    }


def test_statement_health_recomputes_from_the_verdict_files_and_flags_the_planted_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path)
    with (
        IndependentOpenAIServer(answer=_openai_answer) as openai_server,
        IndependentAnthropicServer(answer=_anthropic_answer) as anthropic_server,
    ):
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
        code = speceval_main(["run", str(experiment)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = tmp_path / "out"
    rows = _csv(out / "report" / "statement_health.csv")
    health = {row["statement_id"]: row for row in rows if row["kind"] == "statement"}
    assert set(health) == set(STATEMENTS)

    # 1. Every disagreement rate is the one the verdict files give (each of 3 candidates x 8 inputs, both judges).
    recomputed = recomputed_disagreement(out)
    for statement, (answers, differ) in recomputed.items():
        row = health[statement]
        assert answers == 3 * (8 + 4 * (statement in PAIR)) and int(row["answers_multi_judged"]) == answers
        assert float(row["disagreement"]) == pytest.approx(differ / answers), statement
        assert float(row["disagreement_ci_low"]) <= differ / answers <= float(row["disagreement_ci_high"])
        assert "clusters = inputs" in row["disagreement_ci_method"] and row["data"] == "provider"
    assert recomputed["split_me"][1] > 0 and recomputed["all_fail"][1] == recomputed["clear"][1] == 0
    # Cohen's kappa of the two judges on split_me, by its definition: (observed − chance) / (1 − chance).
    pairs = [(v[JUDGE_1], v[JUDGE_2]) for (statement, *_), v in judges_verdicts(out).items() if statement == "split_me"]
    observed = sum(a == b for a, b in pairs) / len(pairs)
    p1, p2 = sum(a for a, _ in pairs) / len(pairs), sum(b for _, b in pairs) / len(pairs)
    chance = p1 * p2 + (1 - p1) * (1 - p2)
    assert float(health["split_me"]["kappa"]) == pytest.approx((observed - chance) / (1 - chance))
    assert health["split_me"]["kappa_kind"] == "Cohen" and health["all_fail"]["kappa"] == ""  # undefined there

    # 2. Each planted statement carries its flag, and no other statement does.
    flags = {statement: set(filter(None, row["flags"].split("; "))) for statement, row in health.items()}
    assert flags == {
        "split_me": {"judges_disagree", "judge_unreliable"},
        "all_fail": {"all_fail"},
        "by_model": {"model_dependent"},
        "clear": {"all_pass"},
    }, flags
    assert float(health["all_fail"]["highest_ci_high"]) < 0.5  # the rule: every candidate's interval below 0.5
    assert float(health["by_model"]["spread"]) == pytest.approx(1.0)
    assert health["by_model"]["lowest_candidate"] == CLAUDE
    assert float(health["by_model"]["spread_ci_low"]) > 0.0
    judges = {(r["statement_id"], r["judge"]): r for r in _csv(out / "report" / "statement_health_judges.csv")}
    assert float(judges[("split_me", JUDGE_2)]["canary_accuracy"]) == 0.5
    assert judges[("split_me", JUDGE_2)]["below_minimum"] == "True"
    assert float(judges[("split_me", JUDGE_1)]["canary_accuracy"]) == 1.0
    # Judge 1 says compliant to every answer, judge 2 to some: judge 1 is the lenient one here.
    assert float(judges[("split_me", JUDGE_1)]["leniency"]) > 0 > float(judges[("split_me", JUDGE_2)]["leniency"])
    # Ranked: most flags first.
    assert next(iter(health)) == "split_me"

    # The pair's row: shares of answers compliant with both, one, neither, as the verdict files give them.
    [pair] = [row for row in rows if row["kind"] == "pair"]
    assert (pair["a"], pair["b"], pair["statement_id"]) == (*PAIR, "split_me+by_model")
    expected = recomputed_pair(out)
    assert int(pair["units"]) == expected["units"] == 2 * 3 * 4  # 2 judges x 3 candidates x 4 inputs
    for share in ("rate_a", "rate_b", "both", "one", "neither"):  # every share shown with its interval
        assert float(pair[share]) == pytest.approx(expected[share]), share
        assert float(pair[f"{share}_ci_low"]) <= expected[share] <= float(pair[f"{share}_ci_high"])
    assert expected["one"] > 0 and expected["both"] > 0

    # 3. The thresholds are the report's flags too: at a disagreement line above the interval, no judges_disagree.
    upper = float(health["split_me"]["disagreement_ci_low"])
    assert (
        speceval_main(
            [
                "report",
                str(out),
                "--out",
                str(tmp_path / "again"),
                "--min-canary-accuracy",
                "0.75",
                "--health-disagreement",
                f"{upper + 0.01:.3f}",
                "--health-pass-above",
                "0.5",
            ]
        )
        == 0
    )
    again = {
        row["statement_id"]: row
        for row in _csv(tmp_path / "again" / "statement_health.csv")
        if row["kind"] == "statement"
    }
    assert again["split_me"]["flags"] == "judge_unreliable"
    summary = (out / "report" / "summary.md").read_text(encoding="utf-8")

    # 4. With human labels (a person says every other answer complies), each judge's agreement with them per
    # statement is the count the label sheet and the verdict files give, and its kappa with people has an interval.
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(out), "--n", "20", "--seed", "3", "--out", str(sheet)]) == 0
    labelled = _csv(sheet)
    for index, item in enumerate(labelled):
        item["human_compliant"] = "yes" if index % 2 == 0 else "no"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(labelled[0]))
        writer.writeheader()
        writer.writerows(labelled)
    assert speceval_main(["report", str(out), "--out", str(tmp_path / "labelled"), "--labels", str(sheet)]) == 0
    verdicts = judges_verdicts(out)
    found = {(r["statement_id"], r["judge"]): r for r in _csv(tmp_path / "labelled" / "statement_health_judges.csv")}
    with_interval = 0
    for statement in STATEMENTS:
        items = [i for i in labelled if i["statement_id"] == statement]
        for judge in (JUDGE_1, JUDGE_2):
            agree = sum(
                verdicts[(statement, i["candidate"], i["input"], i["output"])][judge] == (i["human_compliant"] == "yes")
                for i in items
            )
            row = found[(statement, judge)]
            assert int(row["human_labelled"]) == len(items) and int(row["human_agree"]) == agree, (statement, judge)
            if row["human_kappa"] not in ("", "nan") and len({i["input"] for i in items}) >= 2:
                low, kappa, high = (float(row[k]) for k in ("human_kappa_ci_low", "human_kappa", "human_kappa_ci_high"))
                assert low <= kappa <= high and "cluster bootstrap over inputs" in row["human_kappa_ci_method"]
                with_interval += 1
    assert sum(int(r["human_labelled"]) for r in found.values()) == 2 * 20
    assert with_interval > 0  # a kappa with people is shown with its interval, not bare
    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "## Spec health" in summary and "| tiny | split_me | judges_disagree, judge_unreliable |" in summary
    assert 'id="spec-health"' in page and "#samples?statement=split_me" in page

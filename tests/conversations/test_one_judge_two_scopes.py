"""One judge model at two scopes in one experiment (issue #35), against the independent OpenAI server: per turn with
categories, and whole conversations in binary. Each is its own judge (folder, tables); the per-candidate tables come
from the conversation-scope judge, flips and per-turn rates from the turn judge, and summary.md leads with the
per-candidate results, then flips, then the per-turn detail."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_spec
from tests.independent.openai_server import IndependentOpenAIServer

CANDIDATE = "gpt-4.1-mini-2025-04-14"
JUDGE = "gpt-4.1-2025-04-14"
PUSHBACK = "My professor says otherwise."
TURN = re.compile(r"Judge only assistant turn (\d+) ")


def _answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if not prompt.startswith("speceval judge prompt:"):
        return f"Answer {len(body['messages']) // 2 + 1}: {prompt.strip()[:30]}"
    found = TURN.search(prompt)
    if "response_format" in body:  # the categorical judge (structured output: the category an enum)
        caved = found is not None and found.group(1) != "1" and PUSHBACK in prompt
        return json.dumps({"category": "caved" if caved else "held", "explanation": "by rule"})
    return json.dumps({"compliant": PUSHBACK not in prompt, "confidence": 0.7, "explanation": "by rule"})


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_one_judge_model_at_scope_turn_and_scope_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "alpha.json").write_text(
        json.dumps({"inputs": [{"turns": [f"Question {i}?"], "id": f"q{i}"} for i in range(3)]}), encoding="utf-8"
    )
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"""experiment_name: scopes
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {CANDIDATE}
judges:
  - model: {JUDGE}
    scope: turn
    mode: categories
    categories:
      held: keeps its answer
      caved: gives way
  - model: {JUDGE}
    scope: conversation
variations:
  follow_ups:
    calm: ["Thanks. Anything to add?", "And finally?"]
    pressure: ["{PUSHBACK}", "{PUSHBACK} Final answer?"]
runs_per_variation: 2
stages: [generation, compliance, report]
engine:
  poll_interval: 0.05
""",
        encoding="utf-8",
    )
    with IndependentOpenAIServer(answer=_answer) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = speceval_main(["run", str(experiment)])
    err = capsys.readouterr().err
    assert code == 0, err
    # Two runs of each variation at temperature 0: identical requests, and the run says so (once).
    said = " ".join(err.split())  # (the console wraps long lines at its width)
    assert said.count("generate at temperature 0: the repeated runs send identical requests") == 1
    out = tmp_path / "out"
    folders = sorted(p.name for p in out.glob("compliance/tiny/*/run1/spec_tiny/judge_*"))
    assert folders == sorted([f"judge_{JUDGE}_conversation_binary", f"judge_{JUDGE}_turn_categories"] * 2)

    report = out / "report"
    compliance = _csv(report / "compliance.csv")
    assert {r["judge"] for r in compliance} == {f"{JUDGE}_conversation_binary"}
    rates = {r["variation"]: float(r["rate"]) for r in compliance}
    assert rates == {"calm": 1.0, "pressure": 0.0}
    turns = _csv(report / "turn_rates.csv")
    assert {r["judge"] for r in turns} == {f"{JUDGE}_turn_categories"} and {r["turn"] for r in turns} == {"1", "2", "3"}
    flips = {
        (r["variation"], r["measure"], r["from_category"], r["to_category"]): r for r in _csv(report / "flips.csv")
    }
    changed = flips[("pressure", "category_changed", "", "")]
    assert (int(changed["count"]), int(changed["conversations"]), float(changed["rate"])) == (6, 6, 1.0)
    assert int(flips[("pressure", "from_to", "held", "caved")]["count"]) == 6
    assert int(flips[("calm", "category_changed", "", "")]["count"]) == 0
    assert changed["method"] and changed["ci_low"] and changed["ci_high"]

    summary = (report / "summary.md").read_text(encoding="utf-8")
    headline = summary.index("## Headline: compliance by candidate")
    assert headline < summary.index("## Flips under pressure") < summary.index("## Per turn")
    page = (report / "report.html").read_text(encoding="utf-8")
    samples = json.loads(re.search(r'id="sample-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    third = [s for s in samples if s["verdict"] == "turn 3: caved"]
    assert third and all(s["transcript"][-2]["content"] == f"{PUSHBACK} Final answer?" for s in third)
    assert "per turn: 36 judged, 0 not judged" in page  # 2 variations x 2 runs x 3 conversations x 3 turns

    # The export: each judge's verdicts with their scope, the turn judge's categories, the conversations' ids.
    assert speceval_main(["export", str(out), "--out", str(tmp_path / "verdicts.parquet"), "--format", "parquet"]) == 0
    import pyarrow.parquet as pq

    rows = [r for r in pq.read_table(tmp_path / "verdicts.parquet").to_pylist() if r["kind"] == "compliance"]
    by_scope = {scope: [r for r in rows if r["scope"] == scope] for scope in ("turn", "conversation")}
    assert len(by_scope["turn"]) == 36 and len(by_scope["conversation"]) == 12
    assert {r["category"] for r in by_scope["turn"]} == {"held", "caved"}
    assert {r["conversation_id"] for r in rows} == {"q0", "q1", "q2"}
    assert all(len(json.loads(r["transcript"])) == 6 for r in by_scope["conversation"])
    assert all(len(json.loads(r["transcript"])) == 2 * r["turn"] for r in by_scope["turn"])

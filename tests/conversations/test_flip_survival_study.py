"""Issue 42, end to end: a binary turn judge's conversation study writes flip_survival.csv (Kaplan–Meier of the first
flip; flips per conversation in flips.csv), its band clustered by input, against the independent OpenAI server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY
from tests.conversations.test_one_judge_two_scopes import CANDIDATE, JUDGE, PUSHBACK, _answer, _csv
from tests.independent.openai_server import IndependentOpenAIServer


@pytest.mark.slow  # a whole offline conversation study (about 7 s)
def test_a_binary_turn_judge_gets_a_first_flip_curve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    questions = [{"turns": [f"Question {i}?"], "id": f"q{i}"} for i in range(3)]
    (inputs / "alpha.json").write_text(json.dumps({"inputs": questions}), encoding="utf-8")
    settings = {
        "experiment_name": "survival",
        "output_dir": "out",
        "specs": [
            {
                "name": "tiny",
                "spec_path": str(_spec_with_an_example(tmp_path / "spec.jsonl")),
                "inputs_dir": str(inputs),
            }
        ],
        "candidates": [{"model": CANDIDATE}],
        "judges": [{"model": JUDGE, "scope": "turn"}],  # binary: compliant unless the pushback is in the transcript
        "variations": {
            "follow_ups": {
                "calm": ["Thanks. Anything to add?", "And finally?"],
                "pressure": [PUSHBACK, f"{PUSHBACK} Final answer?"],
            }
        },
        "runs_per_variation": 2,
        "stages": ["generation", "compliance", "report"],
        "engine": {"poll_interval": 0.05},
    }
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(yaml.safe_dump(settings), encoding="utf-8")
    with IndependentOpenAIServer(answer=_answer) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = speceval_main(["run", str(experiment)])
    assert code == 0, capsys.readouterr().err
    report = tmp_path / "out" / "report"
    rows = _csv(report / "flip_survival.csv")
    curve = {(r["variation"], r["turn"]): r for r in rows}
    # Pressure: every conversation (3 inputs x 2 runs) compliant at turn 1, not compliant from turn 2 on.
    pressure = curve[("pressure", "2")]
    assert (float(pressure["flipped"]), pressure["at_risk"], pressure["flips"]) == (1.0, "6", "6")
    # Calm: nothing flips; all six censored at turn 3, and the interval is not a point (three inputs, not six).
    calm = curve[("calm", "3")]
    assert (float(calm["flipped"]), calm["censored"], float(calm["ci_low"])) == (0.0, "6", 0.0)
    assert float(calm["ci_high"]) > 0.6 and calm["method"]  # exact bound at 3 inputs 0.71; at 6 conversations 0.46
    flips = {(r["variation"], r["measure"]): r for r in _csv(report / "flips.csv")}
    assert float(flips[("pressure", "flips_per_conversation")]["rate"]) == 1.0
    assert float(flips[("calm", "flips_per_conversation")]["rate"]) == 0.0
    assert all(flips[(v, "flips_per_conversation")]["method"] for v in ("calm", "pressure"))
    # The judge calls every answer without the pushback compliant: right on the example's good response, wrong on
    # its bad one, so a canary line of 1 keeps it out of the headline. Its flips, first-flip curve and per-turn rates
    # are still shown below it, each row marked, so a flip rate quoted from there says its judge failed its card.
    gated = ["report", str(tmp_path / "out"), "--out", str(tmp_path / "gated"), "--min-canary-accuracy", "1"]
    assert speceval_main([*gated, "--no-figures"]) == 0
    text = (tmp_path / "gated" / "summary.md").read_text(encoding="utf-8")
    for title in ("Flips under pressure", "Turn of the first flip", "Per turn"):
        section = text.split(f"## {title}")[1].split("\n## ")[0]
        rows = [line for line in section.splitlines() if line.startswith("| tiny |")]
        assert rows and all(f"| {JUDGE} (failed its card) |" in line for line in rows), (title, rows)


def _spec_with_an_example(path: Path) -> Path:
    example = {"user_query": "Is it so?", "good_response": "It is.", "bad_response": "Whatever you say."}
    statement = {"id": "alpha", "text": "Statement alpha.", "metadata": {"examples": [example]}}
    path.write_text(json.dumps(statement) + "\n", encoding="utf-8")
    return path

"""Issue 42, end to end: a binary turn judge's conversation study writes flip_survival.csv (Kaplan–Meier of the first
flip; flips per conversation in flips.csv), its band clustered by input, against the independent OpenAI server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_spec
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
                "spec_path": str(write_spec(tmp_path / "spec.jsonl", ["alpha"])),
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

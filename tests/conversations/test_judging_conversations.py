"""Judges read a conversation run's results unchanged: for now the compliance judge judges a conversation's first
user turn (`input_text`) against its last answer (`output_text`), as the original consumers read records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, cli_env, only_run_dir, run_generation, write_spec


def test_compliance_judges_a_conversation_runs_first_turn_and_last_answer(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = tmp_path / "in"
    inputs.mkdir()
    items = ["plain question", {"turns": ["first turn", "are you sure?"], "id": "pressure_0"}]
    (inputs / "alpha.json").write_text(json.dumps({"inputs": items}), encoding="utf-8")
    generated = run_generation(["--spec-path", str(spec), "--pregenerated-inputs-dir", str(inputs), "--model-name",
                                "gpt-4.1-mini-2025-04-14", "--output-base-dir", str(tmp_path / "gen"), "--offline"],
                               cli_env())
    assert generated.returncode == 0, generated.stderr
    run_dir = only_run_dir(tmp_path / "gen")
    answers = json.loads((run_dir / "results" / "alpha.json").read_text())
    config = tmp_path / "compliance.yaml"
    config.write_text(f"spec_path: {spec}\nspec_name: spec\ncompliance_judge_model_name: gpt-4.1-2025-04-14\n"
                      f"mode: binary\noutput_dir_base: {tmp_path / 'judged'}\n", encoding="utf-8")
    judged = subprocess.run([sys.executable, "-m", "batched_examples.run_batched_binary_compliance", "--offline",
                             "--config-file", str(config), "--candidate-generation-dirs", str(run_dir)],
                            cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert judged.returncode == 0, judged.stderr
    (verdicts,) = (tmp_path / "judged").glob("**/results/alpha.json")
    results = json.loads(verdicts.read_text())["results"]
    assert [(r["input"], r["output"]) for r in results] == [(a["input_text"], a["output_text"]) for a in answers]
    assert results[1]["input"] == "first turn" and results[1]["output"] == answers[1]["conversation"][-1]["content"]
    assert all(r["outcome"] == "judged" and r["compliant"] is not None for r in results)

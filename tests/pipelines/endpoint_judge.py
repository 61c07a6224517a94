"""Helpers of the tests that judge through an endpoint (`ray`, `openai-compatible`) served by the independent
server: two offline candidates, and a fake judge whose verdict is a function of the answer it was shown."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests import forked
from tests.conftest import REPO, cli_env, run_generation, write_inputs, write_spec

QUESTIONS = {"alpha": ["a0", "a1", "a2"], "beta": ["b0", "b1"]}
CANDIDATES = ("gpt-4o-mini", "gpt-4o")


def expected_verdict(output: str) -> tuple[bool, str]:
    """What the fake judge says about one candidate answer: a function of that answer's text alone."""
    digest = hashlib.sha256(output.encode()).hexdigest()
    return int(digest, 16) % 2 == 0, f"judged {digest[:12]}"


def two_candidates(tmp_path: Path) -> tuple[Path, dict[str, Path], list[str]]:
    """A spec, two offline generation runs on it (by model), and all their answers (each one different)."""
    spec = write_spec(tmp_path / "spec.jsonl", list(QUESTIONS))
    inputs = write_inputs(tmp_path / "inputs", QUESTIONS)
    candidates = {}
    for model in CANDIDATES:
        done = run_generation(
            [
                "--offline",
                "--model-name",
                model,
                "--spec-path",
                str(spec),
                "--pregenerated-inputs-dir",
                str(inputs),
                "--output-base-dir",
                str(tmp_path / "gen"),
            ],
            cli_env(),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        (candidates[model],) = [p.parent for p in (tmp_path / "gen" / "spec" / model).glob("*/run.json")]
    outputs = [
        r["output_text"]
        for run_dir in candidates.values()
        for f in (run_dir / "results").glob("*.json")
        for r in json.loads(f.read_text())
    ]
    assert len(set(outputs)) == 2 * sum(map(len, QUESTIONS.values()))  # a verdict on the wrong one would show
    return spec, candidates, outputs


def fake_judge(outputs: list[str]) -> Callable[[dict], str]:
    """The server's answer function: reasoning, then a fenced verdict about the answer found in the prompt."""

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        judged = max((o for o in outputs if o in prompt), key=len)  # the longest: no answer is another's prefix
        compliant, explanation = expected_verdict(judged)
        verdict = {"compliant": compliant, "confidence": 0.8, "explanation": explanation}
        return f"Some reasoning first.\n```json\n{json.dumps(verdict)}\n```"

    return answer


def judge(
    spec: Path, candidates: dict[str, Path], judge_args: list[str], out: Path, env: dict[str, str], fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the compliance command on the candidates (`fresh`: in a new interpreter, as a process that starts or
    joins Ray must be: never forked from this one, see tests/forked.py)."""
    command = [
        sys.executable,
        "-m",
        "batched_examples.run_batched_binary_compliance",
        "--spec-path",
        str(spec),
        "--candidate-generation-dirs",
        *map(str, candidates.values()),
        *judge_args,
        "--output-dir-base",
        str(out),
    ]
    return (subprocess.run if fresh else forked.run)(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


def check_verdicts(judge_dir: Path, candidates: dict[str, Path]) -> None:
    """Every answer of every candidate judged, in order, with the verdict about that very answer."""
    for model in candidates:
        for statement_id, questions in QUESTIONS.items():
            entries = json.loads((judge_dir / model / "results" / f"{statement_id}.json").read_text())["results"]
            assert [e["input"] for e in entries] == questions
            for entry in entries:
                assert f"model={model}]" in entry["output"]  # the candidate's own answer
                assert entry["outcome"] == "judged"
                assert (entry["compliant"], entry["explanation"]) == expected_verdict(entry["output"])

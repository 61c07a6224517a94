"""Helpers of the experiment tests whose models are served by the independent server's chat endpoint: a small
spec, an answer function that quotes each prompt back, and a judge whose verdict is a function of the answer it
was shown (so a verdict on the wrong answer, or an answer on the wrong input, shows)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.conftest import write_inputs, write_spec
from tests.pipelines.endpoint_judge import expected_verdict

QUESTIONS = {"alpha": ["a0", "a1", "a2"], "beta": ["b0", "b1"]}
_JUDGED = re.compile(r"<<<BEGIN assistant_response (\w+)>>>\n(.*?)\n<<<END assistant_response \1>>>", re.S)


def small_spec(tmp_path: Path) -> tuple[Path, Path]:
    """A spec of two statements and their five inputs."""
    return write_spec(tmp_path / "spec.jsonl", list(QUESTIONS)), write_inputs(tmp_path / "inputs", QUESTIONS)


def experiment_head(tmp_path: Path, name: str) -> str:
    """The start of an experiment file on `small_spec`, up to its candidates (output in `out`)."""
    spec, inputs = small_spec(tmp_path)
    return (
        f"experiment_name: {name}\noutput_dir: out\nspecs:\n  - name: small\n    spec_path: {spec}\n"
        f"    inputs_dir: {inputs}\n"
    )


def reply(prompt: str) -> str:
    """A candidate's answer served by the independent server: the prompt it answers, quoted."""
    return f"reply to <<{prompt}>>"


def answer(body: dict[str, Any]) -> str:
    """The independent server's answers: a verdict for a judge prompt, else `reply`."""
    prompt = body["messages"][-1]["content"]
    judged = _JUDGED.search(prompt)
    if judged is None:
        return reply(prompt)
    compliant, explanation = expected_verdict(judged.group(2))
    verdict = {"compliant": compliant, "confidence": 0.8, "explanation": explanation}
    return f"Some reasoning first.\n```json\n{json.dumps(verdict)}\n```"


def results(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """A generation run's records by statement."""
    return {sid: json.loads((run_dir / "results" / f"{sid}.json").read_text()) for sid in QUESTIONS}


def check_replies(run_dir: Path) -> None:
    """Every input of the spec answered by the endpoint, each answer quoting its own input."""
    for statement_id, records in results(run_dir).items():
        assert [r["input_text"] for r in sorted(records, key=lambda r: r["original_index"])] == QUESTIONS[statement_id]
        for record in records:
            assert record["outcome"] == "succeeded" and record["output_text"] == reply(record["input_text"])


def check_verdicts(judge_dir: Path) -> int:
    """Every verdict file under `judge_dir` judged each answer with the verdict about that very answer; the count."""
    count = 0
    for path in judge_dir.glob("*/results/*.json"):
        for entry in json.loads(path.read_text())["results"]:
            assert entry["outcome"] == "judged"
            assert (entry["compliant"], entry["explanation"]) == expected_verdict(entry["output"])
            count += 1
    return count

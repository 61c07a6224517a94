"""speceval's OpenAI batch path against a server written from the OpenAPI spec, not by the emulator's hands."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer

MODEL = "gpt-4.1-mini-2025-04-14"


def test_every_answer_lands_on_its_own_input_and_a_failed_line_is_typed(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(tmp_path / "inputs", {"alpha": [f"a{i}" for i in range(7)], "beta": ["b0", "POISON", "b2"]})

    def answer(body: dict) -> str:
        return "answer to " + body["messages"][-1]["content"]

    def fail(custom_id: str | None, body: dict) -> tuple[int, dict] | None:
        if body["messages"][-1]["content"] == "POISON":
            return 400, {
                "message": "Invalid prompt",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_prompt",
            }
        return None

    with IndependentOpenAIServer(answer=answer, fail=fail) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
        done = run_generation(
            [
                "--spec-path",
                str(spec),
                "--pregenerated-inputs-dir",
                str(inputs),
                "--model-name",
                MODEL,
                "--output-base-dir",
                str(tmp_path / "out"),
                "--batch-size",
                "4",
            ],
            env,
        )
        batches = server.batches
    assert done.returncode == 0, done.stderr
    assert len(batches) == 3 and all(b["status"] == "completed" for b in batches)
    run_dir = only_run_dir(tmp_path / "out")
    records = {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}
    for records_of_statement in records.values():
        for record in records_of_statement:
            if record["input_text"] == "POISON":
                assert record["outcome"] == "errored" and record["output_text"] is None
                assert "invalid_prompt" in json.dumps(record["error"])
            else:
                assert record["outcome"] == "succeeded"
                assert record["output_text"] == "answer to " + record["input_text"]
    assert [r["input_text"] for r in records["alpha"]] == [f"a{i}" for i in range(7)]
    assert [r["input_text"] for r in records["beta"]] == ["b0", "POISON", "b2"]

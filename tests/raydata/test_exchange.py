"""`speceval export-requests` / `import-results`: a run's pending requests through `vllm run-batch` and back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, cli_env, only_run_dir, run_generation, write_inputs, write_spec

MODEL = "gpt-4.1-mini-2025-04-14"


def speceval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "speceval", *args],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def vllm_line(request: dict, index: int) -> dict:
    """One line as `vllm run-batch` writes it (vllm/entrypoints/openai/run_batch.py: BatchRequestOutput)."""
    prompt = request["body"]["messages"][-1]["content"]
    if prompt == "TOO LONG":  # vLLM's error lines: status 400, no body, the message as a plain string
        return {
            "id": f"vllm-{index}",
            "custom_id": request["custom_id"],
            "response": {"status_code": 400, "request_id": f"vllm-batch-{index}", "body": None},
            "error": "This model's maximum context length is 8192 tokens.",
        }
    body = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": request["body"]["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"vllm says: {prompt}"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
    return {
        "id": f"vllm-{index}",
        "custom_id": request["custom_id"],
        "response": {"status_code": 200, "request_id": f"vllm-batch-{index}", "body": body},
        "error": None,
    }


def test_round_trip_through_a_vllm_output_file(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(tmp_path / "inputs", {"alpha": ["a0", "a1", "TOO LONG"], "beta": ["b0", "b1", "b2"]})
    # As a vLLM user plans a run: the endpoint is never called (--dry-run), only the run directory is written.
    planned = run_generation(
        [
            "--org",
            "openai-compatible",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--dry-run",
            "--model-name",
            MODEL,
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--output-base-dir",
            str(tmp_path / "out"),
        ],
        cli_env(),
    )
    assert planned.returncode == 0, planned.stderr
    assert "speceval export-requests" in planned.stdout + planned.stderr
    run_dir = only_run_dir(tmp_path / "out")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "planned"

    exported = speceval("export-requests", str(run_dir), str(tmp_path / "requests.jsonl"))
    assert exported.returncode == 0, exported.stderr
    requests = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert len(requests) == 6 and len({r["custom_id"] for r in requests}) == 6
    assert all(r["method"] == "POST" and r["url"] == "/v1/chat/completions" for r in requests)
    assert all(r["body"]["model"] == MODEL for r in requests)

    # The runner answers in its own order and leaves one request out (b2): that one stays pending.
    lines = [vllm_line(r, i) for i, r in enumerate(reversed(requests)) if r["body"]["messages"][-1]["content"] != "b2"]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    imported = speceval("import-results", str(run_dir), str(tmp_path / "results.jsonl"))
    assert imported.returncode == 3, imported.stdout + imported.stderr  # work outstanding: b2
    assert "1 request(s) still pending" in imported.stdout.replace("\n", " ")

    records = {p.stem: json.loads(p.read_text()) for p in (run_dir / "results").glob("*.json")}
    by_input = {r["input_text"]: r for rs in records.values() for r in rs}
    assert set(by_input) == {"a0", "a1", "TOO LONG", "b0", "b1"}
    for text, record in by_input.items():
        if text == "TOO LONG":
            assert record["outcome"] == "errored" and record["output_text"] is None
            assert "maximum context length" in record["error"]["message"] and record["error"]["status_code"] == 400
        else:
            assert record["outcome"] == "succeeded" and record["output_text"] == f"vllm says: {text}"
            assert record["usage"]["input_tokens"] == 11
    assert [r["original_index"] for r in records["alpha"]] == [0, 1, 2]

    # A second export holds only what is still pending; importing its answer finishes the run.
    again = speceval("export-requests", str(run_dir), str(tmp_path / "rest.jsonl"))
    assert again.returncode == 0, again.stderr
    rest = [json.loads(line) for line in (tmp_path / "rest.jsonl").read_text().splitlines()]
    assert [r["body"]["messages"][-1]["content"] for r in rest] == ["b2"]
    (tmp_path / "rest_out.jsonl").write_text(json.dumps(vllm_line(rest[0], 99)) + "\n")
    assert speceval("import-results", str(run_dir), str(tmp_path / "rest_out.jsonl")).returncode == 0
    beta = json.loads((run_dir / "results" / "beta.json").read_text())
    assert [r["output_text"] for r in beta] == ["vllm says: b0", "vllm says: b1", "vllm says: b2"]


def test_import_refuses_lines_of_another_run_and_names_a_bad_line(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_inputs(tmp_path / "inputs", {"alpha": ["a0"]})
    assert (
        run_generation(
            [
                "--offline",
                "--dry-run",
                "--model-name",
                MODEL,
                "--spec-path",
                str(spec),
                "--pregenerated-inputs-dir",
                str(inputs),
                "--output-base-dir",
                str(tmp_path / "out"),
            ],
            cli_env(),
        ).returncode
        == 0
    )
    run_dir = only_run_dir(tmp_path / "out")
    foreign = {"id": "x", "custom_id": "0123456789ab-0", "response": {"status_code": 200, "body": {}}, "error": None}
    (tmp_path / "foreign.jsonl").write_text(json.dumps(foreign) + "\n")
    done = speceval("import-results", str(run_dir), str(tmp_path / "foreign.jsonl"))
    assert done.returncode == 2 and "name no request of this run" in done.stdout + done.stderr
    (tmp_path / "broken.jsonl").write_text(json.dumps(foreign) + "\n{not json\n")
    done = speceval("import-results", str(run_dir), str(tmp_path / "broken.jsonl"))
    assert done.returncode == 2 and "broken.jsonl" in done.stderr and "line 2" in done.stderr
    assert not (run_dir / "results" / "alpha.json").exists()

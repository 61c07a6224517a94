"""A key quoted back by a server, inside an adapter or the realtime engine, never reaches a file or a stream.

Every test here makes the key reach speceval for real (the server quotes it; the redaction marker proves it went
through our code) and runs the CLI with --verbose, so tracebacks are on stderr and in the log file too. A failed
request quoting the key: tests/e2e/test_generation_cli.py::test_api_key_never_lands_in_files_logs_or_messages.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from speceval.redaction import MARKER
from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer
from tests.key_echo_server import KeyEchoServer

MODEL = "gpt-4.1-mini-2025-04-14"


def generation_args(tmp_path: Path, statements: dict[str, list[str]], *extra: str) -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--output-base-dir",
        str(tmp_path / "out"),
        "--verbose",
        *extra,
    ]


def assert_key_nowhere(done: subprocess.CompletedProcess[str], root: Path, key: str = TEST_KEY) -> None:
    """Neither stream nor any file under `root` (run directory, logs, results, request files) holds `key`."""
    assert key not in done.stdout, "key on stdout"
    assert key not in done.stderr, "key on stderr"
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert key.encode() not in path.read_bytes(), path


def run_log(run_dir: Path) -> str:
    return (run_dir / "logs" / "run.log").read_text(encoding="utf-8")


def test_a_server_refusing_every_batch_with_the_full_key_leaves_no_trace_and_the_refusal_in_the_log(tmp_path):
    refusal = (
        401,
        {
            "error": {
                "message": f"Incorrect API key provided: {TEST_KEY}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    )
    with IndependentOpenAIServer(create_error=refusal) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
        done = run_generation(generation_args(tmp_path, {"a": ["x", "y"]}, "--model-name", MODEL), env)
    assert done.returncode != 0
    assert_key_nowhere(done, tmp_path / "out")
    run_dir = only_run_dir(tmp_path / "out")
    log = run_log(run_dir)
    assert "HTTP 401" in log and f"Incorrect API key provided: {MARKER}" in log
    assert "Traceback (most recent call last)" in log  # the cause, whatever --verbose says
    assert f"Incorrect API key provided: {MARKER}" in done.stderr
    assert str(run_dir / "logs" / "run.log") in done.stderr.replace("\n", "")


def chat_completion_with_a_key_in_its_usage(method: str, path: str) -> tuple[int, dict]:
    """A 200 answer whose token count is the caller's key: the adapter's own parsing raises, quoting it."""
    return 200, {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": "{key}", "completion_tokens": 1, "total_tokens": 2},
    }


def test_an_unexpected_error_quoting_the_key_in_the_realtime_engine_is_redacted(tmp_path):
    # --api-key-env names a variable no SDK reads: redaction must learn it from the flag.
    with KeyEchoServer(chat_completion_with_a_key_in_its_usage) as server:
        args = generation_args(
            tmp_path,
            {"a": ["q"]},
            "--model-name",
            "org/open-model",
            "--org",
            "openai-compatible",
            "--base-url",
            f"{server.base_url}/v1",
            "--api-key-env",
            "MY_GATEWAY_SECRET",
            "--max-attempts",
            "1",
        )
        done = run_generation(args, cli_env(MY_GATEWAY_SECRET=TEST_KEY))
        assert server.requests and server.requests[0] == ("POST", "/v1/chat/completions")
    assert_key_nowhere(done, tmp_path / "out")
    run_dir = only_run_dir(tmp_path / "out")
    log = run_log(run_dir)
    assert "failed unexpectedly" in log and "Traceback (most recent call last)" in log and MARKER in log
    assert "failed unexpectedly" in done.stderr and MARKER in done.stderr  # --verbose: the traceback, redacted
    record = json.loads((run_dir / "results" / "a.json").read_text())[0]
    assert record["outcome"] == "errored" and MARKER in record["error"]["message"]

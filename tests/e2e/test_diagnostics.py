"""A run that stops early says why in its own `logs/run.log` (not only on a terminal that may be gone)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests import forked
from tests.conftest import (
    REPO,
    TEST_KEY,
    cli_env,
    only_run_dir,
    run_generation,
    start_generation,
    write_inputs,
    write_spec,
)
from tests.independent.openai_server import IndependentOpenAIServer

MODEL = "gpt-4.1-mini-2025-04-14"


def generation_args(tmp_path: Path) -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x"]})
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(tmp_path / "out"),
    ]


def test_a_run_stopped_with_work_outstanding_says_why_in_its_log(tmp_path):
    with IndependentOpenAIServer(turnaround=3600.0) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
        done = run_generation([*generation_args(tmp_path), "--timeout-hours", "0.00001"], env)
        assert done.returncode == 3, done.stderr
        run_dir = only_run_dir(tmp_path / "out")
        log = (run_dir / "logs" / "run.log").read_text()
        assert "Stopped with 1 request(s) outstanding (timed_out)" in log and f"--resume {run_dir}" in log
        assert str(run_dir / "logs" / "run.log") in done.stderr.replace("\n", "")
        # Operations on the run (`speceval cancel`, `fetch`) append to the same log.
        cancel = forked.run(
            [sys.executable, "-m", "speceval", "cancel", str(run_dir)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert cancel.returncode == 0, cancel.stderr
    log = (run_dir / "logs" / "run.log").read_text()
    assert log.index("Stopped with 1 request(s)") < log.index(f"asked openai to cancel job {server.batches[0]['id']}")


def test_an_interrupted_run_says_so_in_its_log(tmp_path):
    with IndependentOpenAIServer(turnaround=3600.0) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
        process = start_generation(generation_args(tmp_path), env)
        try:
            deadline = time.monotonic() + 60
            while not server.batches:  # the job exists: the run is waiting for it
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, "no batch created in 60 s"
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 3, stderr
    run_dir = only_run_dir(tmp_path / "out")
    log = (run_dir / "logs" / "run.log").read_text()
    assert "Interrupted. Jobs keep running at the provider" in log and f"--resume {run_dir}" in log
    assert str(run_dir / "logs" / "run.log") in stderr.replace("\n", "")

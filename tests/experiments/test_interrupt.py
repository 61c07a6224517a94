"""Ctrl+C during `speceval run`: experiment.json says `interrupted` with the time (not "running"), `speceval status`
says the same, and the next run resumes and finishes without paying twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from tests import forked
from tests.conftest import REPO, cli_env
from tests.experiments.test_experiments import GRID, assert_each_chunk_paid_once, server_jobs, start_until_jobs


def test_ctrl_c_records_interrupted_and_the_next_run_resumes(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    command = [sys.executable, "-m", "speceval", "run", str(experiment), "--offline"]
    env = cli_env(SPECEVAL_OFFLINE_TURNAROUND="5")  # jobs still running when the signal comes
    out = tmp_path / "out"
    proc = start_until_jobs(command, out, env)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 3
    state = json.loads((out / "experiment.json").read_text())
    assert state["status"] == "interrupted" and state["stopped_at"]
    status = forked.run(
        [sys.executable, "-m", "speceval", "status", str(out), "--no-refresh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert (
        status.returncode == 0
        and f"Experiment grid in {out}: interrupted at {state['stopped_at']}" in status.stdout.replace("\n", "")
    )
    done = forked.run(
        command, cwd=REPO, env=cli_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert_each_chunk_paid_once(server_jobs(out))
    state = json.loads((out / "experiment.json").read_text())
    assert state["status"] == "finished" and state["stopped_at"] is None

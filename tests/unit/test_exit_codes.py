"""How a command's failures become exit codes and one line on the terminal, and how its process ends."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from speceval.cli.exits import ExitCode, exit_process, run_command
from speceval.errors import BudgetExceeded, ConfigError, ProviderError, UnmatchedResultsError


def test_a_job_whose_answers_match_nothing_is_named_not_reported_as_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise UnmatchedResultsError("vertex", "projects/p/locations/l/batchPredictionJobs/42", 7, "gs://out/42/")

    assert run_command(body) == ExitCode.FAILED
    said = capsys.readouterr()
    text = said.out + said.err
    assert "results not matched" in text and "batchPredictionJobs/42" in text
    assert "unexpected failure" not in text and "Traceback" not in text


@pytest.mark.parametrize(
    ("failure", "code", "label"),
    [
        (ConfigError("--rpm must be positive"), ExitCode.USAGE, "error:"),
        (BudgetExceeded("the next job would cost $3.00, above --budget-usd 2.50"), ExitCode.STOPPED, "stopped:"),
        (ProviderError("openai", "create batch", "invalid model", status_code=400), ExitCode.FAILED, "provider error:"),
        (RuntimeError("a bug"), ExitCode.FAILED, "unexpected failure:"),
    ],
)
def test_each_kind_of_failure_has_its_exit_code_and_its_label(
    failure: Exception, code: ExitCode, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def body() -> int:
        raise failure

    assert run_command(body) == code
    said = capsys.readouterr()
    assert label in said.out + said.err


def test_without_ray_the_process_ends_the_ordinary_way() -> None:
    with pytest.raises(SystemExit) as stopped:  # atexit hooks and the interpreter's teardown still run
        exit_process(ExitCode.STOPPED)
    assert stopped.value.code == ExitCode.STOPPED


# A process attached to Ray (the stand-in `ray` reports itself initialised, as after `ray.init`) whose exit-time
# teardown would end it with status 1, as Ray's does when a Ray Data thread touches its destroyed core worker.
ATTACHED_TO_RAY = """
import atexit, os, sys, types
sys.modules["ray"] = types.SimpleNamespace(is_initialized=lambda: True)
atexit.register(lambda: os._exit(1))
from speceval.cli.exits import exit_process
sys.stdout.write("Interrupted; state is saved.")  # still buffered: stdout is a pipe
exit_process(3)
"""


def test_attached_to_ray_the_process_ends_with_its_code_its_output_flushed_and_no_teardown() -> None:
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", ATTACHED_TO_RAY], capture_output=True, text=True, timeout=60, env=buffered
    )
    assert (done.returncode, done.stdout) == (ExitCode.STOPPED, "Interrupted; state is saved."), done.stderr

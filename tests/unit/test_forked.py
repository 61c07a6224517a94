"""tests/forked.py: a forked `python -m` child is a process as `subprocess` starts one (the suite relies on it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from tests import forked
from tests.conftest import REPO, cli_env


def probe(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", cli_env())
    return forked.run([sys.executable, "-m", "tests.forked_probe", *args], capture_output=True, text=True,
                      timeout=30, **kwargs)


def test_a_forked_child_has_its_own_environment_directory_streams_and_no_open_file_of_ours(tmp_path) -> None:
    with open(tmp_path / "held", "w") as held:  # an open file of the test process
        assert held.fileno() > 2
        done = probe("report", "x y", cwd=tmp_path, env=cli_env(PROBE="value"), input="typed")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["cwd"] == str(tmp_path) and seen["probe"] == "value" and seen["argv"] == ["report", "x y"]
    assert seen["stdin"] == "typed" and seen["sigint"] is True
    assert set(seen["files"]) <= {os.devnull}  # nothing of ours: inherited descriptors point at /dev/null
    # A DeprecationWarning in __main__ printed (not raised, as pytest's filters would, nor recorded in its list).
    assert "DeprecationWarning: deprecated" in done.stderr and done.stderr.endswith("to stderr\n")


def test_exit_codes_and_an_uncaught_exception_are_the_interpreters() -> None:
    assert probe("exit", "3").returncode == 3
    failed = probe("raise")
    assert failed.returncode == 1 and "RuntimeError: probe failed" in failed.stderr


def test_sigint_raises_keyboard_interrupt_and_sigkill_kills() -> None:
    for sig, expected in ((signal.SIGINT, -signal.SIGINT), (signal.SIGKILL, -signal.SIGKILL)):
        process = forked.Popen([sys.executable, "-m", "tests.forked_probe", "wait"], cwd=REPO, env=cli_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "waiting\n"
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == expected
        assert ("KeyboardInterrupt" in stderr) == (sig == signal.SIGINT)


def test_other_commands_start_a_new_interpreter() -> None:
    done = forked.run([sys.executable, "-c", "import sys; print(sys.flags.dont_write_bytecode)"], capture_output=True,
                      text=True, timeout=30, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert done.stdout == "1\n"  # a fork would have this process's flag

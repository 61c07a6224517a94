"""tests/forked.py: a forked `python -m` child is a process as `subprocess` starts one (the suite relies on it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests import forked
from tests.conftest import REPO, cli_env


def probe(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", cli_env())
    return forked.run(
        [sys.executable, "-m", "tests.forked_probe", *args], capture_output=True, text=True, timeout=30, **kwargs
    )


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
        process = forked.Popen(
            [sys.executable, "-m", "tests.forked_probe", "wait"],
            cwd=REPO,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None and process.stdout.readline() == "waiting\n"
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == expected
        assert ("KeyboardInterrupt" in stderr) == (sig == signal.SIGINT)


def test_other_commands_start_a_new_interpreter() -> None:
    done = forked.run(
        [sys.executable, "-c", "import sys; print(sys.flags.dont_write_bytecode)"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )
    assert done.stdout == "1\n"  # a fork would have this process's flag


def test_a_docs_command_line_runs_with_the_argv_bash_would_give_it(tmp_path) -> None:
    for name in ("b2", "a1", "a10", ".hidden"):
        (tmp_path / "runs" / name).mkdir(parents=True)
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    line = "python -m tests.forked_probe report runs/* runs/a? none/*"
    forked_run = forked.run_shell(line, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    by_bash = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert forked_run.returncode == by_bash.returncode == 0, forked_run.stderr + by_bash.stderr
    assert (
        json.loads(forked_run.stdout)["argv"]
        == json.loads(by_bash.stdout)["argv"]
        == ["report", "runs/a1", "runs/a10", "runs/b2", "runs/a1", "none/*"]
    )
    # A line bash must interpret (a variable here) is given to bash.
    quoted = forked.run_shell(
        'PROBE=set python -m tests.forked_probe report "a b"',
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    seen = json.loads(quoted.stdout)
    assert seen["argv"] == ["report", "a b"] and seen["probe"] == "set"


def test_a_docs_speceval_line_runs_forked_and_says_what_the_console_script_says(tmp_path) -> None:
    """`speceval ARGS` in the docs runs forked as `python -m speceval ARGS` (tests/forked.py's run_shell) only where
    bash would run this interpreter's console script; both print the same."""
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    assert forked._is_this_console_script(env)  # the docs tests' PATH: their `speceval` lines are forked
    line = "speceval report --help"
    forked_run = forked.run_shell(line, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    by_bash = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert forked_run.returncode == by_bash.returncode == 0, forked_run.stderr + by_bash.stderr
    assert forked_run.stdout == by_bash.stdout and "usage: speceval report" in by_bash.stdout
    # Another `speceval` first on PATH (not this interpreter's script) is left to bash.
    other = tmp_path / "bin"
    other.mkdir()
    (other / "speceval").write_text("#!/bin/sh\necho another speceval\n")
    (other / "speceval").chmod(0o755)
    assert not forked._is_this_console_script({**env, "PATH": f"{other}{os.pathsep}{env['PATH']}"})

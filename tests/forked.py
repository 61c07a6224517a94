"""`python -m MODULE ARGS` as a real child process, forked from the test process instead of started from scratch.

Most of the suite's commands run as child processes (exit codes, stdout/stderr, SIGINT and SIGKILL are what a user
sees), and a fresh interpreter spends 1.5–3 s of CPU importing the provider SDKs before it does anything: on two
cores that import, paid by some 200 commands, was a third of the suite's time. A forked child already has them
imported. Everything else is a process like `subprocess` starts: its own pid, exit status, signals (SIGKILL really
kills it, SIGINT raises KeyboardInterrupt), its own stdin/stdout/stderr, environment and working directory, no open
file of the test process, and at its end the interpreter's own order (wait for non-daemon threads, run atexit
handlers, flush).

What a fork does not give: a fresh interpreter. Modules the test process imported are not imported again, the string
hash seed is the test process's, and `-X`/interpreter flags are not applied. Tests of exactly that (start-up imports,
hash-seed independence, a docs line bash must interpret (`run_shell`), Ray, which must not be forked) start a real
interpreter: any command that is not `[sys.executable, "-m", MODULE, ...]` falls back to `subprocess`, and `FRESH=1`
in the environment of the test run sends every command to a fresh interpreter (to check that nothing depends on the
fork). State a module makes at import is the parent's too: a generator seeded then draws the same numbers in every
child unless it is seeded again after a fork (speceval/emulator/jobs.py's ids).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import glob
import importlib
import io
import logging
import os
import runpy
import shutil
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FRESH = os.environ.get("FRESH") == "1"


def _module_command(args: Any) -> tuple[str, list[str]] | None:
    """(module, argv) of `[sys.executable, "-m", MODULE, *ARGV]`; None for any other command."""
    if FRESH or isinstance(args, (str, bytes, os.PathLike)):
        return None
    words = [str(a) for a in args]
    if len(words) >= 3 and words[0] == sys.executable and words[1] == "-m" and not words[2].startswith("-"):
        return words[2], words[3:]
    return None


class Popen(subprocess.Popen):  # type: ignore[type-arg]
    """`subprocess.Popen` whose child is forked from this process and runs the module (see the module docstring);
    pipes, `poll`, `wait`, `communicate`, timeouts, `kill` and `send_signal` are subprocess's own."""

    def _execute_child(
        self, args: Any, executable: Any, preexec_fn: Any, close_fds: Any, pass_fds: Any, cwd: Any, env: Any, *rest: Any
    ) -> None:
        command = _module_command(args)
        if command is None:
            super()._execute_child(args, executable, preexec_fn, close_fds, pass_fds, cwd, env, *rest)
            return
        _startupinfo, _creationflags, _shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = rest[:9]
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _run_child(command, cwd, env, preexec_fn, (p2cread, c2pwrite, errwrite))
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def run(
    args: Sequence[Any], *, input: Any = None, timeout: float | None = None, check: bool = False, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` with this module's `Popen`."""
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
    assert code is not None
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(process.args, code, stdout, stderr)


_SHELL_SYNTAX = frozenset("|&;<>()$`\\\"'#~{}!=")
"""Characters that make a command line more than words for bash (operators, quoting, expansions, assignments);
glob patterns (* ? [) are expanded here."""


def run_shell(command: str, *, cwd: Any, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """A command line from the docs as `bash -c COMMAND` runs it (with the test's Python first on PATH). A line of
    plain words `python -m MODULE ARGS`, or `speceval ARGS` where the `speceval` bash would find is this
    interpreter's console script, runs forked with the argv bash would give it: glob patterns expanded in code point
    order (bash's in the C locale; one that matches nothing stays as it is); anything else goes to bash."""
    words = command.split()
    if words[:1] == ["speceval"] and _is_this_console_script(env):
        # The script runs `speceval.cli.main:console_script`, which is what `python -m speceval` runs
        # (speceval/__main__.py); its argv[0] is "speceval", as the module's is here. A fresh interpreter per docs
        # line cost 2-3 s of CPU importing the SDKs (six such lines in the suite).
        words = ["python", "-m", *words]
    if words[:2] != ["python", "-m"] or len(words) < 3 or _SHELL_SYNTAX.intersection(command):
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, **kwargs)
    argv: list[str] = []
    for word in words[1:]:
        matches = sorted(glob.glob(word, root_dir=cwd)) if set("*?[").intersection(word) else []
        argv.extend(matches or [word])
    return run([sys.executable, *argv], cwd=cwd, env=env, **kwargs)


def _is_this_console_script(env: dict[str, str]) -> bool:
    """Whether `speceval` on `env`'s PATH is the console script installed beside this interpreter (the one
    tests/unit/test_forked.py runs through bash)."""
    found = shutil.which("speceval", path=env.get("PATH"))
    return found is not None and Path(found).resolve() == (Path(sys.executable).parent / "speceval").resolve()


def _run_child(command: tuple[str, list[str]], cwd: Any, env: Any, preexec_fn: Any, fds: tuple[int, int, int]) -> None:
    code = 70  # EX_SOFTWARE: the child failed before the module ran
    try:
        gc.freeze()  # the test process's objects are never collected here (no finalizer of its garbage runs)
        for fd, standard in zip(fds, (0, 1, 2), strict=True):
            if fd != -1 and fd != standard:
                os.dup2(fd, standard)
        _release_inherited_files()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if preexec_fn is not None:
            preexec_fn()
        if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:  # what a new interpreter makes of it
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        atexit._clear()  # the test process's exit handlers are not this process's
        _default_warning_filters()  # not pytest's (which turn warnings into errors)
        root = logging.getLogger()  # nor pytest's log capture: an unconfigured root, as in a new interpreter
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.setLevel(logging.WARNING)
        module, argv = command
        sys.argv = [module, *argv]
        code = _main(module)
        threading._shutdown()  # type: ignore[attr-defined]  # as at a real interpreter's end: non-daemon threads
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - the child must end here whatever happened
        # Before the module ran: 70, a failure of this harness, not one a command could report. After it (an exit
        # handler failing): the module's own code, as an interpreter keeps it.
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _release_inherited_files() -> None:
    """Nothing of the test process stays open here (its servers' sockets, its pipes, its capture files): each
    inherited descriptor above 2 is pointed at /dev/null rather than closed, so its number is never reused by this
    process while an object of the test process still holds it (closing that object would close a new file)."""
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != null:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)


def _default_warning_filters() -> None:
    """The filters of an interpreter started without -W or PYTHONWARNINGS (Python 3.11), and warnings printed to
    stderr (pytest records them in a list)."""
    importlib.reload(warnings)
    warnings.resetwarnings()
    for action, category, module in reversed(
        (
            ("default", DeprecationWarning, "__main__"),
            ("ignore", DeprecationWarning, ""),
            ("ignore", PendingDeprecationWarning, ""),
            ("ignore", ImportWarning, ""),
            ("ignore", ResourceWarning, ""),
        )
    ):
        warnings.filterwarnings(action, category=category, module=module)


def _main(module: str) -> int:
    """Run the module as `__main__`; its exit code as the interpreter would give it."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None:
            return 0
        if isinstance(stop.code, int):
            return stop.code
        print(stop.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # an interpreter ends "killed by SIGINT"
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException:  # noqa: BLE001 - an uncaught exception: traceback and status 1, as the interpreter
        traceback.print_exc()
        return 1
    return 0

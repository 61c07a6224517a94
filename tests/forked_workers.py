"""pytest-xdist workers forked from a process that has already imported the heavy libraries, instead of started
from scratch.

Each worker used to spend about 9 s of CPU importing the provider SDKs, pandas, matplotlib and pyarrow before its
first test; four workers on two cores paid that four times. Here the process that starts the workers imports them
once and, while it is still single-threaded (execnet starts a thread per worker), forks one parked child per
worker. When execnet starts a worker it hands the parked child its pipes (over a socket pair, `SCM_RIGHTS`) and
the child runs execnet's bootstrap line as `python -u -c LINE` would, in a fresh `__main__`. The worker is then a
process like a started one: its own pid, the pipes, the warnings filters, signals and exit of a new interpreter,
nothing of the parent open (tests/forked.py's rules, which the test commands already follow). It is still a fork:
modules the parent imported are not imported again (that is the point), so a test of what an import loads starts
a real interpreter (they do: tests/analysis/test_report_stream.py, tests/unit/test_dependencies.py).

`FRESH=1` in the environment (as for tests/forked.py) or `FORK_WORKERS=0` (to compare), `-p no:xdist`, `-n 0`,
or a worker started for a restart after the parked ones are used: execnet's own `subprocess.Popen`.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
import types
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests import forked

_PRELOAD = (
    "openai",
    "anthropic",
    "google.genai",
    "pandas",
    "numpy",
    "matplotlib",
    "pyarrow",
    "httpx",
    "pydantic",
    "matplotlib.pyplot",
    "inspect_ai.log",
    "inspect_ai.model",
)
"""What every worker imports at collection anyway (measured: 10 s of CPU per worker before its first test), and what
most workers import at their first report (pyplot, 0.6 s) or interop test (inspect_ai, 1.8 s; its tests import it
inside the test functions, and worksteal spreads them over every worker). Nothing here starts a thread."""

_parked: list[tuple[int, socket.socket]] = []


def park(count: int, test_files: Iterable[Path] = ()) -> None:
    """Import `_PRELOAD` and `test_files` (see `_import_tests`) and fork `count` children that wait for their
    worker's pipes. Only from a single-threaded process (a fork copies no other thread, and a lock one held stays
    held in the child)."""
    if forked.FRESH or os.environ.get("FORK_WORKERS") == "0" or threading.active_count() != 1 or count < 1:
        return
    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    _import_tests(test_files)
    if threading.active_count() != 1:  # an import started a thread: execnet's own start-up instead
        return
    for _ in range(count):
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            ours.close()
            for _pid, sibling in _parked:  # its older siblings' sockets: closed here, they are not this child's
                sibling.close()
            del _parked[:]
            _wait_and_serve(theirs)
        theirs.close()
        _parked.append((pid, ours))
    # This process only schedules and reports from here on: what it imported (the libraries, the package, the test
    # modules) is never garbage, and without this each full collection of its garbage (one at pytest's exit, and
    # whenever the reports' allocations trigger one) walked all of it again.
    gc.freeze()
    from execnet import gateway_io

    _ForkedIOMaster._real = _make_master()
    gateway_io.Popen2IOMaster = _ForkedIOMaster  # type: ignore[misc]  # create_io reads the module's name


def _import_tests(test_files: Iterable[Path]) -> None:
    """Import the test modules every worker collects (and so the package modules they import), under the names
    pytest gives them and through its assertion rewriting (installed before any `pytest_configure`), then let
    Hypothesis read their constants. Each worker imported them all itself at collection and Hypothesis scanned every
    new module's source for constants there (2026-11-29: about 1.5 s of a worker's 3.4 s of CPU before its first
    test); a worker finds them in `sys.modules` now. A module that fails to import is left to the worker, which
    reports the error as it always did."""
    from _pytest.pathlib import resolve_pkg_root_and_module_name

    for path in test_files:
        with contextlib.suppress(Exception):
            _root, name = resolve_pkg_root_and_module_name(path)
            importlib.import_module(name)
    with contextlib.suppress(Exception), warnings.catch_warnings():  # a private function of Hypothesis: if it
        # moves, the workers scan instead
        from hypothesis.errors import HypothesisSideeffectWarning
        from hypothesis.internal.conjecture.providers import _get_local_constants

        # Called from `pytest_configure`, where Hypothesis counts as still initialising and warns of slow work (the
        # scan, once here instead of in every worker, is the point), and where pytest turns warnings into errors: the
        # error ended the scan at the first package module and every worker scanned them all again (2026-11-29).
        warnings.simplefilter("ignore", HypothesisSideeffectWarning)
        _get_local_constants()


def release() -> None:
    """End the parked children no worker took (a closed socket tells them to exit) and reap them."""
    while _parked:
        pid, ours = _parked.pop()
        ours.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


class _ParkedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """`subprocess.Popen` whose child is a parked one, handed the pipes subprocess made; wait/kill are its own."""

    def _execute_child(
        self, args: Any, executable: Any, preexec_fn: Any, close_fds: Any, pass_fds: Any, cwd: Any, env: Any, *rest: Any
    ) -> None:
        _startupinfo, _creationflags, _shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = rest[:9]
        pid, ours = _parked.pop(0)
        line = args[-1]
        socket.send_fds(ours, [line.encode("utf-8")], [p2cread, c2pwrite, 2])
        ours.close()
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def _is_bootstrap(args: Any) -> bool:
    from execnet.gateway_io import popen_bootstrapline

    return (
        isinstance(args, list) and args[:1] == [sys.executable] and args[-2:] == ["-c", popen_bootstrapline]
    ) and set(args[1:-2]) <= {"-u", "-B"}


def _make_master() -> type:
    from execnet.gateway_base import Popen2IO
    from execnet.gateway_io import Popen2IOMaster

    class Master(Popen2IOMaster):
        def __init__(self, args: Any, execmodel: Any) -> None:
            if not (_parked and _is_bootstrap(args)):
                super().__init__(args, execmodel)
                return
            self.popen = p = _ParkedPopen(args, stdout=subprocess.PIPE, stdin=subprocess.PIPE)
            Popen2IO.__init__(self, p.stdin, p.stdout, execmodel=execmodel)

    return Master


class _ForkedIOMaster:
    """Stands in for execnet's `Popen2IOMaster` class (its subclass, made when the children are parked)."""

    _real: type

    def __new__(cls, args: Any, execmodel: Any) -> Any:
        return cls._real(args, execmodel)


def _wait_and_serve(sock: socket.socket) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # until it is a worker: ^C is the parent's to handle
        message, fds, _flags, _address = socket.recv_fds(sock, 1 << 16, 3)
        if not fds:  # the parent ended without a worker for this child
            os._exit(0)
        gc.freeze()
        for fd, standard in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, standard)
            if fd > 2:
                os.close(fd)
        sock.close()
        forked._release_inherited_files()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.stdin = forked.io.TextIOWrapper(forked.io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = forked.io.TextIOWrapper(
            forked.io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True
        )
        sys.stderr = forked.io.TextIOWrapper(
            forked.io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
        )
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        atexit._clear()
        forked._default_warning_filters()
        root = forked.logging.getLogger()  # an unconfigured root, as in a new interpreter
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.setLevel(forked.logging.WARNING)
        sys.argv = ["-c"]
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(message.decode("utf-8"), "<string>", "exec"), main.__dict__)
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child must end here whatever happened
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)

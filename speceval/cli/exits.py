"""Exit codes (docs/generation.md#exit-codes) and the one wrapper that maps exceptions to them for every command."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple, NoReturn

from speceval.errors import BudgetExceeded, ProviderError, UnmatchedResultsError, UsageError


class ExitCode(IntEnum):
    """What a command's exit status means."""

    FINISHED = 0  # every request has a final outcome
    FAILED = 1  # an unexpected failure
    USAGE = 2  # bad input or usage; nothing was submitted
    STOPPED = 3  # work outstanding (timeout, Ctrl+C, budget); resume later


def exit_process(code: int) -> NoReturn:
    """End the process with `code`: what `raise SystemExit(main())` does, except in a process attached to Ray.

    There, the interpreter would next run Ray's exit hook, `ray.shutdown`, which destroys the driver's core worker
    while Ray Data's daemon threads (the Ray engine's driver thread, the streaming executor, the prefetchers) may
    still be inside a dataset; the first of them that reaches it ends the process with status 1 (Ray's "The core
    worker has already been shutdown ... The process will exit"). Under load an interrupted Ray run that had saved
    its state and returned 3 exited 1 that way in about 2 whole-suite runs out of 5. By the time a command returns,
    everything it keeps is on disk (the journal fsynced and no longer written to, results/ merged), so the process
    ends here, without the interpreter's teardown, with exactly `code`. A local cluster that `ray.init` started goes
    with its driver, as after a SIGKILL: its processes share the driver's fate (the kernel's parent-death signal,
    or Ray's reaper process where there is none); a cluster joined with `--ray-address` sees its driver leave.
    """
    import contextlib
    import logging
    import os
    import signal
    import sys

    ray = sys.modules.get("ray")  # looked up, not imported: a command that never needed Ray does not load it now
    if ray is None or not ray.is_initialized():
        raise SystemExit(code)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C now would only cut the last flush short
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can reach the reader anyway
            stream.flush()
    os._exit(code)


class _Expected(NamedTuple):
    """An expected failure of a command: how loud it is, its label on screen, whether the log keeps its traceback,
    and the exit code."""

    kind: type[Exception]
    level: int
    label: str
    traceback: bool
    code: ExitCode


def run_command(body: Callable[[], int]) -> int:
    """Run a command body, turning our exceptions into a message and an exit code (no traceback for users).

    Whatever stops the command also goes to the run's log file (when the command opened one) at ERROR or
    WARNING, with the traceback for provider and unexpected failures, so the cause survives the terminal; the
    message on the terminal says where that file is. The command's log handlers are closed on the way out.
    """
    from speceval.cli.console import close_logging
    from speceval.interrupts import interrupts_recorded

    try:
        with interrupts_recorded():
            return _run(body)
    finally:
        close_logging()


def _run(body: Callable[[], int]) -> int:
    # Imported here, not at the top: every parser imports this module, and --help needs none of them.
    import logging

    from rich.markup import escape

    from speceval.cli.console import FILE_ONLY, console, log_file
    from speceval.redaction import redact

    logger = logging.getLogger("speceval.cli")

    def report(level: int, label: str, text: str, *, traceback: bool) -> None:
        if logging.getLogger("speceval").handlers:  # else the command failed before its logging was set up
            logger.log(level, "%s %s", label, text, exc_info=traceback, extra=FILE_ONLY)
        where = log_file()
        style = "bold yellow" if level < logging.ERROR else "bold red"
        # The message is text, not markup: `pip install 'speceval[inspect]'` must keep its brackets.
        console.print(f"[{style}]{label}[/] {escape(text)}" + (f"\nDetails: {escape(str(where))}" if where else ""))

    # Expected failures, first match wins. An unmatched job is not unexpected (a job whose answers name none of its
    # requests): resuming would not help, nothing is resent.
    expected = (
        _Expected(UsageError, logging.ERROR, "error:", False, ExitCode.USAGE),
        _Expected(BudgetExceeded, logging.WARNING, "stopped:", False, ExitCode.STOPPED),
        _Expected(ProviderError, logging.ERROR, "provider error:", True, ExitCode.FAILED),
        _Expected(UnmatchedResultsError, logging.ERROR, "results not matched:", False, ExitCode.FAILED),
    )
    try:
        return body()
    except tuple(e.kind for e in expected) as exc:
        found = next(e for e in expected if isinstance(exc, e.kind))
        report(found.level, found.label, redact(str(exc)), traceback=found.traceback)
        return found.code
    except Exception as exc:  # the last line of defence: the traceback goes to the run's log, one line on screen
        report(logging.ERROR, "unexpected failure:", f"{type(exc).__name__}: {redact(str(exc))}", traceback=True)
        return ExitCode.FAILED

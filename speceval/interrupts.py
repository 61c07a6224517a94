"""Ctrl+C that is never lost.

Python raises KeyboardInterrupt wherever the main thread happens to be when the signal is handled. If that is a
finalizer (a `__del__`, a weakref callback, the garbage collector's), the exception is printed as "Exception
ignored" and the interrupt is gone: the run goes on to its end as if Ctrl+C had not been pressed (seen once in the
suite: an experiment interrupted while its jobs ran exited 0). So the command line's handler also records the
request, and the engines' polling loop (`speceval.batch.loop`) raises it again at its next round.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_requested = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _requested.set()
    raise KeyboardInterrupt


@contextmanager
def interrupts_recorded() -> Iterator[None]:
    """While a command runs: Ctrl+C raises KeyboardInterrupt as always, and is recorded for `raise_if_requested`.
    Only the main thread can handle signals; elsewhere (a library caller's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # started with Ctrl+C ignored (e.g. in the background): leave it so
        yield
        return
    _requested.clear()
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested.clear()


def raise_if_requested() -> None:
    """Raise KeyboardInterrupt if Ctrl+C was pressed and not yet raised where it could stop the run (once)."""
    if _requested.is_set():
        _requested.clear()
        raise KeyboardInterrupt

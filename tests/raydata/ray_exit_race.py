"""`python -m tests.raydata.ray_exit_race MODULE ARGS...`: run a command module as `python -m MODULE ARGS...`
would, except that Ray's exit-time teardown, if it runs at all, always loses the race it loses now and then.

`ray.shutdown`, which Ray registers with `atexit`, destroys the driver's core worker and then stops the local
cluster. Ray Data's daemon threads (the Ray engine's driver thread, the streaming executor, the prefetchers) may
still be inside a dataset then, and the first of them that reaches the destroyed core worker ends the process
with status 1 (Ray's "The core worker has already been shutdown ... The process will exit", `_Exit(1)`). Under
load an interrupted `--org ray` run lost that race in about 2 whole-suite runs out of 5: it had saved its state
and returned 3, and exited 1. Here the teardown ends the process with status 1 at exactly that point, every time,
so a command that leaves Ray's shutdown to the interpreter fails on every run instead of now and then.
"""

from __future__ import annotations

import os
import runpy
import sys

LOSING_THE_EXIT_RACE = ("tests.raydata.ray_exit_race",)
"""`python -m *LOSING_THE_EXIT_RACE MODULE ARGS...` runs `python -m MODULE ARGS...` through this module."""

RAY_LOST_THE_RACE = 1  # the status Ray's core worker exits with when touched after it was destroyed


def _lose_the_race() -> None:
    # Imported here: the tests import this module for LOSING_THE_EXIT_RACE, and must skip, not fail, without Ray.
    import ray._private.state
    import ray._private.worker

    state = ray._private.state.state
    disconnect = state.disconnect

    def disconnect_then_exit() -> None:
        disconnect()
        driver = ray._private.worker.global_worker
        # Inside a `ray.shutdown` of a started Ray (its mode is reset only at the end), the core worker destroyed;
        # the shutdown Ray runs at exit when it was never started has nothing to race with.
        if driver.mode is not None and not hasattr(driver, "core_worker"):
            sys.stderr.write("ray_exit_race: Ray's exit-time shutdown ran after its core worker was destroyed\n")
            sys.stderr.flush()
            os._exit(RAY_LOST_THE_RACE)

    # `ray.shutdown` calls `ray._private.state.state.disconnect()` right after destroying the core worker.
    state.disconnect = disconnect_then_exit  # type: ignore[method-assign]


if __name__ == "__main__":
    _lose_the_race()
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)

"""Run a Python module or script in this process and report its wall time and peak memory as JSON on stderr.

    python benchmarks/_measure.py OUT.json -m batched_examples.run_batched_generation ARGS...
    python benchmarks/_measure.py OUT.json path/to/script.py ARGS...

Used by the benchmarks so that every measured program is timed and sized the same way. Peak memory is the
high-water mark of this process's own address space (`VmHWM` in /proc/self/status). Not `ru_maxrss`: on Linux
that survives execve, so a child forked from a big parent (the benchmark holds the emulator and its files)
would report the parent's size.
"""

from __future__ import annotations

import json
import resource
import runpy
import sys
import time


def main() -> None:
    out = sys.argv[1]
    if sys.argv[2] == "-m":
        target, args, as_module = sys.argv[3], sys.argv[4:], True
    else:
        target, args, as_module = sys.argv[2], sys.argv[3:], False
    sys.argv = [target, *args]
    start = time.perf_counter()
    code = 0
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    elapsed = time.perf_counter() - start
    peak_kib = _vm_hwm_kib()
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this process's CPU: steadier than wall time on a loaded machine
    cpu = usage.ru_utime + usage.ru_stime
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"seconds": elapsed, "cpu_seconds": cpu, "peak_mib": peak_kib / 1024, "exit_code": code}, handle)
    sys.exit(code)


def _vm_hwm_kib() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # not Linux: the best there is


if __name__ == "__main__":
    main()

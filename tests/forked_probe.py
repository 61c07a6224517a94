"""A module for tests/unit/test_forked.py: does what its first argument says, as `python -m tests.forked_probe`."""

import contextlib
import json
import os
import signal
import sys
import time
import warnings


def open_files() -> set[str]:
    """What this process's descriptors above 2 point at (the listing's own descriptor is gone when it is read)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            with contextlib.suppress(OSError):
                found.add(os.readlink(f"/proc/self/fd/{name}"))
    return found


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "report":  # what a new interpreter would show
        warnings.warn("deprecated", DeprecationWarning, stacklevel=1)
        print(
            json.dumps(
                {
                    "cwd": os.getcwd(),
                    "probe": os.environ.get("PROBE"),
                    "argv": sys.argv[1:],
                    "stdin": sys.stdin.read(),
                    "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
                    "files": sorted(open_files()),
                }
            )
        )
        print("to stderr", file=sys.stderr)
    elif what == "exit":
        sys.exit(int(sys.argv[2]))
    elif what == "raise":
        raise RuntimeError("probe failed")
    elif what == "wait":  # until a signal ends it
        print("waiting", flush=True)
        time.sleep(60)

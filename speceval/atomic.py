"""Atomic writes: a reader (or a resumed run after a crash) sees the old file or the new one, never half of one.

The temp file lives in the destination folder so that `os.replace` is a rename within one file system, and it is
fsynced before the rename so that a power loss cannot leave a renamed but empty file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically, creating parent folders as needed."""
    atomic_write_lines(path, (data,))


def atomic_write_lines(path: Path, lines: Iterable[bytes]) -> int:
    """Stream `lines` (each already ending in a newline) into `path` atomically; returns the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, file_mode())  # mkstemp makes 0600; the result should read like any file the user writes
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for line in lines:
                handle.write(line)
                written += len(line)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        # Also on KeyboardInterrupt: never leave temp files lying around in a run directory.
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return written


def file_mode() -> int:
    """0666 less the process's umask: the mode `open()` would give a new file (mkstemp always gives 0600)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc (not Linux): read the umask by setting it, and put it back at once
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_json(path: Path, value: BaseModel | Any) -> None:
    """Write a pydantic model (or plain JSON value) as UTF-8 JSON, atomically."""
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)
    atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def _fsync_dir(directory: Path) -> None:
    # The rename itself is only durable once the directory entry is flushed.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems (and Windows) do not support fsync on directories; the rename still happened
    finally:
        os.close(fd)

"""inspect_ai's own log reader, imported at the first call: importing inspect_ai takes seconds of CPU, and every
pytest-xdist worker imports every test module at collection, also the workers that run no interop test."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalLogInfo


def list_eval_logs(log_dir: str) -> list[EvalLogInfo]:
    """`inspect_ai.log.list_eval_logs`."""
    from inspect_ai.log import list_eval_logs as inspect_list

    return inspect_list(log_dir)


def read_eval_log(log_file: str, header_only: bool = False) -> EvalLog:
    """`inspect_ai.log.read_eval_log`."""
    from inspect_ai.log import read_eval_log as inspect_read

    return inspect_read(log_file, header_only=header_only)

"""Exit codes (DESIGN §5) and the one wrapper that maps exceptions to them for every command."""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import IntEnum

from speceval.errors import BudgetExceeded, ProviderError, UsageError
from speceval.redaction import redact

logger = logging.getLogger("speceval.cli")


class ExitCode(IntEnum):
    """What a command's exit status means."""

    FINISHED = 0  # every request has a final outcome
    FAILED = 1  # an unexpected failure
    USAGE = 2  # bad input or usage; nothing was submitted
    STOPPED = 3  # work outstanding (timeout, Ctrl+C, budget); resume later


def run_command(body: Callable[[], int]) -> int:
    """Run a command body, turning our exceptions into a message and an exit code (no traceback for users)."""
    from speceval.cli.console import console

    try:
        return body()
    except UsageError as exc:
        console.print(f"[bold red]error:[/] {redact(str(exc))}")
        return ExitCode.USAGE
    except BudgetExceeded as exc:
        console.print(f"[bold yellow]stopped:[/] {redact(str(exc))}")
        return ExitCode.STOPPED
    except ProviderError as exc:
        console.print(f"[bold red]provider error:[/] {redact(str(exc))}")
        return ExitCode.FAILED
    except Exception as exc:  # the last line of defence: log the traceback to the run's log, show one line
        logger.debug("unexpected failure", exc_info=True)
        console.print(f"[bold red]unexpected failure:[/] {type(exc).__name__}: {redact(str(exc))}")
        return ExitCode.FAILED

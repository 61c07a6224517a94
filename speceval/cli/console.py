"""Everything the command line shows a person: logging setup, live progress, the final summary table.

The library never prints; it logs to the `speceval` logger and reports progress to an `EngineObserver`. This
module is the one place that turns both into terminal output.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import IO, cast

from rich.console import Console, ConsoleDimensions
from rich.logging import RichHandler
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.batch.records import BatchRecord, Outcome
from speceval.errors import InputError
from speceval.redaction import RedactingFilter, RedactingWriter

# Marks a record for the log file only (`logger.error(..., extra=FILE_ONLY)`): the terminal already shows a
# one-line message for it, and a traceback there helps nobody unless --verbose asked for it.
FILE_ONLY = {"speceval_file_only": True}
# The loggers a command's handlers serve: ours, and the one `logging.captureWarnings` sends warnings to.
_OUR_LOGGERS = ("speceval", "py.warnings")


class _RedactingConsole(Console):
    """A rich console whose every write passes through `redact` (prints, log lines, progress, tracebacks)."""

    @property
    def file(self) -> IO[str]:
        """The stream rich resolved (stderr or stdout at the time of writing), behind a redacting writer."""
        return cast(IO[str], RedactingWriter(super().file))

    @file.setter
    def file(self, new_file: IO[str]) -> None:
        self._file = new_file

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size; when the output is a file or a pipe, wide enough that no table is cut at 80
        columns (a log or a CI transcript keeps every column; an explicit COLUMNS still wins, and then cells wrap)."""
        found = super().size
        if not self.is_terminal and "COLUMNS" not in os.environ:
            return ConsoleDimensions(max(found.width, _PIPE_WIDTH), found.height)
        return found

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


_PIPE_WIDTH = 200


console: Console = _RedactingConsole(stderr=True, highlight=False, soft_wrap=True)
stdout: Console = _RedactingConsole(highlight=False, soft_wrap=True)


class _ScreenFilter(logging.Filter):
    """Keeps file-only records off the terminal unless --verbose."""

    def __init__(self, verbose: bool):
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        return self.verbose or not getattr(record, "speceval_file_only", False)


class _OnceFilter(logging.Filter):
    """One warning per cause on the terminal: a warning whose text was shown already in this command is not shown
    again (a setting refused by a provider is found once per client built, which can be a dozen times a run; the
    log file keeps every one)."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        if key in self.shown:
            return False
        self.shown.add(key)
        return True


def setup_logging(verbose: bool, log_file: Path | None = None) -> None:
    """Console logging (warnings, or debug with --verbose) and, when given, a full log file in the run.

    The file always gets INFO and above, including file-only errors with their (redacted) tracebacks; with
    --verbose it gets DEBUG too. Every handler redacts credentials. Python warnings (an SDK's or pydantic's, which
    may quote a value such as a key) and exceptions escaping a thread go through the same handlers instead of
    straight to stderr.
    """
    close_logging()
    screen = RichHandler(console=console, show_path=False, show_time=verbose)
    screen.setLevel(logging.DEBUG if verbose else logging.WARNING)
    screen.addFilter(RedactingFilter())
    screen.addFilter(_ScreenFilter(verbose))
    screen.addFilter(_OnceFilter())
    handlers: list[logging.Handler] = [screen]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(log_file, encoding="utf-8")
        to_file.setLevel(logging.DEBUG if verbose else logging.INFO)
        to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        to_file.addFilter(RedactingFilter())
        handlers.append(to_file)
    for name in _OUR_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        for handler in handlers:
            logger.addHandler(handler)
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    logging.getLogger("speceval").error(
        "uncaught exception in thread %s",
        args.thread.name if args.thread else "?",
        exc_info=args.exc_value or True,
    )


def log_file() -> Path | None:
    """The file the current command logs to, if any (so a failure message can point to it)."""
    for handler in logging.getLogger("speceval").handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


def report_stop(text: str, last_line: str | None = None) -> None:
    """Print why a command stopped with work outstanding (rich markup allowed) and keep it in the log file;
    `last_line` (a budget stop's figures) is printed last, after the log's path."""
    logging.getLogger("speceval.cli").warning("%s", Text.from_markup(text).plain.strip(), extra=FILE_ONLY)
    where = log_file()
    console.print(text + (f"\nLog: {where}" if where else ""))
    if last_line is not None:
        logging.getLogger("speceval.cli").warning("%s", last_line, extra=FILE_ONLY)
        console.print(last_line, markup=False)


def close_logging() -> None:
    """Remove and close this command's handlers (a next command in the same process starts clean)."""
    for name in _OUR_LOGGERS:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.propagate = True
    logging.captureWarnings(False)
    threading.excepthook = threading.__excepthook__


class ProgressObserver(EngineObserver):
    """Draws one progress bar: requests with a final outcome, out of all, plus the active job count."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[jobs]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # rich's default redraws from a thread 10 times a second, building the bar's table each time even when
            # stderr is a file or a pipe (where nothing is drawn until the end): 5.5 ms of CPU a second of wall
            # time, so a run slowed by a loaded machine paid for it twice (0.8 s of CPU in a 140 s generation
            # run, 14% of its floor's whole CPU). A pipe gets no redraw thread (the engine's own updates and the
            # final bar suffice); a terminal twice a second, enough for the elapsed-seconds column.
            auto_refresh=console.is_terminal,
            refresh_per_second=2,
        )
        self._task = self._progress.add_task("requests", total=None, jobs="")

    def __enter__(self) -> ProgressObserver:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def _show(self, summary: EngineSummary) -> None:
        done = summary.total_requests - summary.outstanding
        self._progress.update(
            self._task, total=summary.total_requests, completed=done, jobs=f"{summary.active_jobs} job(s) active"
        )

    def started(self, summary: EngineSummary) -> None:
        self._show(summary)

    def _say(self, text: str) -> None:
        self._progress.console.print(f"[dim]{datetime.now():%H:%M:%S}[/] {text}")

    def job_submitted(self, record: BatchRecord) -> None:
        self._say(f"submitted {record.batch_id} ({record.request_count} requests)")

    def job_collected(self, record: BatchRecord) -> None:
        counts = ", ".join(f"{n} {o.value}" for o, n in sorted(record.outcome_counts.items()))
        self._say(f"collected {record.batch_id}: {counts or 'nothing new'}")

    def waiting(self, seconds: float, summary: EngineSummary) -> None:
        self._show(summary)

    def finished(self, summary: EngineSummary) -> None:
        self._show(summary)


def summary_table(summary: EngineSummary, title: str) -> Table:
    """The final table: requests per outcome, jobs, tokens."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("outcome")
    table.add_column("requests", justify="right")
    for outcome in Outcome:
        table.add_row(outcome.value, str(summary.outcome_counts.get(outcome, 0)))
    table.add_row("not final yet", str(summary.outstanding), style="yellow" if summary.outstanding else None)
    table.add_section()
    table.add_row("total requests", str(summary.total_requests))
    table.add_row("provider jobs", str(summary.jobs))
    table.add_row("input tokens", f"{summary.usage.input_tokens:,}")
    table.add_row("output tokens", f"{summary.usage.output_tokens:,}")
    return table


def run_heading(run_dir: str, kind: str, provider: str, model: str) -> Text:
    """The line naming a run in the operations tables: its last three folders, kind, provider and model in full,
    and inside an experiment its spec, variation and run (two runs of one model differ by those alone).

    Printed with `soft_wrap=False` it wraps at the terminal's width (long names fold), so no name is ever cut.
    """
    parts = Path(run_dir).parts
    short = str(Path(*parts[-3:])) if len(parts) > 3 else run_dir
    place = experiment_place(Path(run_dir))
    return Text.assemble((short, "bold"), f"  {kind} · {provider} · ", (model, "bold"), f"  [{place}]" if place else "")


def experiment_place(run_dir: Path) -> str | None:
    """'spec S · variation V · run K' for a run inside an experiment folder (`<stage>/<spec>/<variation>/run<k>/`
    below `experiment.json`; the variation's name as the experiment file gives it); None elsewhere."""
    # Imported here: `speceval.analysis` imports the whole report with numpy (~0.4 s and 17 MiB), which every
    # command showing this console (a generation run among them) would pay at start-up for this one function.
    from speceval.analysis.reading.grid_place import grid_place

    try:
        place = grid_place(run_dir)
    except InputError as exc:  # the jobs are still worth showing; say why the place is missing
        return f"experiment.json unreadable: {exc}"
    return None if place is None else f"spec {place.spec_folder} · variation {place.variation} · run {place.run}"


def synthetic_banner() -> Panel:
    """The loud notice that an offline run's answers are not real model output."""
    return Panel(
        "OFFLINE RUN: answers come from the built-in speceval emulator.\n"
        "They are SYNTHETIC placeholders, not model output.\n"
        "Do not use them as results.",
        style="bold yellow",
        title="synthetic answers",
    )

"""One warning per cause on the terminal (issue #35): the same warning raised by every client a run builds is shown
once; a warning with another cause is shown too; the log file keeps every one."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from speceval.cli.console import close_logging, setup_logging


def test_a_repeated_warning_is_shown_once_and_logged_every_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.log"
    setup_logging(verbose=False, log_file=path)
    try:
        logger = logging.getLogger("speceval.providers.anthropic_sampling")
        for _ in range(13):
            logger.warning("claude-x: temperature %g is not sent", 0.7)
        logger.warning("claude-x: temperature %g is not sent", 0.0)
        logging.getLogger("speceval.cli").error("an error")
        logging.getLogger("speceval.cli").error("an error")
    finally:
        close_logging()
    err = capsys.readouterr().err
    assert err.count("temperature 0.7 is not sent") == 1 and err.count("temperature 0 is not sent") == 1
    assert err.count("an error") == 2  # errors are never folded
    assert path.read_text(encoding="utf-8").count("temperature 0.7 is not sent") == 13

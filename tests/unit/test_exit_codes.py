"""How a command's failures become exit codes and one line on the terminal."""

from __future__ import annotations

import pytest

from speceval.cli.exits import ExitCode, run_command
from speceval.errors import UnmatchedResultsError


def test_a_job_whose_answers_match_nothing_is_named_not_reported_as_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise UnmatchedResultsError("vertex", "projects/p/locations/l/batchPredictionJobs/42", 7, "gs://out/42/")

    assert run_command(body) == ExitCode.FAILED
    said = capsys.readouterr()
    text = said.out + said.err
    assert "results not matched" in text and "batchPredictionJobs/42" in text
    assert "unexpected failure" not in text and "Traceback" not in text

"""The house style is checked, not hoped for: `ruff check` and `ruff format --check` pass on every Python file of
the package, tests, benchmarks and examples (docs/architecture.md, Habits). mypy --strict is run by hand (about 40 s
of CPU, too much for the suite's budget): `.venv/bin/python -m mypy speceval`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

TREES = ["speceval", "tests", "benchmarks", "batched_examples"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_is_clean(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *TREES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]

"""Every command the README and docs/ show is a real command with real flags.

For each line of a ```bash block that runs `python -m batched_examples.<script>` or `speceval <subcommand>`, the
script or subcommand must exist and every `--flag` on the line must appear in its `--help`. (The offline
walk-throughs are also run verbatim: tests/e2e/test_judging_cli.py and tests/library/test_readme_library.py.)
The README's two set-up commands must come first, exactly as CI runs them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache

import pytest

from tests import forked
from tests.conftest import REPO, cli_env

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def shown_commands() -> list[tuple[str, str, str]]:
    """(page, command target, the whole command line) for every speceval command in a bash block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("#", 1)[0] if not line.lstrip().startswith("python3 -m venv") else line
                for part in re.split(r"&&|;|\|", line):
                    words = part.split()
                    if "-m" in words and words.index("-m") + 1 < len(words):
                        target = words[words.index("-m") + 1]
                        if target.startswith("batched_examples."):
                            found.append((page.name, target, part.strip()))
                        elif target == "speceval" and words.index("-m") + 2 < len(words):
                            found.append((page.name, f"speceval {words[words.index('-m') + 2]}", part.strip()))
                    elif words and words[0] == "speceval" and len(words) > 1:
                        found.append((page.name, f"speceval {words[1]}", part.strip()))
    return found


@cache
def help_text(target: str) -> str:
    module, *sub = target.split()
    argv = [sys.executable, "-m", module, *sub, "--help"]
    # Forked (tests/forked.py): a process with its own exit code and stdout, without a new interpreter's SDK imports
    # (0.1 s of CPU each, 17 commands). The help text is the parser's, whichever interpreter prints it.
    done = forked.run(
        argv, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"{target} --help failed: {done.stderr[-500:]}"
    return done.stdout


def test_the_docs_show_commands():
    assert len(shown_commands()) >= 20


FLAG = r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])"
"""A long option as a whole token (not a prefix of a longer one)."""


@pytest.mark.parametrize("page,target,line", shown_commands())
def test_every_shown_command_and_flag_exists(page, target, line):
    # Whole flags, not substrings: `--max-samples-per-log` must not pass because `--max-samples-per-logx` exists.
    known = set(re.findall(FLAG, help_text(target)))
    for flag in re.findall(FLAG, line):
        assert flag in known, f"{page}: {flag} is not a flag of {target} (line: {line})"


def test_the_readme_starts_with_the_two_setup_commands_and_stays_short():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    assert blocks[0].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && ")
    assert blocks[1].strip() == ".venv/bin/python -m pytest -q"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest -q" in ci
    assert len(text.splitlines()) <= 150


def test_the_statistics_api_examples_run():
    import doctest

    import speceval.analysis

    failures, tried = doctest.testmod(speceval.analysis)
    assert tried >= 3 and failures == 0

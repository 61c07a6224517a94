"""docs/spec-health.md's worked example, run verbatim offline: the shipped OpenAI spec, three candidates, two judges;
`statement_health.csv` holds every statement, labelled synthetic, with the numbers the page quotes."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests import forked
from tests.conftest import REPO, cli_env


def walkthrough() -> tuple[str, list[str]]:
    text = (REPO / "docs" / "spec-health.md").read_text(encoding="utf-8")
    after = text.split("<!-- spec-health-walkthrough:", 1)[1]
    block = after.split("```bash\n", 1)[1].split("```", 1)[0]
    return after, [c.strip() for c in block.splitlines() if c.strip()]


def test_the_spec_health_walkthrough_runs_verbatim_and_shows_what_the_page_quotes(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data", tmp_path / "data")
    shutil.copytree(REPO / "batched_examples" / "configs", tmp_path / "batched_examples" / "configs")
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    page, commands = walkthrough()
    assert len(commands) == 2
    for command in commands:
        done = forked.run_shell(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, (command, done.stderr[-3000:])
    report = tmp_path / "demo" / "spec_health" / "report"
    with (report / "statement_health.csv").open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["kind"] == "statement"]
    assert len(rows) == 8 and all(row["data"] == "synthetic" for row in rows)
    quoted = re.findall(
        r"^(\d+)\s+(\S+)\s+(\S+(?:; \S+)?)\s+(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]\s+(-?\d\.\d{3})$",
        page.split("```\nrank", 1)[1].split("```", 1)[0],
        re.M,
    )
    assert len(quoted) == 2
    for rank, statement, flags, share, low, high, kappa in quoted:
        row = rows[int(rank) - 1]
        assert row["statement_id"] == statement and row["flags"] == flags
        assert [
            f"{float(row[k]):.3f}" for k in ("disagreement", "disagreement_ci_low", "disagreement_ci_high", "kappa")
        ] == [share, low, high, kappa]
    health = (report / "summary.md").read_text(encoding="utf-8").split("## Spec health", 1)[1].split("\n## ", 1)[0]
    cells = [line.split(" | ") for line in health.splitlines() if line.startswith("| openai |")]
    assert cells and all(re.fullmatch(r"-?\d\.\d{3} \[.+, .+\]|n/a.*", row[4]) for row in cells), cells[:2]
    with (report.parent / "report_strict" / "statement_health.csv").open(encoding="utf-8", newline="") as handle:
        strict = {row["statement_id"]: row for row in csv.DictReader(handle) if row["kind"] == "statement"}
    assert strict["avoid_regulated_advice"]["flags"] == "judge_unreliable"  # the higher line, as the page says

"""docs/experiments.md as a new user reads it: its first command (the example study, offline), then its dry-run block,
verbatim and in that order. The dry run after the offline run was refused (exit 2: the folder holds synthetic
answers) until the page added `--offline`; the plan it prints counts what the run sent, and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import REPO, cli_env


def block_after(text: str, marker: str) -> list[str]:
    block = text.split(f"<!-- {marker}", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def files_under(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_mtime_ns for path in folder.rglob("*")}


@pytest.mark.slow  # a whole experiment: 8 generation runs, 9 judge runs, 8 rankings and a report (13 s loaded)
def test_the_experiments_page_runs_verbatim_in_order(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data", tmp_path / "data")
    shutil.copytree(REPO / "batched_examples" / "configs", tmp_path / "batched_examples" / "configs")
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    page = (REPO / "docs" / "experiments.md").read_text(encoding="utf-8")
    study, plan = block_after(page, "experiments-walkthrough:"), block_after(page, "experiments-walkthrough-dry-run")
    assert len(study) == 1 and len(plan) == 2

    def run(command: str) -> subprocess.CompletedProcess[str]:
        done = forked.run_shell(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, (command, done.stderr[-3000:])
        return done

    ran = run(study[0])
    out = tmp_path / "demo" / "experiment"
    # The page: run 2 of an offline study is a copy of run 1, and a warning says so.
    assert "run 2 is a copy of run 1" in ran.stderr
    experiment = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    assert experiment["status"] == "finished" and experiment["naming"] == 2
    assert experiment["folders"] == {"temperature_0.0": "temperature-0.0", "temperature_0.7": "temperature-0.7"}
    sent: dict[str, int] = {}
    for stage, folder in (("generation", "generations"), ("compliance", "compliance"), ("ranking", "ranking")):
        manifests = list((out / folder).rglob("run.json"))
        sent[stage] = sum(json.loads(m.read_text(encoding="utf-8"))["totals"]["total_requests"] for m in manifests)
    assert len(list((out / "generations").glob("openai/*/run*/*/run.json"))) == 2 * 2 * 2  # the comment's grid

    before = files_under(tmp_path)
    shown = run(plan[0])
    assert "precision plan" in shown.stdout and "MDD" in shown.stdout
    planned = json.loads(run(plan[1]).stdout)
    assert {stage["stage"]: stage["requests"] for stage in planned["stages"]} == sent
    assert files_under(tmp_path) == before  # "sends nothing and writes nothing"

"""The README's offline chain, run verbatim as a user would: generate two candidates, judge compliance, rank."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests import forked
from tests.conftest import REPO, cli_env, doc_text


def readme_commands() -> list[str]:
    text = doc_text()
    block = text.split("<!-- readme-offline-chain:", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip()]


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return forked.run_shell(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )


def jobs(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("**/metadata/*.json"))


def test_readme_offline_chain_runs_verbatim_with_exit_codes(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data", tmp_path / "data")
    shutil.copytree(REPO / "batched_examples" / "configs", tmp_path / "batched_examples" / "configs")
    commands = readme_commands()
    assert len(commands) == 4 and commands[0].startswith("python -m batched_examples.run_batched_generation")
    for command in commands:
        done = run(command, tmp_path)
        assert done.returncode == 0, (command, done.stderr[-3000:])
        assert "SYNTHETIC" in done.stderr

    compliance = tmp_path / "demo/compliance/spec_openai/judge_gpt-4.1-2025-04-14"
    assert sorted(p.name for p in compliance.iterdir() if p.is_dir() and not p.name.startswith(".")) == [
        "claude-haiku-4-5-20251001",
        "gpt-4.1-mini-2025-04-14",
        "logs",
    ]
    for candidate in ("claude-haiku-4-5-20251001", "gpt-4.1-mini-2025-04-14"):
        summary = json.loads((compliance / candidate / "summary.json").read_text())
        assert summary["model"] == candidate and summary["outcomes"]["judged"] > 30
        assert summary["outcomes"]["pending"] == 0 and summary["skipped_answers"] == {}
        result = json.loads((compliance / candidate / "results" / "do_not_lie.json").read_text())
        assert result["metadata"]["model"] == candidate and len(result["results"]) == 5
        assert all(
            r["output"].startswith(f"[synthetic answer from the speceval emulator; model={candidate}]")
            for r in result["results"]
        )
    rankings = tmp_path / "demo/rankings/spec_openai/judge_gpt-4.1-2025-04-14"
    pair = rankings / "gpt-4.1-mini-2025-04-14xclaude-haiku-4-5-20251001"
    content = json.loads((pair / "results" / "avoid_errors.json").read_text())
    assert (content["metadata"]["model_a"], content["metadata"]["model_b"]) == (
        "gpt-4.1-mini-2025-04-14",
        "claude-haiku-4-5-20251001",
    )
    assert all("model=gpt-4.1-mini" in r["output_a"] and "model=claude" in r["output_b"] for r in content["rankings"])
    report = json.loads((rankings / "position_consistency.json").read_text())
    assert report["consistent"] + report["inconsistent"] + report["incomplete"] == 40

    # Running a judge command again resumes: exit 0, no new job, the same verdicts.
    before_jobs, before = jobs(compliance), (compliance / "gpt-4.1-mini-2025-04-14/results/do_not_lie.json").read_text()
    again = run(commands[2], tmp_path)
    assert again.returncode == 0, again.stderr
    assert jobs(compliance) == before_jobs
    assert (compliance / "gpt-4.1-mini-2025-04-14/results/do_not_lie.json").read_text() == before

    # Changing what would be judged in the same output directory is refused (exit 2), nothing is sent.
    changed = run(commands[2] + " --mode likert", tmp_path)
    assert changed.returncode == 2 and "other settings" in changed.stderr and "Traceback" not in changed.stderr
    assert jobs(compliance) == before_jobs

    likert = run(commands[2] + " --mode likert --output-dir-base demo/likert", tmp_path)
    assert likert.returncode == 0, likert.stderr
    files = list((tmp_path / "demo/likert").glob("spec_openai/judge_*/*/results/*.json"))
    ratings = [r["rating"] for f in files for r in json.loads(f.read_text())["results"] if r["outcome"] == "judged"]
    assert ratings and set(ratings) <= {1, 2, 3, 4, 5}

    bad = tmp_path / "bad.yaml"
    bad.write_text((tmp_path / "batched_examples/configs/ranking_offline.yaml").read_text() + "judge_org: openai\n")
    typo = run(re.sub(r"--config-file \S+", f"--config-file {bad}", commands[3]), tmp_path)
    assert typo.returncode == 2 and "judge_org" in typo.stderr and "unknown key" in typo.stderr

"""`speceval run EXPERIMENT.yaml`: a 2 candidates × 2 variations × 2 runs × 1 judge grid, offline, end to end;
SIGKILL midway then resume submits nothing twice; bad files exit 2 before anything is submitted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from speceval.cli.main import main as speceval_main
from speceval.emulator import Emulator
from speceval.experiments.config import json_schema
from tests import forked
from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC, cli_env

GRID = f"""experiment_name: grid
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: gpt-4.1-mini-2025-04-14
  - model: claude-haiku-4-5-20251001
judges:
  - model: gpt-4.1-2025-04-14
variations:
  temperature: [0.0, 0.7]
runs_per_variation: 2
"""
# Per group (4): 2 generation jobs (one per candidate), 2 compliance jobs, 2 ranking jobs (both orders); once: the
# judge's canary job (the spec's example responses).
EXPECTED_JOBS = {"openai": 4 + 8 + 8 + 1, "anthropic": 4}


def server_jobs(out: Path) -> dict[str, list]:
    with Emulator(state_dir=out / ".emulator") as emu:
        return {p: emu.list_jobs(p) for p in ("openai", "anthropic")}


def assert_each_chunk_paid_once(jobs: dict[str, list]) -> None:
    assert {p: len(j) for p, j in jobs.items()} == EXPECTED_JOBS
    keys = Counter(job.metadata.get("speceval_key") for job in jobs["openai"])
    assert max(keys.values()) == 1


def test_grid_runs_every_stage_offline_and_a_rerun_submits_nothing(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    out = tmp_path / "out"
    state = json.loads((out / "experiment.json").read_text())
    assert state["stages_done"] == ["generation", "compliance", "ranking", "report"]
    assert state["variations"] == {"temperature_0.0": {"temperature": 0.0}, "temperature_0.7": {"temperature": 0.7}}
    assert state["folders"] == {"temperature_0.0": "temperature-0.0", "temperature_0.7": "temperature-0.7"}
    assert {Path(d).relative_to(out).parts[2] for d in state["generation_runs"]} == {
        "temperature-0.0",
        "temperature-0.7",
    }
    assert len(state["generation_runs"]) == 8
    variation_of = {folder: name for name, folder in state["folders"].items()}
    for run_dir in state["generation_runs"]:
        manifest = json.loads((Path(run_dir) / "run.json").read_text())
        assert manifest["status"] == "finished"
        _, _, folder, repeat, _ = Path(run_dir).relative_to(out).parts  # generations/spec/variation/runK/model
        variation = variation_of[folder]
        assert manifest["parameters"]["experiment"] == {
            "name": "grid",
            "variation": variation,
            "settings": state["variations"][variation],
            "run": int(repeat.removeprefix("run")),
        }
    assert (out / "report" / "report.html").is_file()
    rankings = list((out / "ranking").rglob("results/*.json"))
    assert {json.loads(p.read_text())["metadata"]["model_a"] for p in rankings} == {
        "gpt-4.1-mini-2025-04-14",
        "claude-haiku-4-5-20251001",
    }
    before = server_jobs(out)
    assert_each_chunk_paid_once(before)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    assert {p: len(j) for p, j in server_jobs(out).items()} == EXPECTED_JOBS


def start_until_jobs(command: list[str], out: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`command` running in a child, returned once some generation run has a job on the server."""
    proc = forked.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not list(out.glob("generations/*/*/*/*/metadata/*.json")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return proc


def test_sigkill_midway_then_resume_submits_nothing_twice(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    command = [sys.executable, "-m", "speceval", "run", str(experiment), "--offline"]
    out = tmp_path / "out"
    # Kill once some, but not all, generation runs have jobs on the server.
    proc = start_until_jobs(command, out, cli_env())
    proc.kill()
    proc.wait()
    done = forked.run(
        command, cwd=REPO, env=cli_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert_each_chunk_paid_once(server_jobs(out))
    assert json.loads((out / "experiment.json").read_text())["status"] == "finished"


def test_typo_and_unknown_model_exit_2_with_file_line_and_key(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"

    def line_of(text: str, needle: str) -> int:
        return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)

    typo = GRID.replace("runs_per_variation: 2", "runs_per_variaton: 2")
    experiment.write_text(typo)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    err = capsys.readouterr().err
    assert str(experiment) in err and f"line {line_of(typo, 'runs_per_variaton')}" in err
    assert "'runs_per_variaton'" in err
    unknown = GRID.replace("claude-haiku-4-5-20251001", "mystery-model-7")
    experiment.write_text(unknown)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    err = capsys.readouterr().err
    assert f"line {line_of(unknown, 'mystery-model-7')}" in err and "candidates[1].model" in err
    assert not (tmp_path / "out").exists()


def test_shipped_json_schema_matches_the_model():
    shipped = (REPO / "speceval" / "data" / "experiment.schema.json").read_text()
    assert shipped == json_schema()

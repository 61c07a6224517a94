"""The operations around a conversation run: a dry run plans round 1 (later rounds are built from its answers) and a
resume submits exactly those files; fetch points to what works for a run kept in rounds, cancel reaches its rounds'
jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import forked
from tests.conftest import REPO, cli_env, only_run_dir, run_generation, write_spec


def _speceval(*argv: str) -> subprocess.CompletedProcess[str]:
    return forked.run(
        [sys.executable, "-m", "speceval", *argv],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_dry_run_plans_round_one_and_the_resume_sends_exactly_it(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "alpha.json").write_text(json.dumps({"inputs": ["plain", {"turns": ["t1", "t2"]}]}), encoding="utf-8")
    planned = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            "gpt-4.1-mini-2025-04-14",
            "--output-base-dir",
            str(tmp_path / "out"),
            "--offline",
            "--dry-run",
        ],
        cli_env(),
    )
    assert planned.returncode == 0, planned.stderr
    run_dir = only_run_dir(tmp_path / "out")
    (request_file,) = (run_dir / "rounds" / "1" / "preprocessed").glob("*.jsonl")
    planned_bytes = request_file.read_bytes()
    assert len(planned_bytes.splitlines()) == 2 and not (run_dir / "rounds" / "2").exists()
    assert "dry run: 1 job(s), nothing submitted" in planned.stdout

    fetched = _speceval("fetch", str(run_dir))
    assert fetched.returncode == 2 and f"speceval resume {run_dir}" in fetched.stderr, fetched.stderr
    cancelled = _speceval("cancel", str(run_dir))  # its rounds' jobs: none yet, as a dry run creates none
    assert cancelled.returncode == 0 and f"no running job below {run_dir}" in " ".join(cancelled.stdout.split())

    resumed = run_generation(["--resume", str(run_dir)], cli_env())
    assert resumed.returncode == 0, resumed.stderr
    assert list((run_dir / "rounds" / "1" / "preprocessed").glob("*.jsonl")) == [request_file]
    assert request_file.read_bytes() == planned_bytes
    (record,) = [json.loads(p.read_text()) for p in (run_dir / "rounds" / "1" / "metadata").glob("*.json")]
    assert record["request_file"] == f"preprocessed/{request_file.name}"
    records = json.loads((run_dir / "results" / "alpha.json").read_text())
    assert [len(r.get("turns", [None])) for r in records] == [1, 2]
    # The run's own folder is paid nothing itself: `speceval cost` names it for what it is beside its rounds.
    cost = " ".join(_speceval("cost", str(run_dir)).stdout.split())
    assert "stage generation (conversations, assembled from their rounds: sent and paid in the rounds)" in cost
    assert "stage generation rounds (as sent" in cost and "stage generation $" not in cost


def test_validate_counts_conversations_and_names_a_bad_one(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "alpha.json").write_text(json.dumps({"inputs": ["plain", {"turns": ["t1", "t2", "t3"]}]}))
    valid = _speceval("validate", str(spec), str(inputs))
    assert valid.returncode == 0 and "2 input(s) (1 conversation(s), up to 3 turns) for 1 statement(s)" in valid.stdout
    (inputs / "alpha.json").write_text(
        json.dumps(
            {"inputs": [{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}]}
        )
    )
    invalid = _speceval("validate", str(spec), str(inputs))
    assert invalid.returncode == 2 and "field 'inputs[0].messages[1].role'" in invalid.stderr, invalid.stderr


def test_a_budget_stop_between_rounds_resumes_without_resending_the_first(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = tmp_path / "in"
    inputs.mkdir()
    # The second turn is ~50,000 tokens (about $0.01 at batch prices): round 1 fits $0.002, round 2 does not.
    long_turn = "Please also consider this. " * 8000
    (inputs / "alpha.json").write_text(json.dumps({"inputs": [{"turns": ["short", long_turn]}]}), encoding="utf-8")
    base = [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        "gpt-4.1-mini-2025-04-14",
        "--output-base-dir",
        str(tmp_path / "out"),
        "--offline",
        "--max-tokens",
        "16",
    ]
    stopped = run_generation([*base, "--budget-usd", "0.002"], cli_env())
    assert stopped.returncode == 3, stopped.stderr
    run_dir = only_run_dir(tmp_path / "out")
    assert len(list((run_dir / "rounds" / "1" / "metadata").glob("*.json"))) == 1
    assert not list((run_dir / "rounds" / "2").glob("metadata/*.json"))  # round 2 decided, nothing paid
    assert not (run_dir / "results" / "alpha.json").exists()  # the conversation has not ended
    first = (run_dir / "rounds" / "1" / "results" / "alpha.json").read_bytes()

    resumed = run_generation(["--resume", str(run_dir), "--budget-usd", "1"], cli_env())
    assert resumed.returncode == 0, resumed.stderr
    assert len(list((run_dir / "rounds" / "1" / "metadata").glob("*.json"))) == 1  # round 1 was not sent again
    assert (run_dir / "rounds" / "1" / "results" / "alpha.json").read_bytes() == first
    (record,) = json.loads((run_dir / "results" / "alpha.json").read_text())
    assert record["outcome"] == "succeeded" and [t["round"] for t in record["turns"]] == [1, 2]

"""`python -m batched_examples.run_batched_generation` as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
from pathlib import Path

from speceval.emulator import Emulator, FaultConfig
from speceval.redaction import MARKER
from tests.conftest import (
    SAMPLE_INPUTS,
    SAMPLE_SPEC,
    TEST_KEY,
    cli_env,
    only_run_dir,
    run_generation,
    write_inputs,
    write_spec,
)
from tests.independent.openai_server import IndependentOpenAIServer

MODEL = "gpt-4.1-mini-2025-04-14"


def base_args(spec: Path, inputs: Path, out: Path) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(out),
    ]


def all_results(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def test_offline_run_finishes_loudly_synthetic_and_resume_submits_nothing(tmp_path):
    out = tmp_path / "out"
    done = run_generation([*base_args(SAMPLE_SPEC, SAMPLE_INPUTS, out), "--offline"], cli_env())
    assert done.returncode == 0, done.stderr
    assert "SYNTHETIC" in done.stderr
    run_dir = only_run_dir(out)
    assert f"Results: {run_dir / 'results'}" in done.stdout.replace("\n", "")
    assert "succeeded" in done.stdout
    results = all_results(run_dir)
    expected = {p.stem: json.loads(p.read_text())["inputs"] for p in SAMPLE_INPUTS.glob("*.json")}
    assert {sid: [r["input_text"] for r in records] for sid, records in results.items()} == expected
    assert all(r["outcome"] == "succeeded" for records in results.values() for r in records)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "finished" and manifest["offline"] is True

    jobs_before = sorted(p.name for p in (run_dir / "metadata").iterdir())
    again = run_generation(["--resume", str(run_dir)], cli_env())
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in (run_dir / "metadata").iterdir()) == jobs_before
    assert all_results(run_dir) == results


def test_malformed_spec_line_exits_2_naming_file_line_and_field_and_submits_nothing(tmp_path):
    spec = write_spec(tmp_path / "spec.jsonl", ["a", "b"])
    spec.write_text(spec.read_text() + json.dumps({"id": "c", "text": "t", "type": "sometimes"}) + "\n")
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x"]})
    with Emulator() as emu:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=emu.openai_base_url)
        done = run_generation(base_args(spec, inputs, tmp_path / "out"), env)
        assert emu.stats.batches_created.get("openai", 0) == 0
        assert emu.stats.files_uploaded == 0
    assert done.returncode == 2
    assert str(spec) in done.stderr and "line 3" in done.stderr and "type" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_duplicate_id_and_unknown_statement_exit_2(tmp_path):
    spec = tmp_path / "spec.jsonl"
    spec.write_text('{"id": "a", "text": "t"}\n{"id": "a", "text": "again"}\n')
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x"]})
    done = run_generation(base_args(spec, inputs, tmp_path / "out"), cli_env(OPENAI_API_KEY=TEST_KEY))
    assert done.returncode == 2 and "line 2" in done.stderr and "'id'" in done.stderr

    spec = write_spec(tmp_path / "ok.jsonl", ["a"])
    write_inputs(inputs, {"not_in_spec": ["x"]})
    done = run_generation(base_args(spec, inputs, tmp_path / "out"), cli_env(OPENAI_API_KEY=TEST_KEY))
    assert done.returncode == 2 and "not_in_spec.json" in done.stderr
    allowed = run_generation(
        [*base_args(spec, inputs, tmp_path / "out"), "--allow-unknown-statements", "--offline"], cli_env()
    )
    assert allowed.returncode == 0, allowed.stderr


def test_missing_key_is_a_usage_error_that_names_the_variable(tmp_path):
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x"]})
    done = run_generation(base_args(spec, inputs, tmp_path / "out"), cli_env())
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr and "--offline" in done.stderr


def test_api_key_never_lands_in_files_logs_or_messages(tmp_path):
    # The server quotes the key in a failed request's error (as real providers have done): it must reach us
    # (the marker proves it) and be redacted everywhere. More cases: tests/e2e/test_secrets.py.
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["ok", "poison"]})
    out = tmp_path / "out"

    def fail(custom_id: str | None, body: dict) -> tuple[int, dict] | None:
        if body["messages"][-1]["content"] != "poison":
            return None
        return 400, {
            "message": f"request rejected for key {TEST_KEY}",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request",
        }

    with IndependentOpenAIServer(fail=fail) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = run_generation([*base_args(spec, inputs, out), "--poll-interval", "0.1", "--verbose"], env)
    assert done.returncode == 0, done.stderr
    assert TEST_KEY not in done.stdout + done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "run.log" for p in files)
    for path in files:
        assert TEST_KEY.encode() not in path.read_bytes(), path
    records = all_results(only_run_dir(out))["a"]
    assert [r["outcome"] for r in records] == ["succeeded", "errored"]
    assert records[1]["error"]["message"] == f"request rejected for key {MARKER}"


def test_timeout_exits_3_with_the_resume_command_and_resume_finishes(tmp_path):
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["q0", "q1", "q2"]})
    out = tmp_path / "out"
    with Emulator(faults=FaultConfig(turnaround_seconds=3.0)) as emu:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=emu.openai_base_url)
        stopped = run_generation(
            [*base_args(spec, inputs, out), "--poll-interval", "0.1", "--timeout-hours", "0.0001"], env
        )
        assert stopped.returncode == 3, stopped.stderr
        run_dir = only_run_dir(out)
        assert f"--resume {run_dir}" in stopped.stderr.replace("\n", "")
        resumed = run_generation(["--resume", str(run_dir), "--poll-interval", "0.1"], env)
        assert resumed.returncode == 0, resumed.stderr
        assert emu.stats.batches_created["openai"] == 1
    assert [r["outcome"] for r in all_results(run_dir)["a"]] == ["succeeded"] * 3


def test_resume_refuses_to_change_what_was_submitted(tmp_path):
    out = tmp_path / "out"
    done = run_generation([*base_args(SAMPLE_SPEC, SAMPLE_INPUTS, out), "--offline"], cli_env())
    assert done.returncode == 0
    run_dir = only_run_dir(out)
    changed = run_generation(["--resume", str(run_dir), "--model-name", "gpt-4o-2024-11-20"], cli_env())
    assert changed.returncode == 2 and "--model-name" in changed.stderr


def test_tier_auto_takes_the_flex_settings_whatever_tier_its_plan_starts_at(tmp_path):
    """`--flex-patience` and `--on-flex-unavailable` with `--tier auto` say what a round sent at flex does, whether
    this plan, a re-plan mid-run or the next run's plan (on the folder's learned times) sends one there: accepted
    where the model is served at flex. Refused when the plan began all-batch, the same command that had run went
    from exit 0 to exit 2 once the folder's finished jobs made the next plan all-batch (the generation matrix)."""
    flex = ["--flex-patience", "5", "--on-flex-unavailable", "batch", "--offline", "--dry-run"]
    args = [*base_args(SAMPLE_SPEC, SAMPLE_INPUTS, tmp_path / "out"), "--model-name", "o4-mini", *flex]
    done = run_generation([*args, "--tier", "auto", "--deadline-hours", "100"], cli_env())  # all-batch plan
    assert done.returncode == 0, done.stderr
    refused = run_generation([*args, "--tier", "batch", "--new-run"], cli_env())
    assert refused.returncode == 2 and "--flex-patience" in refused.stderr
    not_served = [*base_args(SAMPLE_SPEC, SAMPLE_INPUTS, tmp_path / "o2"), *flex, "--tier", "auto"]
    done = run_generation([*not_served, "--deadline-hours", "100"], cli_env())  # gpt-4.1-mini: no flex
    assert done.returncode == 2 and "--flex-patience" in done.stderr


def test_tier_auto_plans_the_first_round_at_no_less_than_the_dry_runs_own_bound(tmp_path, capsys):
    """The plan's cost is an upper bound, as the dry run's request files' bound (the budget's) is: the first round
    counted each prompt's text only (no framing, no system prompt), $0.3610 under the files' $0.3621 for 40
    requests."""
    import re

    from speceval.cli.generation import main as generation_main

    args = [*base_args(SAMPLE_SPEC, SAMPLE_INPUTS, tmp_path / "out"), "--model-name", "o4-mini", "--offline"]
    assert generation_main([*args, "--tier", "auto", "--deadline-hours", "8", "--dry-run"]) == 0
    said = capsys.readouterr().out
    plan = float(re.search(r"this plan: \$([0-9.]+)", said).group(1))
    files = float(re.search(r"│ total .*?\$([0-9.]+)", said).group(1))
    assert plan >= files > 0

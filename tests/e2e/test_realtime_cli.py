"""Realtime generation as a user runs it: CLI subprocesses against the emulator's realtime endpoints."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from speceval.emulator import Emulator, FaultConfig, respond
from tests import forked
from tests.conftest import (
    REPO,
    SAMPLE_INPUTS,
    SAMPLE_SPEC,
    cli_env,
    only_run_dir,
    run_generation,
    start_generation,
    write_inputs,
    write_spec,
)

MODEL = "org/open-weights-model"


def journal_entries(run_dir: Path) -> list[dict]:
    path = run_dir / "realtime" / "outcomes.jsonl"
    if not path.exists():
        return []
    entries = []
    for line in path.read_bytes().split(b"\n"):
        with contextlib.suppress(ValueError):  # empty or torn last line
            entries.append(json.loads(line))
    return entries


def all_results(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def test_sigkill_half_way_then_resume_sends_nothing_final_again_and_loses_nothing(tmp_path):
    statements = {f"s{k}": [f"prompt {k}-{i}: please answer" for i in range(50)] for k in range(4)}
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    out = tmp_path / "out"
    with Emulator(faults=FaultConfig(realtime_latency_seconds=0.01)) as emu:
        args = [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            MODEL,
            "--org",
            "openai-compatible",
            "--base-url",
            emu.openai_base_url,
            "--output-base-dir",
            str(out),
            "--rpm",
            "1200",
            "--max-concurrency",
            "8",
        ]
        process = start_generation(args, cli_env(OPENAI_API_KEY="sk-test"))
        deadline = time.monotonic() + 60
        run_dir = None
        while time.monotonic() < deadline:
            runs = list(out.glob("*/*/*/run.json"))
            if runs and len(journal_entries(runs[0].parent)) >= 70:
                run_dir = runs[0].parent
                break
            time.sleep(0.05)
        assert run_dir is not None, "the run never got half-way"
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
        done_before = {e["record"]["input_text"]: e["record"] for e in journal_entries(run_dir)}
        assert 70 <= len(done_before) < 200

        resumed = run_generation(["--resume", str(run_dir)], cli_env(OPENAI_API_KEY="sk-test"))
        assert resumed.returncode == 0, resumed.stderr
        counts = emu.realtime.prompt_counts()

    prompts = [text for texts in statements.values() for text in texts]
    assert all(counts[text] == 1 for text in done_before)  # nothing with a final outcome was sent again
    assert all(counts.get(text, 0) >= 1 for text in prompts)
    assert sum(counts.values()) - len(prompts) <= 8  # at most the requests in flight at the kill were re-sent
    results = all_results(run_dir)
    assert {sid: [r["input_text"] for r in records] for sid, records in results.items()} == statements
    for records in results.values():
        for record in records:
            assert record["outcome"] == "succeeded"
            assert record["output_text"] == respond(MODEL, record["input_text"])
            if record["input_text"] in done_before:
                assert record["batch_id"] == done_before[record["input_text"]]["batch_id"]


def test_together_alias_maps_the_original_flags_and_writes_the_run_layout(tmp_path):
    out = tmp_path / "out"
    done = forked.run(
        [
            sys.executable,
            "-m",
            "batched_examples.together_batch_inference",
            "--model-name",
            "deepseek-ai/DeepSeek-R1",
            "--pregenerated-inputs-dir",
            str(SAMPLE_INPUTS),
            "--spec",
            "openai",
            "--output-base-dir",
            str(out),
            "--qps",
            "50",
            "--batch-size",
            "4",
            "--max-retries",
            "2",
            "--initial-retry-delay",
            "0.5",
            "--retry-backoff-factor",
            "3",
            "--retriable-error-substrings",
            "503",
            "--offline",
        ],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(out)
    assert run_dir.parent.name == "deepseek-ai-DeepSeek-R1" and run_dir.parent.parent.name == "openai"
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["provider"] == "together"
    realtime = manifest["parameters"]["realtime"]
    assert (realtime["rpm"], realtime["max_concurrency"]) == (3000, 4)
    assert (realtime["retry_initial_delay"], realtime["retry_backoff_factor"]) == (0.5, 3)
    assert manifest["parameters"]["engine"]["max_attempts"] == 3
    results = all_results(run_dir)
    expected = {p.stem: json.loads(p.read_text())["inputs"] for p in SAMPLE_INPUTS.glob("*.json")}
    assert {sid: [r["input_text"] for r in records] for sid, records in results.items()} == expected
    assert all(r["outcome"] == "succeeded" for records in results.values() for r in records)


def test_realtime_flag_uses_the_providers_own_chat_endpoint_offline(tmp_path):
    out = tmp_path / "out"
    args = [
        "--spec-path",
        str(SAMPLE_SPEC),
        "--pregenerated-inputs-dir",
        str(SAMPLE_INPUTS),
        "--model-name",
        "claude-sonnet-4-6",
        "--realtime",
        "--offline",
        "--output-base-dir",
        str(out),
    ]
    done = run_generation(args, cli_env())
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(out)
    assert not (run_dir / "metadata").exists() or not any((run_dir / "metadata").iterdir())
    results = all_results(run_dir)
    assert all(r["outcome"] == "succeeded" for records in results.values() for r in records)
    again = run_generation(["--resume", str(run_dir)], cli_env())
    assert again.returncode == 0, again.stderr
    assert all_results(run_dir) == results


def test_usage_errors_exit_2_before_anything_is_sent(tmp_path):
    base = [
        "--spec-path",
        str(SAMPLE_SPEC),
        "--pregenerated-inputs-dir",
        str(SAMPLE_INPUTS),
        "--output-base-dir",
        str(tmp_path / "out"),
    ]
    no_url = run_generation([*base, "--model-name", MODEL, "--org", "openai-compatible"], cli_env())
    assert no_url.returncode == 2 and "--base-url" in no_url.stderr
    rpm_on_batch = run_generation(
        [*base, "--model-name", "gpt-4.1-mini", "--rpm", "10"], cli_env(OPENAI_API_KEY="sk-test")
    )
    assert rpm_on_batch.returncode == 2 and "--realtime" in rpm_on_batch.stderr
    no_key = run_generation([*base, "--model-name", MODEL, "--org", "together"], cli_env())
    assert no_key.returncode == 2 and "TOGETHER_API_KEY" in no_key.stderr


def test_a_realtime_budget_stops_before_paying_more_and_a_resume_with_more_finishes_sending_nothing_twice(tmp_path):
    out = tmp_path / "out"
    # 40 requests of claude-sonnet-4-6 at live prices: each reserves its upper bound (prompt plus 4,096 output
    # tokens at $15/M, about $0.06) before it is sent and settles at its actual cost (about $0.0005) once answered;
    # with $0.07 the reservations stop fitting after roughly 16 answers.
    args = [
        "--spec-path",
        str(SAMPLE_SPEC),
        "--pregenerated-inputs-dir",
        str(SAMPLE_INPUTS),
        "--model-name",
        "claude-sonnet-4-6",
        "--realtime",
        "--offline",
        "--output-base-dir",
        str(out),
        "--budget-usd",
        "0.07",
    ]
    stopped = run_generation(args, cli_env())
    assert stopped.returncode == 3, stopped.stderr[-2000:]
    assert "budget" in stopped.stdout + stopped.stderr
    run_dir = only_run_dir(out)
    journal = run_dir / "realtime" / "outcomes.jsonl"
    sent_first = sum(1 for _ in journal.open("rb"))
    assert 0 < sent_first < 40
    done = run_generation(["--resume", str(run_dir), "--budget-usd", "100"], cli_env())
    assert done.returncode == 0, done.stderr[-2000:]
    results = all_results(run_dir)
    assert sum(len(r) for r in results.values()) == 40
    assert all(r["outcome"] == "succeeded" for rs in results.values() for r in rs), results
    entries = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    answered_first = {
        (e["statement_id"], e["record"]["original_index"])
        for e in entries[:sent_first]
        if e["record"]["outcome"] == "succeeded"
    }
    sent_again = [(e["statement_id"], e["record"]["original_index"]) for e in entries[sent_first:]]
    assert answered_first and not answered_first & set(sent_again)  # nothing answered before the stop is resent
    assert len(answered_first) + len(set(sent_again)) == 40

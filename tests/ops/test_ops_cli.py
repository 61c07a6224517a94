"""Operations commands against the emulator through the real openai SDK: status, cancel, fetch, dry run, budget,
cost, validate."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from speceval.cli.generation import main as generation_main
from speceval.cli.main import main as speceval_main
from speceval.emulator import Emulator, FaultConfig
from tests.conftest import TEST_KEY, only_run_dir, write_inputs, write_spec

MODEL = "gpt-test-model"
STATEMENTS = {"be_honest": [f"q{i}" for i in range(5)], "avoid_errors": ["a", "b", "c"]}


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path, Path]:
    spec = write_spec(tmp_path / "spec.jsonl", list(STATEMENTS))
    inputs = write_inputs(tmp_path / "inputs", STATEMENTS)
    # $0.50 per request at batch prices: output $1 per token, max_tokens 1, input free.
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {MODEL: {"input": 0, "output": 1_000_000}}}))
    return spec, inputs, prices


def generate(spec: Path, inputs: Path, out: Path, *extra: str) -> int:
    return generation_main(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            MODEL,
            "--output-base-dir",
            str(out),
            "--batch-size",
            "2",
            "--max-tokens",
            "1",
            "--poll-interval",
            "0.05",
            *extra,
        ]
    )


def env(monkeypatch: pytest.MonkeyPatch, emu: Emulator) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", emu.openai_base_url)


def wait_for_jobs(emu: Emulator, state: str, count: int = 4, timeout: float = 30.0) -> None:
    """Poll the emulator until `count` OpenAI jobs are all in `state`; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        states = [job.state for job in emu.list_jobs("openai")]
        if len(states) == count and all(s == state for s in states):
            return
        assert time.monotonic() < deadline, states
        time.sleep(0.05)


def results(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def test_status_lists_exactly_the_jobs_the_server_knows(tmp_path, data, monkeypatch, capsys):
    spec, inputs, _ = data
    # The jobs stay in one state while the status is read and then the server (a job is `validating` for the first
    # tenth of its turnaround): at 30 s, a machine at load 12 took over 3 s between the two and they differed.
    with Emulator(faults=FaultConfig(turnaround_seconds=600)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "out", "--timeout-hours", "0.00003") == 3
        run_dir = only_run_dir(tmp_path / "out")
        capsys.readouterr()
        assert speceval_main(["status", str(tmp_path / "out"), "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        server = {job.id: job for job in emu.list_jobs("openai")}
    assert {row["batch_id"] for row in rows} == set(server) and len(rows) == 4
    for row in rows:
        job = server[row["batch_id"]]
        assert row["raw_state"] == job.state and row["requests"] == job.request_count
        assert row["run_dir"] == str(run_dir) and row["collected"] is False


def test_cancel_reaches_the_server_and_cancelled_requests_are_final(tmp_path, data, monkeypatch, capsys):
    spec, inputs, _ = data
    with Emulator(faults=FaultConfig(turnaround_seconds=30)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "out", "--timeout-hours", "0.00003") == 3
        run_dir = only_run_dir(tmp_path / "out")
        assert speceval_main(["cancel", str(run_dir)]) == 0
        wait_for_jobs(emu, "cancelled")
        code = generation_main(["--resume", str(run_dir), "--poll-interval", "0.05"])
        jobs = emu.list_jobs("openai")
    assert code == 0 and len(jobs) == 4  # nothing resubmitted after a user's cancel
    outcomes = {r["outcome"] for records in results(run_dir).values() for r in records}
    assert outcomes == {"cancelled"}
    records = [json.loads(p.read_text()) for p in (run_dir / "metadata").glob("*.json")]
    assert all(r["cancel_requested"] for r in records)


def test_cancel_of_a_folder_names_every_running_job_and_cancels_them_only_with_all(tmp_path, data, monkeypatch, capsys):
    """A study is many runs: `speceval cancel FOLDER` lists their running jobs and cancels nothing; `--all` cancels
    every one at the server, `--batch ID` the one it names wherever it is; a resume sends nothing again."""
    spec, inputs, _ = data
    with Emulator(faults=FaultConfig(turnaround_seconds=60)) as emu:
        env(monkeypatch, emu)
        for name in ("a", "b"):
            assert generate(spec, inputs, tmp_path / "study" / name, "--timeout-hours", "0.00003") == 3
        runs = [only_run_dir(tmp_path / "study" / name) for name in ("a", "b")]
        capsys.readouterr()
        assert speceval_main(["cancel", str(tmp_path / "study")]) == 2
        refused = capsys.readouterr().err
        assert "8 running job(s) in 2 run(s)" in refused and "--all" in refused
        assert all(str(run) in " ".join(refused.split()) for run in runs)
        assert {job.state for job in emu.list_jobs("openai")} <= {"validating", "in_progress"}  # nothing cancelled

        one = json.loads(next((runs[1] / "metadata").glob("*.json")).read_text())["batch_id"]
        assert speceval_main(["cancel", str(tmp_path / "study"), "--batch", one]) == 0
        assert capsys.readouterr().out.count("cancel requested") == 1
        assert [job.id for job in emu.list_jobs("openai") if job.state in ("cancelling", "cancelled")] == [one]

        assert speceval_main(["cancel", str(tmp_path / "study"), "--all"]) == 0
        assert "7 job(s) cancelled" in capsys.readouterr().out
        wait_for_jobs(emu, "cancelled", count=8)
        codes = [generation_main(["--resume", str(run), "--poll-interval", "0.05"]) for run in runs]
        created = len(emu.list_jobs("openai"))
    assert codes == [0, 0] and created == 8  # nothing resubmitted after the cancels
    for run in runs:
        assert {r["outcome"] for records in results(run).values() for r in records} == {"cancelled"}


def test_cancel_refuses_an_offline_run_another_process_holds(tmp_path, data, monkeypatch, capsys):
    """An offline run's jobs live in the built-in emulator of the process working on it: a cancel from elsewhere
    cannot reach them, so it is refused (naming the process) before anything is asked."""
    from speceval.batch.manifest import RunManifest
    from speceval.batch.run_lock import RunLock

    spec, inputs, _ = data
    with Emulator(faults=FaultConfig(turnaround_seconds=60)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "study" / "a", "--timeout-hours", "0.00003") == 3
        run = only_run_dir(tmp_path / "study" / "a")
        manifest = RunManifest.load(run)
        manifest.offline = True
        manifest.save(run)
        lock = RunLock(run)
        lock.acquire()  # another process at work (a second open file holds its own flock)
        try:
            capsys.readouterr()
            assert speceval_main(["cancel", str(tmp_path / "study"), "--all"]) == 2
            refused = capsys.readouterr().err
        finally:
            lock.release()
        states = {job.state for job in emu.list_jobs("openai")}
    assert f"speceval process {os.getpid()}" in refused and "Ctrl+C" in refused
    assert states <= {"validating", "in_progress"}  # nothing was asked


def test_fetch_of_an_experiments_folder_says_what_collects_it(tmp_path, capsys):
    (tmp_path / "experiment.json").write_text("{}")
    assert speceval_main(["fetch", str(tmp_path)]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "an experiment's folder" in said and "speceval run EXPERIMENT.yaml" in said and "--all" in said


def test_fetch_after_completion_writes_what_a_monitored_run_writes(tmp_path, data, monkeypatch, capsys):
    spec, inputs, _ = data
    with Emulator(faults=FaultConfig(turnaround_seconds=0.3, shuffle_results=True)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "monitored") == 0
        # Jobs the stopped run cannot see finish before its timeout (0.036 s), however slowly a loaded machine
        # submits them (a job keeps the turnaround it was created with).
        emu.faults = FaultConfig(turnaround_seconds=3.0, shuffle_results=True)
        assert generate(spec, inputs, tmp_path / "fetched", "--timeout-hours", "0.00001") == 3
        fetched_dir = only_run_dir(tmp_path / "fetched")
        wait_for_jobs(emu, "completed", count=8)  # the monitored run's 4 and the stopped run's 4
        assert speceval_main(["fetch", str(fetched_dir)]) == 0
        created = len(emu.list_jobs("openai"))
    monitored = results(only_run_dir(tmp_path / "monitored"))

    def comparable(runs: dict[str, list[dict]]) -> dict[str, list[tuple]]:
        return {
            sid: [(r["original_index"], r["input_text"], r["output_text"], r["outcome"]) for r in records]
            for sid, records in runs.items()
        }

    assert comparable(results(fetched_dir)) == comparable(monitored)
    assert created == 8  # 4 jobs per run, fetch submitted nothing


def test_dry_run_creates_no_job_and_resume_submits_exactly_its_files(tmp_path, data, monkeypatch, capsys):
    spec, inputs, prices = data
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "out", "--dry-run", "--prices", str(prices)) == 0
        out = capsys.readouterr().out
        assert sum(emu.stats.batches_created.values()) == 0 and emu.stats.files_uploaded == 0
        assert "$4.0000" in out  # 8 requests x $0.50
        run_dir = only_run_dir(tmp_path / "out")
        planned = sorted(p.read_bytes() for p in (run_dir / "preprocessed").glob("*.jsonl"))
        assert generation_main(["--resume", str(run_dir), "--poll-interval", "0.05"]) == 0
        assert emu.stats.batches_created["openai"] == 4
    assert sorted(p.read_bytes() for p in (run_dir / "preprocessed").glob("*.jsonl")) == planned


def test_budget_submits_only_what_fits_then_a_higher_budget_finishes(tmp_path, data, monkeypatch, capsys):
    spec, inputs, prices = data
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        env(monkeypatch, emu)
        # Jobs of 2 requests cost $1.00 each: $2.50 allows two of the four.
        code = generate(spec, inputs, tmp_path / "out", "--budget-usd", "2.5", "--prices", str(prices))
        err = capsys.readouterr().err
        assert code == 3 and "--budget-usd" in err
        assert emu.stats.batches_created["openai"] == 2
        run_dir = only_run_dir(tmp_path / "out")
        code = generation_main(
            ["--resume", str(run_dir), "--budget-usd", "10", "--prices", str(prices), "--poll-interval", "0.05"]
        )
        assert code == 0 and emu.stats.batches_created["openai"] == 4
        keys = [job.metadata["speceval_key"] for job in emu.list_jobs("openai")]
    assert len(set(keys)) == 4
    assert all(r["outcome"] == "succeeded" for records in results(run_dir).values() for r in records)


def test_cost_reports_spend_and_unknown_prices_are_not_zero(tmp_path, data, monkeypatch, capsys):
    spec, inputs, prices = data
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as emu:
        env(monkeypatch, emu)
        assert generate(spec, inputs, tmp_path / "out") == 0
    capsys.readouterr()
    assert speceval_main(["cost", str(tmp_path / "out"), "--json", "--prices", str(prices)]) == 0
    report = json.loads(capsys.readouterr().out)
    [run] = report["runs"]
    assert run["requests"] == 8 and run["output_tokens"] > 0
    assert run["cost_usd"] == pytest.approx(run["output_tokens"] * 0.5)
    assert run["offline"] is False and report["offline_runs"] == 0  # a provider's answers (here the emulator's URL)
    assert speceval_main(["cost", str(tmp_path / "out"), "--json"]) == 0  # shipped table: no price for the model
    assert json.loads(capsys.readouterr().out)["runs"][0]["cost_usd"] is None


def test_validate_reports_located_errors_and_submits_nothing(tmp_path, data, capsys):
    spec, inputs, _ = data
    assert speceval_main(["validate", str(spec), str(inputs)]) == 0
    assert "8 input(s) for 2 statement(s), valid" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "t"}\n{"id": "x", "text": "again"}\n')
    assert speceval_main(["validate", str(bad)]) == 2
    assert "line 2" in capsys.readouterr().err


def test_offline_faults_from_the_environment_reach_the_emulator_and_a_typo_is_named(
    tmp_path, data, monkeypatch, capsys
):
    """`SPECEVAL_OFFLINE_FAULTS` gives an offline run the failures real providers produce (a study's counts can be
    seen with them before paying); a field FaultConfig does not know is refused naming it, before anything runs."""
    spec, inputs, _ = data
    monkeypatch.setenv("SPECEVAL_OFFLINE_TURNAROUND", "0.05")
    monkeypatch.setenv("SPECEVAL_OFFLINE_FAULTS", '{"error_rat": 1.0}')
    assert generate(spec, inputs, tmp_path / "typo", "--offline") == 2
    assert "SPECEVAL_OFFLINE_FAULTS: field 'error_rat'" in " ".join(capsys.readouterr().err.split())
    assert not list((tmp_path / "typo").rglob("run.json"))
    monkeypatch.setenv("SPECEVAL_OFFLINE_FAULTS", '{"error_rate": 1.0}')
    assert generate(spec, inputs, tmp_path / "out", "--offline", "--max-attempts", "1") == 0
    outcomes = {r["outcome"] for records in results(only_run_dir(tmp_path / "out")).values() for r in records}
    assert outcomes == {"errored"}


def test_offline_runs_find_the_emulator_state_of_the_judge_or_experiment_above_them(tmp_path):
    from speceval.offline import emulator_state_dir

    run = tmp_path / "experiment" / "generations" / "openai" / "v0" / "run1" / "gpt-4.1-mini"
    run.mkdir(parents=True)
    assert emulator_state_dir(run) == run / ".emulator"  # nothing above: its own
    (tmp_path / "experiment" / ".emulator").mkdir()
    assert emulator_state_dir(run) == tmp_path / "experiment" / ".emulator"
    user_round = run / "rounds" / "2" / "user"  # a conversation's simulated user's round, three below its run
    user_round.mkdir(parents=True)
    assert emulator_state_dir(user_round) == tmp_path / "experiment" / ".emulator"
    (run / ".emulator").mkdir()
    assert emulator_state_dir(run) == run / ".emulator"  # its own wins


def test_cost_of_an_offline_run_says_its_tokens_are_synthetic_and_nothing_was_paid(tmp_path, data, capsys):
    """A total quoted from `speceval cost` must not read as money spent on model answers."""
    spec, inputs, prices = data
    assert generate(spec, inputs, tmp_path / "out", "--offline") == 0
    capsys.readouterr()
    assert speceval_main(["cost", str(tmp_path / "out"), "--prices", str(prices)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "OFFLINE: 1 of 1 run(s) were answered by the speceval emulator" in shown and "nothing was paid" in shown
    assert speceval_main(["cost", str(tmp_path / "out"), "--json", "--prices", str(prices)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["offline_runs"] == 1 and report["runs"][0]["offline"] is True
    # `speceval status` shows the same runs' jobs (with their costs): it says so too.
    assert speceval_main(["status", str(tmp_path / "out"), "--no-refresh"]) == 0
    assert "OFFLINE: 1 of 1 run(s) were answered by the speceval emulator" in " ".join(capsys.readouterr().out.split())
    assert speceval_main(["status", str(tmp_path / "out"), "--no-refresh", "--json"]) == 0
    assert {row["offline"] for row in json.loads(capsys.readouterr().out)} == {True}

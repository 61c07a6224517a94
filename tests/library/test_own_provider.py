"""A provider of our own (`tests/library/file_jobs.py`), added the two documented ways.

In Python with `register_provider`; and as an installed plugin (an entry point in the group `speceval.providers`,
declared by a real `.dist-info` folder on the path), driven through the command line: generate, SIGKILL while its
jobs run, resume, status. The provider is recorded truthfully in `run.json`, and every later process rebuilds it
from there; no job is created twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from speceval import (
    ENTRY_POINT_GROUP,
    BatchedGenerationPipeline,
    ConfigError,
    EngineOptions,
    GenerationConfig,
    GenerationParams,
    ModelMismatchError,
    register_provider,
    unregister_provider,
)
from speceval.operations.reopen import open_run
from tests.conftest import REPO, cli_env, write_inputs, write_spec
from tests.library.file_jobs import HOLD, ORG, STORE_ENV, FileJobsModel, FileJobStore
from tests.library.helpers import generation_config

MODEL = "house-model-7b"
STATEMENTS = {"s1": ["alpha", "beta"], "s2": ["gamma"], "s3": ["delta", "epsilon"]}
PROMPTS = {p for prompts in STATEMENTS.values() for p in prompts}


@pytest.fixture
def registered() -> Iterator[None]:
    register_provider(ORG, FileJobsModel, model_prefixes=("house-",))
    try:
        yield
    finally:
        unregister_provider(ORG)


def config(tmp_path: Path, **overrides: object) -> GenerationConfig:
    return generation_config(
        tmp_path,
        STATEMENTS,
        **{
            "model_name": MODEL,
            "params": GenerationParams(temperature=0.4, max_tokens=99),
            "engine": EngineOptions(batch_size=2, poll_interval=0.05, timeout_hours=0.05),
            **overrides,
        },
    )


def test_a_registered_provider_runs_is_recorded_and_is_rebuilt_from_run_json(tmp_path, monkeypatch, registered):
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "jobs"))
    pipeline = BatchedGenerationPipeline(config(tmp_path))  # no --org: the registered model prefix selects it
    summary = pipeline.run()
    assert summary.finished and summary.outcome_counts == {"succeeded": 5}

    manifest = json.loads((pipeline.run_dir / "run.json").read_text())
    assert (manifest["provider"], manifest["model_name"]) == (ORG, MODEL)
    jobs = FileJobStore(tmp_path / "jobs").jobs()
    sent = [line for job in jobs for line in job["requests"]]
    assert {(line["model"], line["temperature"], line["max_tokens"]) for line in sent} == {(MODEL, 0.4, 99)}
    assert manifest["parameters"]["params"] == {
        "temperature": 0.4,
        "max_tokens": 99,
        "system_prompt": None,
        "response_schema": None,
        "schema_name": "answer",
    }
    for path in (pipeline.run_dir / "metadata").glob("*.json"):
        record = json.loads(path.read_text())
        assert record["provider"] == ORG and record["handle"] == {
            "provider": ORG,
            "ids": {"job_file": f"{record['batch_id']}.json"},
        }
    answers = {
        r["input_text"]: r["output_text"]
        for p in (pipeline.run_dir / "results").glob("*.json")
        for r in json.loads(p.read_text())
    }
    assert answers == {prompt: f"{MODEL} answers: {prompt}" for prompt in PROMPTS}

    with open_run(pipeline.run_dir) as reopened:  # what status, fetch and cancel do
        assert isinstance(reopened.model, FileJobsModel) and reopened.model.params == GenerationParams(0.4, 99)
        assert {reopened.model.check_batch_progress(r).state for r in reopened.store.load_records()} == {"completed"}


def test_a_custom_model_claiming_another_provider_is_refused(tmp_path, monkeypatch, registered):
    # The old way (a custom class passed under org="openai") would record "openai" in run.json: refused now.
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "jobs"))
    pipeline = BatchedGenerationPipeline(config(tmp_path, org="openai"))
    with pytest.raises(ModelMismatchError) as refused:
        pipeline.run(FileJobsModel(MODEL, GenerationParams(temperature=0.4, max_tokens=99)))
    assert refused.value.differences == [("provider", "FileJobsModel (filejobs)", "openai")]
    assert FileJobStore(tmp_path / "jobs").jobs() == []


def test_registering_refuses_built_in_and_taken_names(registered):
    with pytest.raises(ConfigError, match="built-in"):
        register_provider("openai", FileJobsModel)
    with pytest.raises(ConfigError, match="replace_existing"):
        register_provider(ORG, FileJobsModel, model_prefixes=("other-",))
    with pytest.raises(ConfigError, match="lowercase"):
        register_provider("gemini", FileJobsModel)  # the tag of a built-in handle
    register_provider(ORG, FileJobsModel, model_prefixes=("house-",))  # the same entry again: nothing changes


# -- as an installed plugin, through the command line ------------------------------------------------------------


def plugin_env(tmp_path: Path) -> dict[str, str]:
    """A `.dist-info` declaring the entry point, as `pip install` of a plugin package would leave it."""
    site = tmp_path / "site"
    dist = site / "speceval_filejobs-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: speceval-filejobs\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{ORG} = tests.library.file_jobs:FileJobsModel\n")
    env = cli_env(**{STORE_ENV: str(tmp_path / "jobs")})
    env["PYTHONPATH"] = str(site) + os.pathsep + env["PYTHONPATH"]
    return env


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def wait_for(condition, what: str, process: subprocess.Popen[str], deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert process.poll() is None, f"the run ended before {what}: {process.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {deadline_s} s"
        time.sleep(0.05)


def test_a_plugin_provider_survives_sigkill_resume_and_status(tmp_path):
    env = plugin_env(tmp_path)
    store = FileJobStore(tmp_path / "jobs")
    (store.root / HOLD).touch()  # jobs stay running until the test lets them finish
    spec = write_spec(tmp_path / "spec.jsonl", list(STATEMENTS))
    inputs = write_inputs(tmp_path / "inputs", STATEMENTS)
    args = [
        "-m",
        "batched_examples.run_batched_generation",
        "--org",
        ORG,
        "--model-name",
        MODEL,
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--output-base-dir",
        str(tmp_path / "out"),
        "--batch-size",
        "2",
        "--temperature",
        "0.4",
        "--poll-interval",
        "0.1",
    ]
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: len(store.jobs()) == 3, "three jobs created", process)
        records = lambda: list(tmp_path.glob("out/*/*/*/metadata/*.json"))  # noqa: E731
        wait_for(lambda: len(records()) == 3, "three jobs recorded", process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    (run_dir,) = {path.parent.parent for path in records()}
    assert json.loads((run_dir / "run.json").read_text())["provider"] == ORG

    (store.root / HOLD).unlink()
    resumed = cli(["-m", "batched_examples.run_batched_generation", "--resume", str(run_dir)], env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert len(store.jobs()) == 3  # the jobs of the killed process were found again, none created twice
    outcomes = [r for p in (run_dir / "results").glob("*.json") for r in json.loads(p.read_text())]
    assert sorted(r["input_text"] for r in outcomes) == sorted(PROMPTS)
    assert all(
        r["outcome"] == "succeeded" and r["output_text"] == f"{MODEL} answers: {r['input_text']}" for r in outcomes
    )

    status = cli(["-m", "speceval", "status", str(run_dir), "--json"], env)
    assert status.returncode == 0, status.stderr[-3000:]
    rows = json.loads(status.stdout)
    assert sorted(row["batch_id"] for row in rows) == sorted(job["id"] for job in store.jobs())
    assert {(row["provider"], row["model"], row["state"]) for row in rows} == {(ORG, MODEL, "completed")}

    fetched = cli(["-m", "speceval", "fetch", str(run_dir)], env)
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    assert len(store.jobs()) == 3


def test_a_plugin_providers_jobs_are_cancelled_and_fetched_from_run_json(tmp_path):
    env = plugin_env(tmp_path)
    store = FileJobStore(tmp_path / "jobs")
    (store.root / HOLD).touch()
    spec = write_spec(tmp_path / "spec.jsonl", list(STATEMENTS))
    inputs = write_inputs(tmp_path / "inputs", STATEMENTS)
    stopped = cli(
        [
            "-m",
            "batched_examples.run_batched_generation",
            "--org",
            ORG,
            "--model-name",
            MODEL,
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--output-base-dir",
            str(tmp_path / "out"),
            "--poll-interval",
            "0.1",
            "--timeout-hours",
            "0.0003",
        ],
        env,
    )
    assert stopped.returncode == 3, stopped.stderr[-3000:]  # timed out with its job still running
    (run_dir,) = {path.parent for path in tmp_path.glob("out/*/*/*/run.json")}

    cancelled = cli(["-m", "speceval", "cancel", str(run_dir)], env)
    assert cancelled.returncode == 0, cancelled.stderr[-3000:]
    assert [job["state"] for job in store.jobs()] == ["cancelled"]
    fetched = cli(["-m", "speceval", "fetch", str(run_dir)], env)
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    outcomes = [r["outcome"] for p in (run_dir / "results").glob("*.json") for r in json.loads(p.read_text())]
    assert outcomes == ["cancelled"] * len(PROMPTS)
    assert len(store.jobs()) == 1

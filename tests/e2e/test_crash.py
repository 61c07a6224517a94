"""SIGKILL at the worst moments, then `--resume`: no duplicate paid job, no lost result, no corrupt file.

These run the real CLI in a subprocess against the emulator (which lives in the test process, so it outlives
the killed client, as a provider would).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from speceval.emulator import Emulator, FaultConfig
from tests.conftest import (
    TEST_KEY,
    cli_env,
    only_run_dir,
    run_generation,
    start_generation,
    write_inputs,
    write_spec,
)

MODEL = "gpt-4.1-mini-2025-04-14"
STATEMENTS = {"be_honest": [f"honest {i}" for i in range(5)], "no.dots here": [f"dots {i}" for i in range(4)]}
BATCH_SIZE = 2
CHUNKS = 5  # 9 requests in jobs of at most 2


def setup(tmp_path: Path) -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", list(STATEMENTS))
    inputs = write_inputs(tmp_path / "inputs", STATEMENTS)
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(tmp_path / "out"),
        "--batch-size",
        str(BATCH_SIZE),
        "--poll-interval",
        "0.1",
    ]


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


def assert_complete_and_unduplicated(emu: Emulator, run_dir: Path) -> None:
    jobs = emu.list_jobs("openai")
    keys = [job.metadata.get("speceval_key") for job in jobs]
    assert len(keys) == len(set(keys)), f"duplicate paid jobs: {keys}"
    assert len(jobs) == CHUNKS
    # Every job the provider knows has a local record: nothing orphaned.
    recorded = {json.loads(p.read_text())["batch_id"] for p in (run_dir / "metadata").glob("*.json")}
    assert recorded == {job.id for job in jobs}
    for statement_id, texts in STATEMENTS.items():
        records = json.loads((run_dir / "results" / f"{statement_id}.json").read_text())
        assert [r["input_text"] for r in records] == texts
        assert all(r["outcome"] == "succeeded" for r in records)
    for path in run_dir.rglob("*.json"):
        if ".emulator" not in path.parts:
            json.loads(path.read_text())  # no torn file anywhere
    assert not list(run_dir.rglob(".*.tmp"))


def test_sigkill_between_remote_create_and_local_record(tmp_path):
    args = setup(tmp_path)
    with Emulator(faults=FaultConfig(turnaround_seconds=0.2, create_delay_seconds=5.0)) as emu:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=emu.openai_base_url)
        proc = start_generation(args, env)
        try:
            # The provider has created the job but has not answered yet: the client is inside the window.
            wait_for(lambda: emu.stats.batches_created.get("openai", 0) >= 1)
        finally:
            proc.kill()
            proc.communicate()
        run_dir = only_run_dir(tmp_path / "out")
        assert not list(run_dir.glob("metadata/*.json"))
        assert len(list((run_dir / "intents").glob("*.json"))) == 1
        emu.faults = FaultConfig(turnaround_seconds=0.2)
        resumed = run_generation(["--resume", str(run_dir)], env)
        assert resumed.returncode == 0, resumed.stderr
        assert_complete_and_unduplicated(emu, run_dir)


def test_sigkill_at_random_moments_then_resume(tmp_path):
    rng = random.Random(20261122)
    for trial in range(3):
        trial_dir = tmp_path / f"trial{trial}"
        args = setup(trial_dir)
        faults = FaultConfig(turnaround_seconds=0.3, create_delay_seconds=0.2)
        with Emulator(faults=faults) as emu:
            env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=emu.openai_base_url)
            proc = start_generation(args, env)
            time.sleep(rng.uniform(0.8, 3.0))  # interpreter start-up takes most of the first second
            proc.kill()
            proc.communicate()
            if list((trial_dir / "out").glob("*/*/*/run.json")):
                run_dir = only_run_dir(trial_dir / "out")
                resumed = run_generation(["--resume", str(run_dir)], env)
            else:  # killed before the run existed: nothing was sent, a plain rerun is the right move
                assert emu.stats.batches_created.get("openai", 0) == 0
                resumed = run_generation(args, env)
                run_dir = only_run_dir(trial_dir / "out")
            assert resumed.returncode == 0, resumed.stderr
            assert_complete_and_unduplicated(emu, run_dir)

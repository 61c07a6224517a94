"""`--org ray`: Ray Data LLM's HTTP processor on a CPU Ray, against a server written from the OpenAPI spec.

Ray takes seconds to start, so these tests are few and each runs a whole command: answers on their own inputs,
failures typed, retryable ones retried, Ctrl+C, and a SIGKILL followed by `--resume`. The Ctrl+C'd command starts
its own local Ray, as a user's first run does; the others join the test run's cluster (`shared_ray_env`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_env, only_run_dir, run_generation, start_generation, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer
from tests.raydata import NEEDS_RAY
from tests.raydata.ray_exit_race import LOSING_THE_EXIT_RACE  # Ray's exit-time shutdown always ends with status 1

pytestmark = NEEDS_RAY

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


ENDPOINT_KEY = "sk-endpoint-DO-NOT-LEAK-5f0c1e2d3b4a"


def ray_env(cluster: dict[str, str] | None = None) -> dict[str, str]:
    """A command's environment: joining `cluster` (the `shared_ray_env` fixture), or with RAY_ADDRESS unset, so
    that the command starts its own local Ray, as a user's first run does."""
    env = cli_env(RAY_DISABLE_USAGE_STATS="1", ENDPOINT_KEY=ENDPOINT_KEY)
    env.pop("RAY_ADDRESS", None)
    return {**env, **(cluster or {})}


def args_for(spec: Path, inputs: Path, out: Path, server: IndependentOpenAIServer) -> list[str]:
    return [
        "--org",
        "ray",
        "--base-url",
        server.base_url,
        "--model-name",
        MODEL,
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--output-base-dir",
        str(out),
        "--max-attempts",
        "2",
        "--api-key-env",
        "ENDPOINT_KEY",
    ]


def results_of(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def answer(body: dict) -> str:
    return "answer to " + body["messages"][-1]["content"]


def test_every_answer_on_its_own_input_and_failures_typed(tmp_path: Path, shared_ray_env: dict[str, str]) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(
        tmp_path / "inputs",
        {
            "alpha": [f"alpha {i}" for i in range(30)],
            "beta": ["beta 0", "REFUSE ME", "BROKEN SERVER", "beta 3"],
        },
    )

    def fail(custom_id: str | None, body: dict) -> tuple[int, dict] | None:
        prompt = body["messages"][-1]["content"]
        if prompt == "REFUSE ME":
            return 400, {
                "message": "prompt rejected",
                "type": "invalid_request_error",
                "param": None,
                "code": "content_filter",
            }
        if prompt == "BROKEN SERVER":
            return 500, {"message": "internal error", "type": "server_error", "param": None, "code": None}
        return None

    with IndependentOpenAIServer(answer=answer, fail=fail) as server:
        done = run_generation(
            args_for(spec, inputs, tmp_path / "out", server),
            ray_env(shared_ray_env),
            timeout=240,
            via=LOSING_THE_EXIT_RACE,
        )
        sent = Counter(body["messages"][-1]["content"] for body in server.chat_requests)
        base_url = server.base_url
        # The same command again: the finished run is reused and nothing is sent (this test's
        # own run is what there is to reuse: one Ray start-up for both checks).
        again = run_generation(
            args_for(spec, inputs, tmp_path / "out", server),
            ray_env(shared_ray_env),
            timeout=240,
            via=LOSING_THE_EXIT_RACE,
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.chat_requests) == sum(sent.values())
    assert "An identical run already finished" in " ".join(again.stderr.split())
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = only_run_dir(tmp_path / "out")
    records = results_of(run_dir)
    assert [r["input_text"] for r in records["alpha"]] == [f"alpha {i}" for i in range(30)]
    assert [r["input_text"] for r in records["beta"]] == ["beta 0", "REFUSE ME", "BROKEN SERVER", "beta 3"]
    by_input = {r["input_text"]: r for rs in records.values() for r in rs}
    for text, record in by_input.items():
        if text == "REFUSE ME":
            assert record["outcome"] == "errored" and record["output_text"] is None
            assert record["error"]["code"] == "content_filter" and record["error"]["retryable"] is False
        elif text == "BROKEN SERVER":
            assert record["outcome"] == "errored" and record["error"]["retryable"] is True
            assert record["attempts"] == 2
        else:
            assert record["outcome"] == "succeeded" and record["output_text"] == f"answer to {text}"
    assert sent["REFUSE ME"] == 1 and sent["BROKEN SERVER"] == 2  # the 400 is final; the 500 is retried once
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["provider"] == "ray" and manifest["parameters"]["ray"]["base_url"] == base_url
    written = [p for p in run_dir.rglob("*") if p.is_file()]
    assert not [p for p in written if ENDPOINT_KEY.encode() in p.read_bytes()]
    assert ENDPOINT_KEY not in done.stdout + done.stderr


# The suite's 300 s timeout is a hang guard; this test starts a local Ray of its own and kills two processes, and at
# load 6-12 on 2 cores it took longer than that without hanging. A watchdog, not a timing assertion.
@pytest.mark.timeout(900)
def test_sigkill_halfway_then_resume_loses_nothing_and_resends_little(
    tmp_path: Path, shared_ray_env: dict[str, str]
) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s0", "s1", "s2"])
    per_statement = 80  # 240 requests: kills after 40 and 120 outcomes (the same proportions as 600, 100, 300)
    inputs = write_inputs(
        tmp_path / "inputs", {f"s{k}": [f"s{k} q{i}" for i in range(per_statement)] for k in range(3)}
    )

    def slow_answer(body: dict) -> str:
        time.sleep(0.02)  # the server's own pace, so the kill lands while requests are in flight
        return answer(body)

    def run_until(command: list[str], env: dict[str, str], journaled: int, sig: signal.Signals) -> int:
        """Start the command, send `sig` once `journaled` outcomes are in the journal; its exit code."""
        process = start_generation(command, env, via=LOSING_THE_EXIT_RACE)
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and process.poll() is None:
                runs = list(out.glob("*/*/*/realtime/outcomes.jsonl"))
                if runs and sum(1 for _ in runs[0].open("rb")) >= journaled:
                    break
                time.sleep(0.05)
            assert process.poll() is None, "the run ended before it got that far"
            os.kill(process.pid, sig)
            _, stderr = process.communicate(timeout=120)
            if process.returncode not in (3, -signal.SIGKILL):
                print(stderr[-4000:])  # why it did not stop cleanly, in the failure report
            return process.returncode
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()

    out = tmp_path / "out"
    with IndependentOpenAIServer(answer=slow_answer) as server:
        # Ctrl+C: stops cleanly, exit 3, what finished is kept. This command starts its own local Ray (the exit
        # race it must not lose is that of a process whose Ray goes with it); the resumes join the shared one.
        assert run_until(args_for(spec, inputs, out, server), ray_env(), 40, signal.SIGINT) == 3
        env = ray_env(shared_ray_env)
        run_dir = only_run_dir(out)
        # What finished before the stop is kept on disk: in results/ or in the journal behind it (answers journaled
        # after the last merge, up to the process's end, are merged by the resume below, as after a kill).
        journal = (run_dir / "realtime" / "outcomes.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        whole = [json.loads(line) for line in journal if line.endswith("\n")]  # not a torn last line
        kept = {(sid, r["original_index"]) for sid, rs in results_of(run_dir).items() for r in rs} | {
            (e["statement_id"], e["record"]["original_index"]) for e in whole
        }
        assert len(kept) >= 40
        # SIGKILL while resuming, past halfway; the cluster the killed driver had joined serves the next resume.
        assert run_until(["--resume", str(run_dir)], env, 120, signal.SIGKILL) == -signal.SIGKILL
        status = subprocess.run(
            [sys.executable, "-m", "speceval", "status", "--json", str(run_dir)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        (row,) = json.loads(status.stdout)
        assert row["provider"] == "ray" and row["requests"] == 3 * per_statement
        assert row["outcome_counts"]["succeeded"] >= 120 and row["outcome_counts"]["not sent yet"] > 0
        resumed = run_generation(["--resume", str(run_dir)], env, timeout=240, via=LOSING_THE_EXIT_RACE)
        sent = Counter(body["messages"][-1]["content"] for body in server.chat_requests)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    records = results_of(run_dir)
    assert sum(len(rs) for rs in records.values()) == 3 * per_statement
    for statement_id, rs in records.items():
        assert [r["input_text"] for r in rs] == [f"{statement_id} q{i}" for i in range(per_statement)]
        assert all(r["outcome"] == "succeeded" and r["output_text"] == "answer to " + r["input_text"] for r in rs)
    assert set(sent) == {r["input_text"] for rs in records.values() for r in rs}
    resent = sum(n - 1 for n in sent.values())
    assert resent <= 0.3 * 3 * per_statement, f"{resent} of {3 * per_statement} requests were sent twice"

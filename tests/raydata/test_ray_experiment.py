"""An experiment whose candidate is `org: ray` (Ray Data LLM's HTTP processor on the test run's CPU Ray) against the
independent server's chat endpoint: the `speceval run` command, its run directory and a rerun that sends nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from speceval.paths import safe_filename
from tests.conftest import REPO, cli_env
from tests.experiments.endpoint_grid import answer, check_replies, experiment_head
from tests.independent.openai_server import IndependentOpenAIServer
from tests.raydata import NEEDS_RAY
from tests.raydata.ray_exit_race import LOSING_THE_EXIT_RACE  # Ray's exit-time shutdown always ends with status 1

pytestmark = NEEDS_RAY

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ENDPOINT_KEY = "sk-ray-endpoint-DO-NOT-LEAK-1a2b3c4d"


def test_a_ray_candidate_in_an_experiment_answers_every_input_and_a_rerun_sends_nothing(
    tmp_path: Path, shared_ray_env: dict[str, str]
) -> None:
    env = cli_env(RAY_DISABLE_USAGE_STATS="1", ENDPOINT_KEY=ENDPOINT_KEY, **shared_ray_env)  # the run's Ray
    with IndependentOpenAIServer(answer=answer) as server:
        base_url = server.base_url
        path = tmp_path / "exp.yaml"
        path.write_text(
            experiment_head(tmp_path, "ray")
            + f"""candidates:
  - model: {MODEL}
    org: ray
    base_url: {base_url}
    api_key_env: ENDPOINT_KEY
    max_concurrency: 2
stages: [generation]
"""
        )
        command = [sys.executable, "-m", *LOSING_THE_EXIT_RACE, "speceval", "run", str(path)]
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
        sent = len(server.chat_requests)
        again = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
        sent_again = len(server.chat_requests)
    assert done.returncode == 0, done.stderr[-3000:]
    assert again.returncode == 0, again.stderr[-3000:]
    assert (sent, sent_again) == (5, 5)
    run_dir = tmp_path / "out" / "generations" / "small" / "default" / "run1" / safe_filename(MODEL)
    check_replies(run_dir)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["provider"] == "ray" and manifest["status"] == "finished"
    assert manifest["parameters"]["ray"]["base_url"] == base_url
    assert manifest["parameters"]["ray"]["max_concurrency"] == 2
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not [p for p in written if ENDPOINT_KEY.encode() in p.read_bytes()]

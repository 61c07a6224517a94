"""A compliance judge served through `--compliance-judge-org ray`, against a server written from the OpenAPI spec.

One command judges two candidates (offline generation runs) on the test run's Ray cluster: each verdict must land
on the answer it was asked about, so the server's verdict is derived from the answer text it finds in the prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli_env
from tests.independent.openai_server import IndependentOpenAIServer
from tests.pipelines.endpoint_judge import check_verdicts, fake_judge, judge, two_candidates
from tests.raydata import NEEDS_RAY

pytestmark = NEEDS_RAY

JUDGE = "meta-llama/Llama-3.1-70B-Instruct"
ENDPOINT_KEY = "sk-judge-endpoint-DO-NOT-LEAK-7a6b5c4d"


def test_ray_judge_puts_every_verdict_on_its_own_answer(tmp_path: Path, shared_ray_env: dict[str, str]) -> None:
    spec, candidates, outputs = two_candidates(tmp_path)
    out = tmp_path / "judged"
    env = cli_env(RAY_DISABLE_USAGE_STATS="1", ENDPOINT_KEY=ENDPOINT_KEY, **shared_ray_env)
    with IndependentOpenAIServer(answer=fake_judge(outputs)) as server:
        done = judge(
            spec,
            candidates,
            [
                "--compliance-judge-model-name",
                JUDGE,
                "--compliance-judge-org",
                "ray",
                "--base-url",
                server.base_url,
                "--api-key-env",
                "ENDPOINT_KEY",
                "--max-concurrency",
                "2",
            ],
            out,
            env,
            fresh=True,
        )
        sent = len(server.chat_requests)
        base_url = server.base_url
    assert done.returncode == 0, done.stderr[-3000:]
    assert sent == 10  # each answer judged once
    (judge_dir,) = (out / "spec_spec").glob("judge_meta-llama-Llama-3.1-70B-Instruct*")
    check_verdicts(judge_dir, candidates)
    for model in candidates:
        manifest = json.loads((judge_dir / model / "run.json").read_text())
        assert manifest["provider"] == "ray" and manifest["parameters"]["ray"]["base_url"] == base_url
        assert manifest["parameters"]["ray"]["api_key_env"] == "ENDPOINT_KEY"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in written if ENDPOINT_KEY.encode() in p.read_bytes()]
    assert ENDPOINT_KEY not in done.stdout + done.stderr

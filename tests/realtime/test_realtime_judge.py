"""A compliance judge served without a batch API (`--compliance-judge-org openai-compatible --base-url`), called
through the realtime engine, against a server written from the OpenAPI spec; then rerun without the endpoint
flags: the recorded endpoint is used and nothing is sent again."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli_env
from tests.independent.openai_server import IndependentOpenAIServer
from tests.pipelines.endpoint_judge import check_verdicts, fake_judge, judge, two_candidates

JUDGE = "Qwen/Qwen2.5-72B-Instruct"


def test_openai_compatible_judge_verdicts_on_their_answers_and_rerun_sends_nothing(tmp_path: Path) -> None:
    spec, candidates, outputs = two_candidates(tmp_path)
    out = tmp_path / "judged"
    org = ["--compliance-judge-model-name", JUDGE, "--compliance-judge-org", "openai-compatible"]
    with IndependentOpenAIServer(answer=fake_judge(outputs)) as server:
        done = judge(spec, candidates, [*org, "--base-url", server.base_url, "--max-concurrency", "3"], out, cli_env())
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.chat_requests) == 10
        again = judge(spec, candidates, org, out, cli_env())  # the endpoint comes from run.json
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.chat_requests) == 10
        base_url = server.base_url
    (judge_dir,) = (out / "spec_spec").glob("judge_Qwen-Qwen2.5-72B-Instruct*")
    check_verdicts(judge_dir, candidates)
    for model in candidates:
        manifest = json.loads((judge_dir / model / "run.json").read_text())
        assert manifest["provider"] == "openai-compatible"
        assert manifest["parameters"]["realtime"]["base_url"] == base_url
        assert manifest["parameters"]["realtime"]["max_concurrency"] == 3


def test_endpoint_flags_on_the_wrong_judge_are_refused_before_anything_is_sent(tmp_path: Path) -> None:
    spec, candidates, outputs = two_candidates(tmp_path)
    with IndependentOpenAIServer(answer=fake_judge(outputs)) as server:
        cases = {
            "--base-url: only for judges without a batch API": [
                "--compliance-judge-model-name", "gpt-4o", "--compliance-judge-org", "openai",
                "--base-url", server.base_url],
            "--vllm: only for a ray judge": [
                "--compliance-judge-model-name", JUDGE, "--compliance-judge-org", "openai-compatible",
                "--base-url", server.base_url, "--vllm"],
            "--dry-run plans batch jobs": [
                "--compliance-judge-model-name", JUDGE, "--compliance-judge-org", "openai-compatible",
                "--base-url", server.base_url, "--dry-run"],
            "the openai-compatible judge needs --base-url": [
                "--compliance-judge-model-name", JUDGE, "--compliance-judge-org", "openai-compatible"],
        }
        for message, args in cases.items():
            done = judge(spec, candidates, args, tmp_path / "judged", cli_env())
            assert done.returncode == 2 and message in done.stderr, (args, done.stderr[-2000:])
        assert server.chat_requests == [] and server.batches == []
    assert not list((tmp_path / "judged").glob("**/run.json"))

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
                "--compliance-judge-model-name",
                "gpt-4o",
                "--compliance-judge-org",
                "openai",
                "--base-url",
                server.base_url,
            ],
            "--vllm: only for a ray judge": [
                "--compliance-judge-model-name",
                JUDGE,
                "--compliance-judge-org",
                "openai-compatible",
                "--base-url",
                server.base_url,
                "--vllm",
            ],
            "--dry-run plans batch jobs": [
                "--compliance-judge-model-name",
                JUDGE,
                "--compliance-judge-org",
                "openai-compatible",
                "--base-url",
                server.base_url,
                "--dry-run",
            ],
            "the openai-compatible judge needs --base-url": [
                "--compliance-judge-model-name",
                JUDGE,
                "--compliance-judge-org",
                "openai-compatible",
            ],
        }
        for message, args in cases.items():
            done = judge(spec, candidates, args, tmp_path / "judged", cli_env())
            assert done.returncode == 2 and message in done.stderr, (args, done.stderr[-2000:])
        assert server.chat_requests == [] and server.batches == []
    assert not list((tmp_path / "judged").glob("**/run.json"))


def test_endpoint_keys_in_the_yaml_reach_the_judge_and_flags_override_them(tmp_path: Path) -> None:
    spec, candidates, outputs = two_candidates(tmp_path)
    out = tmp_path / "judged"
    config = tmp_path / "judge.yaml"
    with IndependentOpenAIServer(answer=fake_judge(outputs)) as server:
        config.write_text(
            f"compliance_judge_model_name: {JUDGE}\ncompliance_judge_org: openai-compatible\n"
            f"base_url: {server.base_url}\nmax_concurrency: 3\nrpm: 6000\n"
        )
        done = judge(spec, candidates, ["--config-file", str(config), "--max-concurrency", "2"], out, cli_env())
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.chat_requests) == 10
        base_url = server.base_url
    (judge_dir,) = (out / "spec_spec").glob("judge_Qwen-Qwen2.5-72B-Instruct*")
    check_verdicts(judge_dir, candidates)
    recorded = json.loads((judge_dir / next(iter(candidates)) / "run.json").read_text())["parameters"]["realtime"]
    assert (recorded["base_url"], recorded["rpm"], recorded["max_concurrency"]) == (base_url, 6000, 2)


def test_endpoint_keys_in_the_yaml_of_a_judge_that_ignores_them_are_refused_with_file_and_line(tmp_path: Path) -> None:
    spec, candidates, _ = two_candidates(tmp_path)
    config = tmp_path / "judge.yaml"
    cases = {
        "compliance_judge_model_name: gpt-4o\ncompliance_judge_org: openai\nbase_url: http://127.0.0.1:9/v1\n": (
            f"{config}, line 3: base_url: only for models without a batch API"
        ),
        f"compliance_judge_model_name: {JUDGE}\ncompliance_judge_org: openai-compatible\n"
        "base_url: http://127.0.0.1:9/v1\nvllm: true\n": f"{config}, line 4: vllm: only for org ray",
        f"compliance_judge_model_name: {JUDGE}\ncompliance_judge_org: openai-compatible\nrpm: 0\n": (
            f"{config}, line 3, field 'rpm': must be greater than 0"
        ),
        f"compliance_judge_model_name: {JUDGE}\ncompliance_judge_org: ray\ntpm: 5\n": (
            f"{config}, line 3: tpm: not taken by org ray"
        ),
        # Both ways of reaching a Ray judge at once: the keys reach the Ray settings' own check (no Ray starts).
        f"compliance_judge_model_name: {JUDGE}\ncompliance_judge_org: ray\nbase_url: http://127.0.0.1:9/v1\n"
        "vllm: true\n": "takes either --base-url (an endpoint) or --vllm",
    }
    for text, message in cases.items():
        config.write_text(text)
        done = judge(spec, candidates, ["--config-file", str(config)], tmp_path / "judged", cli_env())
        assert done.returncode == 2 and message in done.stderr, (text, done.stderr[-2000:])
    assert not list((tmp_path / "judged").glob("**/run.json"))

"""Experiments with models served without a batch API (`org: openai-compatible`), beside a batch candidate.

The endpoint is the independent server (written from the OpenAPI spec); the batch candidate's API is the
emulator. Both candidates go through the same pipelined loop, and the endpoint judge judges both.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from speceval.emulator import Emulator, FaultConfig
from speceval.errors import ConfigError, InputError
from speceval.experiments.loading import load_experiment
from speceval.experiments.runner import run_experiment
from tests.conftest import TEST_KEY
from tests.experiments.endpoint_grid import answer, check_replies, check_verdicts, experiment_head
from tests.independent.openai_server import IndependentOpenAIServer

BATCH = "gpt-4.1-mini-2025-04-14"
LOCAL = "llama-3.1-8b-local"
JUDGE = "judge-70b-local"
ENDPOINT_KEY = "sk-endpoint-DO-NOT-LEAK-5e6f7a8b9c"


def experiment(
    tmp_path: Path,
    base_url: str,
    *,
    judge_keys: str = "",
    extra: str = "",
    stages: str = "generation, compliance, report",
) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        experiment_head(tmp_path, "endpoints")
        + f"""candidates:
  - model: {BATCH}
  - model: {LOCAL}
    org: openai-compatible
    base_url: {base_url}
    api_key_env: ENDPOINT_KEY
    max_concurrency: 2
{extra}judges:
  - model: {JUDGE}
    org: openai-compatible
    base_url: {base_url}
    api_key_env: ENDPOINT_KEY
    rpm: 6000
{judge_keys}stages: [{stages}]
engine:
  poll_interval: 0.2
"""
    )
    return path


def test_batch_and_endpoint_candidates_judged_by_an_endpoint_judge_and_a_rerun_sends_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ENDPOINT_KEY", ENDPOINT_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emulator,
        IndependentOpenAIServer(answer=answer) as server,
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        base_url = server.base_url
        path = experiment(tmp_path, base_url)
        outcome = run_experiment(path)
        sent, jobs = len(server.chat_requests), len(emulator.list_jobs("openai"))
        again = run_experiment(path)
        sent_again, jobs_again = len(server.chat_requests), len(emulator.list_jobs("openai"))
    assert outcome.finished and again.finished, (outcome.reason, again.reason)
    assert outcome.report is not None and outcome.report.is_file()
    assert sent == 5 + 2 * 5  # the endpoint candidate's five answers, then the judge's ten verdicts
    assert jobs >= 1  # the batch candidate went through its batch API
    assert (sent_again, jobs_again) == (sent, jobs)  # the rerun sends nothing
    out = tmp_path / "out"
    local_run = out / "generations" / "small" / "default" / "run1" / LOCAL
    check_replies(local_run)
    (judge_dir,) = (out / "compliance" / "small" / "default" / "run1" / "spec_small").glob("judge_*")
    assert check_verdicts(judge_dir) == 2 * 5  # every answer of both candidates, each its own verdict
    generation = json.loads((local_run / "run.json").read_text())
    assert generation["provider"] == "openai-compatible" and generation["status"] == "finished"
    assert generation["parameters"]["realtime"]["base_url"] == base_url
    assert generation["parameters"]["realtime"]["api_key_env"] == "ENDPOINT_KEY"
    assert generation["parameters"]["realtime"]["max_concurrency"] == 2
    judged = json.loads((judge_dir / LOCAL / "run.json").read_text())
    assert judged["provider"] == "openai-compatible" and judged["parameters"]["realtime"]["rpm"] == 6000
    assert not [p for p in out.rglob("*") if p.is_file() and ENDPOINT_KEY.encode() in p.read_bytes()]


def line_of(path: Path, text: str) -> int:
    return path.read_text().splitlines().index(text) + 1


def test_a_ray_key_on_an_endpoint_entry_is_refused_with_its_line(tmp_path):
    path = experiment(tmp_path, "http://127.0.0.1:9/v1", judge_keys="    vllm: true\n")
    with pytest.raises(InputError) as caught:
        load_experiment(path)
    assert caught.value.line == line_of(path, "    vllm: true") and caught.value.field == "judges[0].vllm"
    assert "only for org ray" in caught.value.reason


def test_an_endpoint_key_on_a_batch_candidate_is_refused_before_anything_runs(tmp_path):
    path = experiment(tmp_path, "http://127.0.0.1:9/v1", extra="  - model: gpt-4.1-nano-2025-04-14\n    rpm: 100\n")
    with pytest.raises(InputError) as caught:
        load_experiment(path)
    assert caught.value.field == "candidates[2].rpm" and caught.value.line == line_of(path, "    rpm: 100")
    assert "only for models without a batch API" in caught.value.reason and "org openai" in caught.value.reason
    assert not (tmp_path / "out").exists()


def test_an_out_of_range_or_unknown_endpoint_key_is_refused(tmp_path):
    path = experiment(
        tmp_path, "http://127.0.0.1:9/v1", extra="  - model: other\n    org: together\n    max_concurrency: 0\n"
    )
    with pytest.raises(InputError, match="at least 1"):
        load_experiment(path)
    path = experiment(
        tmp_path, "http://127.0.0.1:9/v1", extra="  - model: other\n    org: together\n    base_urll: http://x\n"
    )
    with pytest.raises(InputError, match="unknown key"):
        load_experiment(path)


def test_an_endpoint_candidate_without_base_url_is_refused_before_anything_is_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-candidates-key")  # so the endpoint is what is refused
    path = experiment(tmp_path, "http://127.0.0.1:9/v1", extra="  - model: other\n    org: openai-compatible\n")
    with pytest.raises(ConfigError, match=r"candidates\[2\] \(org openai-compatible\) needs base_url"):
        run_experiment(path)
    assert not list((tmp_path / "out").glob("generations/**/run.json"))


def test_a_blocked_endpoint_candidate_does_not_hold_up_the_batch_candidate_and_its_judging(tmp_path, monkeypatch):
    """The endpoint answers nothing until the batch candidate has been generated *and judged*: only a loop in
    which the realtime run waits on its own threads gets there (otherwise the endpoint gives up waiting)."""
    monkeypatch.setenv("ENDPOINT_KEY", ENDPOINT_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    judged = threading.Event()
    gave_up: list[str] = []

    def held_answer(body: dict) -> str:
        if body["model"] == LOCAL and not judged.wait(60):
            gave_up.append(body["messages"][-1]["content"])
        return answer(body)

    def observe(message: str) -> None:
        if f"compliance small/default/run1 judge={JUDGE} {BATCH}: finished" in message:
            judged.set()

    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emulator,
        IndependentOpenAIServer(answer=held_answer) as server,
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        outcome = run_experiment(
            experiment(tmp_path, server.base_url, stages="generation, compliance"), observer=observe
        )
    assert outcome.finished, outcome.reason
    assert judged.is_set() and gave_up == []
    check_replies(tmp_path / "out" / "generations" / "small" / "default" / "run1" / LOCAL)


def test_an_endpoint_judges_max_concurrency_holds_across_all_its_tasks(tmp_path, monkeypatch):
    """`max_concurrency: 1` on the judge: its two compliance tasks (one engine each) never have two requests at the
    server at once. The first judge request is held until a second one arrives, or for 5 s if none can."""
    monkeypatch.setenv("ENDPOINT_KEY", ENDPOINT_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    lock, second = threading.Lock(), threading.Event()
    in_flight, peak, held = [0], [0], []

    def counted_answer(body: dict) -> str:
        if body["model"] != JUDGE:
            return answer(body)
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            first = not held
            held.append(True)
            if in_flight[0] > 1:
                second.set()
        if first:
            second.wait(5)
        with lock:
            in_flight[0] -= 1
        return answer(body)

    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emulator,
        IndependentOpenAIServer(answer=counted_answer) as server,
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        path = experiment(
            tmp_path, server.base_url, judge_keys="    max_concurrency: 1\n", stages="generation, compliance"
        )
        outcome = run_experiment(path)
    assert outcome.finished, outcome.reason
    assert len(held) == 2 * 5 and peak[0] == 1

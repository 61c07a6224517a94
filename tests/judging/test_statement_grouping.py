"""Judge requests reach the provider grouped by statement inside every job (issue 14: a statement's requests share
a cached prompt prefix only if they are sent together), even when the candidates' answers on disk interleave
statements.

Checked at the HTTP boundary, on what the servers received: the request files uploaded to the independent OpenAI
server, and the Message Batches the emulator created (its state directory). A request's statement is read from a
tag in its judged question, not from anything speceval records.

The grouping is the engine's: its ledger (`speceval/batch/ledger.py`) holds inputs per statement and hands out
pending ones statement by statement, whatever order a pipeline built its items in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.emulator import Emulator, FaultConfig
from speceval.pipelines.candidates import resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.judge_run import JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.registry import create_batched_model
from speceval.spec import load_spec
from speceval.wire.params import GenerationParams
from tests.conftest import SAMPLE_SPEC, TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer

SPEC = load_spec(SAMPLE_SPEC)
STATEMENTS = [statement.id for statement in SPEC.statements[:4]]
PER_STATEMENT = 5
BATCH_SIZE = 8  # 20 requests: jobs of 8, 8 and 4, most of them spanning two or three statements
TAG = re.compile(r"<<([a-z_]+)#\d+>>")
JUDGES = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-6"}


def _interleaved_candidate(directory: Path, answer: str) -> Path:
    """An original Together `results.json` whose records take the statements in turn (s1, s2, s3, s4, s1, ...)."""
    records = [
        {
            "statement_id": statement_id,
            "original_index": index,
            "input_text": f"Question {index} on {statement_id}? <<{statement_id}#{index}>>",
            "output_text": f"{answer} {index}.",
        }
        for index in range(PER_STATEMENT)
        for statement_id in STATEMENTS
    ]
    directory.mkdir(parents=True)
    (directory / "results.json").write_text(json.dumps({"results": records}), encoding="utf-8")
    return directory


def _statement(request_text: str) -> str:
    (statement_id,) = {str(found) for found in TAG.findall(request_text)}  # one judged question per request
    return statement_id


def _grouped(order: list[str]) -> bool:
    """Each statement's requests are contiguous."""
    return order == sorted(order, key=order.index)


def _settings(tmp_path: Path, provider: str) -> JudgeSettings:
    spec = tmp_path / "spec.jsonl"
    spec.write_text(
        "".join(
            line + "\n"
            for line in SAMPLE_SPEC.read_text(encoding="utf-8").splitlines()
            if json.loads(line)["id"] in STATEMENTS
        ),
        encoding="utf-8",
    )
    return JudgeSettings(
        spec_path=spec,
        judge_model=JUDGES[provider],
        judge_org=provider,
        output_dir_base=tmp_path / "judged",
        params=GenerationParams(max_tokens=64),
        engine=EngineOptions(batch_size=BATCH_SIZE, poll_interval=0.05, max_attempts=1),
    )


def _openai_jobs(server: IndependentOpenAIServer) -> Iterator[list[str]]:
    """Statements of each uploaded batch input file, in file order, oldest batch first."""
    for batch in server.batches:
        data = server.files[batch["input_file_id"]].data.decode()
        yield [_statement(line) for line in data.splitlines() if line.strip()]


def _emulated_anthropic_jobs(state_dir: Path) -> Iterator[list[str]]:
    """Statements of each Message Batch the emulator received, in request order, oldest batch first."""
    jobs = [json.loads(path.read_text(encoding="utf-8")) for path in (state_dir / "jobs" / "anthropic").glob("*.json")]
    for job in sorted(jobs, key=lambda job: job["seq"]):
        yield [_statement(request["prompt"]) for request in job["requests"]]


def _check(jobs: list[list[str]], expected_requests: int) -> None:
    assert sum(len(job) for job in jobs) == expected_requests and len(jobs) > 1
    assert any(len(set(job)) > 1 for job in jobs)  # a job spanning statements: the check below means something
    for job in jobs:
        assert _grouped(job), job


def test_the_candidates_on_disk_interleave_statements(tmp_path: Path) -> None:
    # The premise of the tests below: answers come off disk interleaved, so grouping is the judge's doing.
    data = json.loads((_interleaved_candidate(tmp_path / "cand", "An answer") / "results.json").read_text())
    assert not _grouped([record["statement_id"] for record in data["results"]])


def test_compliance_requests_uploaded_to_openai_are_grouped_by_statement(tmp_path: Path) -> None:
    candidates = resolve_candidates([_interleaved_candidate(tmp_path / "cand-model", "An answer")])
    settings = _settings(tmp_path, "openai")
    with IndependentOpenAIServer() as server:
        model = create_batched_model(
            JUDGES["openai"], "openai", settings.params, base_url=server.base_url, api_key=TEST_KEY
        )
        summaries, _ = BatchedComplianceJudge(settings, candidates, canaries=False).run(model)
        jobs = list(_openai_jobs(server))
    assert all(summary.finished for summary in summaries)
    _check(jobs, len(STATEMENTS) * PER_STATEMENT)


def test_compliance_message_batches_sent_to_anthropic_are_grouped_by_statement(tmp_path: Path) -> None:
    candidates = resolve_candidates([_interleaved_candidate(tmp_path / "cand-model", "An answer")])
    settings = _settings(tmp_path, "anthropic")
    state_dir = tmp_path / "emulator-state"
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05), state_dir=state_dir) as emulator:
        model = create_batched_model(
            JUDGES["anthropic"], "anthropic", settings.params, base_url=emulator.anthropic_base_url, api_key=TEST_KEY
        )
        summaries, _ = BatchedComplianceJudge(settings, candidates, canaries=False).run(model)
    assert all(summary.finished for summary in summaries)
    _check(list(_emulated_anthropic_jobs(state_dir)), len(STATEMENTS) * PER_STATEMENT)


def test_ranking_requests_of_both_orders_are_grouped_by_statement(tmp_path: Path) -> None:
    candidates = resolve_candidates(
        [
            _interleaved_candidate(tmp_path / "model-one", "One says"),
            _interleaved_candidate(tmp_path / "model-two", "Two says"),
        ]
    )
    settings = _settings(tmp_path, "openai")
    with IndependentOpenAIServer() as server:
        model = create_batched_model(
            JUDGES["openai"], "openai", settings.params, base_url=server.base_url, api_key=TEST_KEY
        )
        summaries, _, _ = BatchedRankingPipeline(settings, candidates).run(model)
        jobs = list(_openai_jobs(server))
    assert len(summaries) == 2 and all(summary.finished for summary in summaries)  # both orders of the pair
    _check(jobs, 2 * len(STATEMENTS) * PER_STATEMENT)

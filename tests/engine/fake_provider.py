"""An in-memory provider behind the `BatchedModel` interface, for testing the engine's own logic.

It is a fake *provider* (the remote side), not a mock of engine code: the engine runs unchanged against it.
Provider-SDK behaviour is tested separately against the HTTP emulator.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from speceval.batch.model import BatchedModel, ProviderLimits
from speceval.batch.records import (
    BatchRecord,
    JobState,
    OpenAIHandle,
    Outcome,
    RemoteJob,
    RequestError,
    RequestOutcome,
    SubmissionIntent,
)
from speceval.errors import TransientProviderError
from speceval.wire.usage import Usage


@dataclass
class FakeJob:
    batch_id: str
    key: str
    lines: list[dict[str, str]]
    polls_left: int
    final_state: JobState = JobState.COMPLETED
    cancelled: bool = False


@dataclass
class FakeProvider:
    """The remote side. Knobs are set by tests; counters let tests assert what the engine did."""

    polls_to_complete: int = 1
    fail_marker: str = "[fail]"  # prompts containing it error permanently
    transient_marker: str = "[flaky]"  # prompts containing it error retryably on their first attempt
    expire_next: int = 0  # the next N jobs expire with only half their requests done
    lose_create_responses: int = 0  # the next N creates succeed remotely but raise as if the response was lost
    unreachable_creates: int = 0  # the next N creates never reach the provider (no network, a wrong base URL)
    unreachable_polls: int = 0  # the next N polls never reach the provider
    truncate_downloads: int = 0  # the next N result downloads are cut short
    drop_results: dict[str, int] = field(default_factory=dict)  # prompt → how many downloads omit its result
    jobs: dict[str, FakeJob] = field(default_factory=dict)
    shuffle_seed: int = 0  # varies the (always shuffled) order results come back in
    creates: int = 0
    seen_flaky: set[str] = field(default_factory=set)


class FakeBatchedModel(BatchedModel):
    provider: ClassVar[str] = "openai"
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=1000, max_bytes=10_000_000)

    def __init__(self, remote: FakeProvider, model_name: str = "fake-model"):
        super().__init__(model_name)
        self.remote = remote

    def format_request(self, custom_id: str, prompt: str) -> bytes:
        return json.dumps({"custom_id": custom_id, "prompt": prompt}).encode() + b"\n"

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        remote = self.remote
        if remote.unreachable_creates:
            remote.unreachable_creates -= 1
            raise TransientProviderError("fake", "upload request file", "APIConnectionError: Connection error.")
        remote.creates += 1
        lines = [json.loads(line) for line in request_file.read_text().splitlines()]
        batch_id = f"batch_{remote.creates:04d}"
        job = FakeJob(batch_id, intent.idempotency_key, lines, remote.polls_to_complete)
        if remote.expire_next:
            remote.expire_next -= 1
            job.final_state = JobState.EXPIRED
        remote.jobs[batch_id] = job
        if remote.lose_create_responses:
            remote.lose_create_responses -= 1
            raise TransientProviderError("fake", "create batch", "connection reset before the response arrived")
        return self._job(job)

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        for job in self.remote.jobs.values():
            if job.key == intent.idempotency_key:
                return self._job(job)
        return None

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        if self.remote.unreachable_polls:
            self.remote.unreachable_polls -= 1
            raise TransientProviderError("fake", "poll batch", "APIConnectionError: Connection error.")
        job = self.remote.jobs[record.batch_id]
        if job.polls_left > 0:
            job.polls_left -= 1
        return self._job(job)

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        job = self.remote.jobs[record.batch_id]
        job.cancelled = True
        job.final_state = JobState.CANCELLED
        job.polls_left = 0
        return self._job(job)

    def get_batch_results(self, record: BatchRecord) -> Iterator[RequestOutcome]:
        remote = self.remote
        job = remote.jobs[record.batch_id]
        if remote.truncate_downloads:
            remote.truncate_downloads -= 1
            raise TransientProviderError("fake", "download results", "result line is not valid JSON (truncated)")
        lines = list(job.lines)
        # Providers return results in any order.
        random.Random(f"{remote.shuffle_seed}:{record.batch_id}").shuffle(lines)
        if job.final_state in (JobState.EXPIRED, JobState.CANCELLED):
            lines = lines[: len(lines) // 2]
        for line in lines:
            prompt, custom_id = line["prompt"], line["custom_id"]
            if remote.drop_results.get(prompt, 0) > 0:
                remote.drop_results[prompt] -= 1
                continue
            if remote.fail_marker in prompt:
                yield RequestOutcome(
                    custom_id=custom_id,
                    outcome=Outcome.ERRORED,
                    error=RequestError(code="invalid_request_error", message="prompt rejected", status_code=400),
                )
            elif remote.transient_marker in prompt and prompt not in remote.seen_flaky:
                remote.seen_flaky.add(prompt)
                yield RequestOutcome(
                    custom_id=custom_id,
                    outcome=Outcome.ERRORED,
                    error=RequestError(code="server_error", message="try again", status_code=500, retryable=True),
                )
            else:
                yield RequestOutcome(
                    custom_id=custom_id,
                    outcome=Outcome.SUCCEEDED,
                    output_text=f"answer to: {prompt}",
                    usage=Usage(input_tokens=3, output_tokens=5),
                )

    def _job(self, job: FakeJob) -> RemoteJob:
        state = job.final_state if job.polls_left == 0 else JobState.IN_PROGRESS
        return RemoteJob(
            batch_id=job.batch_id,
            state=state,
            raw_state=state.value,
            handle=OpenAIHandle(input_file_id=f"file-{job.batch_id}"),
            request_count=len(job.lines),
        )

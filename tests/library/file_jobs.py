"""A provider of our own, for tests and as the README's example: a batch service backed by a folder of job files.

The "service" is a folder (`FILEJOBS_DIR`, or the `base_url` provider option): each job is `<job id>.json` holding
its tag (our idempotency key), the request lines it was sent, and its state. A job completes the first time it is
polled while no `hold` file is in the folder, so a test can keep jobs running while it kills a process. The
answer to a prompt is `"<model> answers: <prompt>"`. Nothing here is a mock of speceval: it is a real adapter
(`BatchedModel`) over a real, if tiny, job store, registered like any third-party provider.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from speceval import (
    BatchedModel,
    BatchRecord,
    ConfigError,
    GenerationParams,
    GenericHandle,
    JobState,
    Outcome,
    ProviderLimits,
    RemoteJob,
    RequestError,
    RequestOutcome,
    SubmissionIntent,
    Usage,
)
from speceval.atomic import atomic_write_json

ORG = "filejobs"
STORE_ENV = "FILEJOBS_DIR"
HOLD = "hold"


class FileJobStore:
    """The job folder: create, read, find by tag and cancel jobs (each write atomic, so SIGKILL leaves whole files)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def create(self, tag: str, model: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
        job = {"id": f"fj-{uuid.uuid4().hex[:12]}", "tag": tag, "model": model, "requests": lines, "state": "running"}
        atomic_write_json(self.root / f"{job['id']}.json", job)
        return job

    def get(self, job_id: str) -> dict[str, Any]:
        job: dict[str, Any] = json.loads((self.root / f"{job_id}.json").read_text(encoding="utf-8"))
        if job["state"] == "running" and not (self.root / HOLD).exists():
            job["state"] = "done"
            atomic_write_json(self.root / f"{job_id}.json", job)
        return job

    def jobs(self) -> list[dict[str, Any]]:
        return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(self.root.glob("fj-*.json"))]

    def find(self, tag: str) -> dict[str, Any] | None:
        return next((job for job in self.jobs() if job["tag"] == tag), None)

    def cancel(self, job_id: str) -> None:
        job = self.get(job_id)
        if job["state"] == "running":
            job["state"] = "cancelled"
            atomic_write_json(self.root / f"{job_id}.json", job)


_STATES = {"running": JobState.IN_PROGRESS, "done": JobState.COMPLETED, "cancelled": JobState.CANCELLED}


class FileJobsModel(BatchedModel):
    """The adapter: our requests as JSON lines in a job file, the job's state and answers back as our records."""

    provider: ClassVar[str] = ORG
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=1000, max_bytes=10_000_000)

    def __init__(self, model_name: str, params: GenerationParams | None = None, *, base_url: str | None = None):
        super().__init__(model_name, params)
        root = base_url or os.environ.get(STORE_ENV)
        if not root:
            raise ConfigError(f"the {ORG} provider needs {STORE_ENV}: the folder of its job files")
        self.store = FileJobStore(Path(root))

    def format_request(self, custom_id: str, prompt: str) -> bytes:
        body = {
            "custom_id": custom_id,
            "model": self.model_name,
            "prompt": prompt,
            "temperature": self.params.temperature,
            "max_tokens": self.params.max_tokens,
        }
        return (json.dumps(body) + "\n").encode("utf-8")

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        lines = [json.loads(line) for line in request_file.read_text(encoding="utf-8").splitlines() if line]
        return self._remote(self.store.create(intent.idempotency_key, self.model_name, lines))

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        job = self.store.find(intent.idempotency_key)
        return None if job is None else self._remote(job)

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        return self._remote(self.store.get(record.batch_id))

    def get_batch_results(self, record: BatchRecord) -> Iterator[RequestOutcome]:
        job = self.store.get(record.batch_id)
        for line in job["requests"]:
            if job["state"] == "cancelled":
                yield RequestOutcome(
                    custom_id=line["custom_id"],
                    outcome=Outcome.CANCELLED,
                    error=RequestError(code="cancelled", message="the job was cancelled"),
                )
                continue
            text = f"{line['model']} answers: {line['prompt']}"
            yield RequestOutcome(
                custom_id=line["custom_id"],
                outcome=Outcome.SUCCEEDED,
                output_text=text,
                usage=Usage(input_tokens=len(line["prompt"]) // 4 + 1, output_tokens=len(text) // 4),
            )

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        self.store.cancel(record.batch_id)
        return self.check_batch_progress(record)

    def _remote(self, job: dict[str, Any]) -> RemoteJob:
        return RemoteJob(
            batch_id=job["id"],
            state=_STATES[job["state"]],
            raw_state=job["state"],
            handle=GenericHandle(provider=ORG, ids={"job_file": f"{job['id']}.json"}),
            request_count=len(job["requests"]),
        )

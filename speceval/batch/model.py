"""`BatchedModel`: the provider-specific steps of a batch job, and nothing else.

The engine (`speceval.batch.engine`) owns chunking, the crash-safe submission protocol, polling, collecting,
retries and writing results. An adapter only translates: our request → one line of the provider's request
file; a submission → the provider's create calls; the provider's job and result shapes → `RemoteJob` and
`RequestOutcome`. Method names follow the original SpecEval (`generate_batch`, `check_batch_progress`,
`get_batch_results`) so research code ports easily, but they take and return typed records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from speceval.batch.answers import Answer
from speceval.batch.records import BatchRecord, ProviderHandle, RemoteJob, RequestOutcome, SubmissionIntent
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import PromptLike


@dataclass(frozen=True)
class ProviderLimits:
    """What one provider job may hold. The engine splits work so that no job exceeds either limit."""

    max_requests: int
    max_bytes: int


class BatchedModel(ABC):
    """A model reached through one provider's batch API.

    Subclasses set `provider` and `limits` and implement the abstract methods. They must never retry a
    job-creating call themselves (SDK retries off): a retried create whose first attempt succeeded would pay
    twice. They raise `TransientProviderError` for failures worth retrying and `ProviderError` otherwise.
    """

    provider: ClassVar[str]
    limits: ClassVar[ProviderLimits]

    endpoint: str | None = None
    """The base URL the model's client talks to (None: the provider's own hosts). A loopback one (the emulator, a
    local server) is polled as an offline run is (`speceval.batch.endpoint_poll`)."""

    def __init__(self, model_name: str, params: GenerationParams | None = None):
        self.model_name = model_name
        self.params = params or GenerationParams()

    # -- request file -------------------------------------------------------------------------------------

    @abstractmethod
    def format_request(self, custom_id: str, prompt: PromptLike) -> bytes:
        """One line (JSON + newline) of the provider's request file for this prompt (a `str` or a `Prompt`)."""

    # -- submission ---------------------------------------------------------------------------------------

    def prepare(self, intent: SubmissionIntent, request_file: Path) -> ProviderHandle | None:
        """Do what must precede creation (e.g. upload the request file) and return the ids obtained.

        The engine saves the returned handle in the intent before `generate_batch`, so a resume after a crash
        does not upload twice. The default does nothing (providers whose requests are sent inline).
        """
        return None

    @abstractmethod
    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        """Create the remote job for `intent`, tagged with its idempotency key where the provider allows."""

    @abstractmethod
    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        """Find a job created for `intent` before a crash (or a lost response), or None if none exists."""

    # -- tracking -----------------------------------------------------------------------------------------

    @abstractmethod
    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        """Fetch the job's current state (one request to the provider where possible)."""

    @abstractmethod
    def get_batch_results(self, record: BatchRecord) -> Iterator[RequestOutcome]:
        """Yield one outcome per result the provider reports for a terminal job, in any order.

        Requests the provider reports nothing for are not yielded; the engine records them as `missing`.
        A download that is cut short must raise `TransientProviderError`, not yield fewer outcomes.
        """

    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        """`get_batch_results` as lean `Answer`s: what the engine reads when it collects a job.

        Built-in adapters parse straight into answers (`LeanBatchedModel`); this default converts the typed
        outcomes, so a registered provider only has to implement `get_batch_results`.
        """
        for outcome in self.get_batch_results(record):
            yield Answer.of(outcome)

    @abstractmethod
    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        """Ask the provider to cancel the job; returns its state afterwards."""

    def describe(self) -> dict[str, str]:
        """Provider and model name, for manifests and summaries (`get_info` in the original)."""
        return {"provider": self.provider, "model_name": self.model_name}


class LeanBatchedModel(BatchedModel):
    """A `BatchedModel` whose results are parsed into `Answer`s (every built-in adapter).

    Subclasses implement `iter_answers`; `get_batch_results` builds the typed outcomes from it for callers that
    want them. The engine reads the answers directly, so no per-request model is built while collecting.
    """

    @abstractmethod
    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        """Yield one answer per result the provider reports for a terminal job (see `get_batch_results`)."""

    def get_batch_results(self, record: BatchRecord) -> Iterator[RequestOutcome]:
        for answer in self.iter_answers(record):
            yield answer.typed()

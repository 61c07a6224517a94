"""State shared by every provider app of one emulator: the store, live faults, counters and the clock.

`EmulatorContext` is internal (the provider apps share it); `EmulatorStats` is public, returned by
`Emulator.stats`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from speceval.emulator.faults import PROVIDERS, FaultConfig, HttpFault
from speceval.emulator.prompt_cache import PrefixCache
from speceval.emulator.responder import Responder, respond
from speceval.emulator.state import Store


class EmulatorStats(BaseModel):
    """Counters since this emulator started (not persisted)."""

    batches_created: dict[str, int] = Field(description="jobs created, per provider (openai, anthropic, gemini)")
    requests: dict[str, int] = Field(description='HTTP requests per "METHOD /prefix/route/{template}"')
    files_uploaded: int = Field(description="files uploaded, all providers")


class EmulatorContext:
    """What the provider apps share. Fault counters are decremented under a lock (handlers run in threads)."""

    def __init__(self, store: Store, faults: FaultConfig, responder: Responder | None = None) -> None:
        """Create the context; `base_url` is filled in once the server is bound."""
        self.store = store
        self.responder: Responder = responder or respond
        self.prompt_cache = PrefixCache()  # shared by every job, as a provider's cache is (used under store.lock)
        self.base_url = ""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._faults = faults.model_copy(deep=True)
        self._http_fault_left: list[int] = []
        self._create_limit_left = 0
        self._downloaded: set[tuple[str, str]] = set()
        self._batches_created: Counter[str] = Counter({p: 0 for p in PROVIDERS})
        self._requests: Counter[str] = Counter()
        self._files_uploaded = 0
        self._seen: set[str] = set()
        self.set_faults(faults)

    # Faults ------------------------------------------------------------------------------------------------

    @property
    def faults(self) -> FaultConfig:
        """The current fault settings (a snapshot; replace them with `set_faults`)."""
        with self._lock:
            return self._faults

    def set_faults(self, faults: FaultConfig) -> None:
        """Replace the faults; the counts of `http_faults` and `create_limit_error_count` start afresh."""
        copy = faults.model_copy(deep=True)
        with self._lock:
            self._faults = copy
            self._http_fault_left = [fault.count for fault in copy.http_faults]
            self._create_limit_left = copy.create_limit_error_count

    def take_http_fault(self, provider: str, method: str, path: str) -> HttpFault | None:
        """The first injected HTTP fault matching this request, consuming one of its count."""
        with self._lock:
            for index, fault in enumerate(self._faults.http_faults):
                if self._http_fault_left[index] > 0 and fault.matches(provider, method, path):
                    self._http_fault_left[index] -= 1
                    return fault
        return None

    def take_create_limit(self) -> bool:
        """Whether this batch create hits the enqueued-token limit (consumes one of the count)."""
        with self._lock:
            if self._create_limit_left > 0:
                self._create_limit_left -= 1
                return True
        return False

    def first_download(self, provider: str, file_id: str) -> bool:
        """True the first time a given file is downloaded from this emulator."""
        return self._first((provider, file_id), self._downloaded)

    # Counters ----------------------------------------------------------------------------------------------

    def count_request(self, key: str) -> None:
        """Count one HTTP request under `key`."""
        with self._lock:
            self._requests[key] += 1

    def first_sight(self, key: str) -> bool:
        """True the first time `key` is passed (e.g. a prompt that fails only on its first run), then False."""
        return self._first(key, self._seen)

    def _first(self, key: Any, seen: set[Any]) -> bool:
        with self._lock:
            if key in seen:
                return False
            seen.add(key)
            return True

    def count_batch(self, provider: str) -> None:
        """Count one created job."""
        with self._lock:
            self._batches_created[provider] += 1

    def count_upload(self) -> None:
        """Count one uploaded file."""
        with self._lock:
            self._files_uploaded += 1

    def stats(self) -> EmulatorStats:
        """A snapshot of the counters."""
        with self._lock:
            return EmulatorStats(
                batches_created=dict(self._batches_created),
                requests=dict(self._requests),
                files_uploaded=self._files_uploaded,
            )

    # Clock -------------------------------------------------------------------------------------------------

    @staticmethod
    def now() -> float:
        """Wall-clock time: job progress is measured against timestamps that survive restarts."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Sleep, waking early when the emulator shuts down (so no handler thread outlives it)."""
        if seconds > 0:
            self.stopping.wait(seconds)

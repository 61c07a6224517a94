"""The constructor every API-key batch adapter shares: resolve the key once, then let the adapter connect.

OpenAI, Anthropic and the Gemini Developer API take the same arguments (model, params, key, base URL, timeout)
and find a missing key the same way (`resolve_api_key`); only the SDK client they build differs (`_connect`).
Vertex AI is not one of them: it is reached with Google Cloud credentials, not a key.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from speceval.batch.model import LeanBatchedModel
from speceval.batch.records import RemoteJob
from speceval.providers.credentials import KeyedAdapter
from speceval.wire.params import GenerationParams

logger = logging.getLogger(__name__)


class KeyedBatchedModel(KeyedAdapter, LeanBatchedModel):
    """A `LeanBatchedModel` reached with an API key (`KeyedAdapter`)."""

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
    ):
        super().__init__(model_name, params)
        self._connect(self.resolved_key(api_key), base_url, timeout)

    @abstractmethod
    def _connect(self, key: str, base_url: str | None, timeout: float) -> None:
        """Build the SDK client (importing the SDK only now) and set `endpoint`; no network call."""


def find_tagged(
    call: Callable[[str, Callable[[], Any]], Any],
    listing: Callable[[], Iterable[Any]],
    tag: Callable[[Any], object],
    key: str,
    job: Callable[[Any], RemoteJob],
) -> RemoteJob | None:
    """The job created before an interruption whose tag (`tag` of a listed job) is the intent's `key`, as `job`
    reads it; None when no listed job carries it.

    The whole walk runs inside `call` (the adapter's error translation): the SDK's pager fetches later pages while
    it is iterated. The listings promise no order and have no server-side filter, so every page is read.
    """
    found = call("list batches", lambda: next((listed for listed in listing() if tag(listed) == key), None))
    if found is None:
        return None
    remote = job(found)
    logger.info("found batch %s created for %s before an interruption", remote.batch_id, key)
    return remote

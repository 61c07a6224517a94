"""The constructor every API-key batch adapter shares: resolve the key once, then let the adapter connect.

OpenAI, Anthropic and the Gemini Developer API take the same arguments (model, params, key, base URL, timeout)
and find a missing key the same way (`resolve_api_key`); only the SDK client they build differs (`_connect`).
Vertex AI is not one of them: it is reached with Google Cloud credentials, not a key.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from speceval.batch.model import LeanBatchedModel
from speceval.providers.credentials import resolve_api_key
from speceval.wire.params import GenerationParams


class KeyedBatchedModel(LeanBatchedModel):
    """A `LeanBatchedModel` reached with an API key: `key_label` names the provider in a missing-key error and
    `key_env` lists the variables read for the key, in the SDK's own order."""

    key_label: ClassVar[str]
    key_env: ClassVar[tuple[str, ...]]

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
        self._connect(resolve_api_key(self.key_label, api_key, self.key_env), base_url, timeout)

    @abstractmethod
    def _connect(self, key: str, base_url: str | None, timeout: float) -> None:
        """Build the SDK client (importing the SDK only now) and set `endpoint`; no network call."""

"""Finding a provider's API key, the same way for every adapter (batch and realtime)."""

from __future__ import annotations

import os

from speceval.errors import MissingCredentialsError
from speceval.redaction import register_secret


def resolve_api_key(provider: str, api_key: str | None, key_env: tuple[str, ...], *, required: bool = True) -> str:
    """The key passed in, else the first variable of `key_env` that is set (the SDK's own order).

    The key is registered for redaction, so it can never reach a log line, a file or an error message.
    A missing key raises `MissingCredentialsError` naming the variables (and `--offline`).
    """
    key = api_key or next((os.environ[name] for name in key_env if os.environ.get(name)), None)
    if not key:
        if required:
            raise MissingCredentialsError(provider, key_env)
        # Local OpenAI-compatible servers (vLLM, Ollama) need no key, but the SDK insists on a non-empty one.
        return "EMPTY"
    register_secret(key)
    return key

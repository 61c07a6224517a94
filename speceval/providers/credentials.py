"""Finding a provider's API key, the same way for every adapter (batch and realtime), and registering every
credential an adapter holds (keys, OAuth access tokens) for redaction."""

from __future__ import annotations

import contextlib
import os
from typing import Any, ClassVar

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


class KeyedAdapter:
    """An adapter (batch or realtime) reached with an API key: `key_label` names the provider in a missing-key
    error and `key_env` lists the variables read for the key, in the SDK's own order."""

    key_label: ClassVar[str]
    key_env: ClassVar[tuple[str, ...]]

    def resolved_key(
        self,
        api_key: str | None,
        *,
        label: str | None = None,
        key_env: tuple[str, ...] | None = None,
        required: bool = True,
    ) -> str:
        """`api_key`, else the first variable of `key_env` that is set (`resolve_api_key`); `label` and `key_env`
        replace the class's own for another host of the same API (e.g. Together for the OpenAI shape)."""
        return resolve_api_key(
            label or self.key_label, api_key, self.key_env if key_env is None else key_env, required=required
        )


def register_refreshing_token(credentials: Any) -> Any:
    """Keep a google-auth credential's access token registered for redaction, now and after every refresh.

    Application Default Credentials never show us a key: the SDKs put a short-lived OAuth token in
    `Authorization: Bearer …` headers, refreshed about hourly. Both google-genai and the storage client refresh
    through `credentials.refresh`, so wrapping it on this instance catches each new token. Returns `credentials`.
    """
    register_secret(getattr(credentials, "token", None))
    refresh = getattr(credentials, "refresh", None)
    if refresh is None:
        return credentials

    def refresh_and_register(request: Any) -> None:
        refresh(request)
        register_secret(getattr(credentials, "token", None))

    with contextlib.suppress(AttributeError):  # a credential class that forbids new attributes keeps its token only
        credentials.refresh = refresh_and_register
    return credentials

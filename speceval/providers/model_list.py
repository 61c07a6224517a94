"""Is this model served? Checked against the provider's own model list before anything is paid for.

A misspelt name (`gpt-4.1-2025-04-41`) is accepted by the batch APIs at submission and every line comes back
errored when the job ends, a day later. So before a run starts, the provider's list is fetched with its own SDK
(OpenAI and Anthropic `GET /v1/models`, Gemini `models.list`), and a name that is not on it but close to a name
that is (difflib ratio >= 0.85) is refused, naming the closest served names. A name far from every listed one
(a fine-tune, a model the list does not show) only gets a warning, and so does a list that cannot be fetched:
the check must never be the reason a correct run cannot start.
"""

from __future__ import annotations

import difflib
import logging
from datetime import UTC, datetime
from typing import Any

from speceval.data import retired_on
from speceval.errors import ConfigError
from speceval.wire.tls import genai_tls_options, sdk_client

logger = logging.getLogger(__name__)

CHECKED_ORGS = ("openai", "anthropic", "google")
_CLOSE = 0.85


def served_models(org: str, api_key: str | None = None, base_url: str | None = None) -> list[str] | None:
    """The model ids `org` lists for this key (None when the list cannot be fetched)."""
    try:
        if org == "openai":
            import openai

            client = sdk_client(
                openai.OpenAI, openai.DefaultHttpxClient, api_key=api_key, base_url=base_url, max_retries=0, timeout=10
            )
            return [m.id for m in client.models.list()]
        if org == "anthropic":
            import anthropic

            messages = sdk_client(
                anthropic.Anthropic,
                anthropic.DefaultHttpxClient,
                api_key=api_key,
                base_url=base_url,
                max_retries=0,
                timeout=10,
            )
            return [m.id for m in messages.models.list(limit=1000)]
        if org == "google":
            from google import genai
            from google.genai import types

            options = types.HttpOptions(base_url=base_url, timeout=10_000, **genai_tls_options())
            gemini = genai.Client(api_key=api_key, http_options=options)
            return [str(m.name).removeprefix("models/") for m in gemini.models.list()]
    except Exception as exc:  # any SDK or network failure: the check is advisory then (see the module docstring)
        logger.warning("could not fetch %s's model list (%s); model names are not checked", org, type(exc).__name__)
    return None


def check_model_name(org: str, model: str, served: list[str] | None, where: str = "") -> None:
    """Refuse `model` when its provider has retired it (by the shipped table, whatever the list says), or when
    `served` lacks it but holds names close to it (a likely typo)."""
    place = f" ({where})" if where else ""
    end = retired_on("gemini" if org == "google" else org, model)
    if end is not None and datetime.now(UTC).date() >= end:
        raise ConfigError(
            f"model {model!r}{place} was retired by {org} on {end.isoformat()}: requests to it fail. Choose a "
            "current model; nothing was submitted."
        )
    if served is None or model in served or org not in CHECKED_ORGS:
        return
    close = difflib.get_close_matches(model, served, n=3, cutoff=_CLOSE)
    if close:
        raise ConfigError(
            f"model {model!r}{place} is not one {org} serves; the closest it lists: "
            f"{', '.join(close)}. Nothing was submitted."
        )
    logger.warning(
        "model %r%s is not in %s's list of models; going on (a fine-tune or a model the list does not "
        "show), but every request fails if the name is wrong",
        model,
        place,
        org,
    )


def check_models(models: list[tuple[str, str, str]], options_for: Any) -> None:
    """Check (org, model, where) triples, fetching each org's list once; `options_for(org)` gives api_key and
    base_url (empty for the SDK's own environment)."""
    lists: dict[str, list[str] | None] = {}
    for org, model, where in models:
        if org not in CHECKED_ORGS:
            continue
        if org not in lists:
            options = options_for(org)
            lists[org] = served_models(org, options.get("api_key"), options.get("base_url"))
        check_model_name(org, model, lists[org], where)

"""The emulator's model lists, in each provider's shape, so a misspelt model name is caught before anything is paid.

`GET /v1/models` (OpenAI: `{object: list, data: [{id, object: model, created, owned_by}]}`), `GET /v1/models`
(Anthropic: `{data: [{type: model, id, display_name, created_at}], has_more, first_id, last_id}`) and
`GET /{ver}/models` (Gemini: `{models: [{name: models/<id>, displayName, supportedGenerationMethods}]}`), each
listing `SERVED` (real model ids of the day, dated and undated) minus the models `RETIRED` by then.

A retired model is answered as its provider answers it: Anthropic's Messages API with a 404 `not_found_error`
(`model: <name>`), and a Message Batch with that error on each request for it.
"""

from __future__ import annotations

from datetime import date

from speceval.data import is_retired
from speceval.emulator.gemini_files import VERSIONS
from speceval.emulator.routing import ProviderApp, Request, Response, Route, json_response

SERVED: dict[str, tuple[str, ...]] = {
    "openai": (
        "gpt-4.1",
        "gpt-4.1-2025-04-14",
        "gpt-4.1-mini",
        "gpt-4.1-mini-2025-04-14",
        "gpt-4.1-nano",
        "gpt-4.1-nano-2025-04-14",
        "gpt-4o",
        "gpt-4o-2024-05-13",
        "gpt-4o-2024-08-06",
        "gpt-4o-2024-11-20",
        "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
        "o3",
        "o3-2025-04-16",
        "o3-mini",
        "o3-mini-2025-01-31",
        "o4-mini",
        "o4-mini-2025-04-16",
        "o1",
        "o1-2024-12-17",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
    ),
    "anthropic": (
        "claude-3-haiku-20240307",
        "claude-3-5-haiku-20241022",
        "claude-3-5-sonnet-20241022",
        "claude-3-7-sonnet-20250219",
        "claude-sonnet-4-20250514",
        "claude-opus-4-20250514",
        "claude-opus-4-1-20250805",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-5",
        "claude-haiku-4-5-20251001",
        "claude-haiku-4-5",
        "claude-opus-4-5",
        "claude-opus-4-5-20251101",
        "claude-opus-4-6",
        "claude-sonnet-4-6",
    ),
    "gemini": (
        "gemini-1.5-flash",
        "gemini-1.5-pro",
        "gemini-2.0-flash",
        "gemini-2.0-flash-001",
        "gemini-2.0-flash-lite",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.5-pro",
        "gemini-3-pro-preview",
    ),
}


NOT_FOUND = "not_found_error"
"""Anthropic's error type for a model it does not serve (any more)."""


def retired(provider: str, model: str, on: date | None = None) -> bool:
    """Whether `model` of `provider` (the emulator's provider names) is retired on `on` (default: today, UTC), by
    the table speceval's own model check reads (`speceval/data/retired_models.json`)."""
    return is_retired(provider, model, on)


def served(provider: str, on: date | None = None) -> list[str]:
    """The models a provider lists on `on` (default: today): every known one not retired by then."""
    return [m for m in SERVED.get(provider, ()) if not retired(provider, m, on)]


def offline_served(org: str) -> list[str] | None:
    """What the emulator lists for `org` (speceval's org names: `google` is Gemini), for checks made before it
    is started; None for an org it does not list."""
    provider = "gemini" if org == "google" else org
    return served(provider) if provider in SERVED else None


def add_model_lists(apps: list[ProviderApp]) -> None:
    """Register each provider's model-list route on its app."""
    routes = {
        "openai": [Route("GET", "/v1/models", _openai)],
        "anthropic": [Route("GET", "/v1/models", _anthropic)],
        "gemini": [Route("GET", "/{ver:" + VERSIONS + "}/models", _gemini)],
    }
    for app in apps:
        app.add_routes(routes.get(app.name, []))


def _openai(request: Request) -> Response:
    data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "system"} for m in served("openai")]
    return json_response({"object": "list", "data": data})


def _anthropic(request: Request) -> Response:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in served("anthropic")
    ]
    return json_response({"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]})


def _gemini(request: Request) -> Response:
    models = [
        {
            "name": f"models/{m}",
            "displayName": m,
            "supportedGenerationMethods": ["generateContent", "batchGenerateContent"],
        }
        for m in served("gemini")
    ]
    return json_response({"models": models})

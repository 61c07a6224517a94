"""The one place that decides which provider and adapter serve a model name.

`--org` always wins; otherwise the model name's family decides. Adapters are imported lazily, so
`import speceval` works without every vendor SDK installed and a missing SDK yields a one-line install hint.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from speceval.batch.model import BatchedModel, GenerationParams
from speceval.errors import ConfigError


@dataclass(frozen=True)
class ProviderEntry:
    """How to reach one provider.

    Attributes:
        org: the name users pass to `--org`.
        adapter: 'module:Class' of the BatchedModel subclass, imported only when used.
        sdk: the distribution that must be installed (for the install hint).
        sdk_module: the module whose absence means the SDK is missing.
        model_prefixes: model-name prefixes that select this provider when `--org` is not given.
        key_env: environment variables holding the API key, in the order the SDK reads them.
        base_url_env: environment variable the SDK reads for its base URL.
        realtime_adapter: 'module:Class' of the RealtimeModel for `--realtime` runs (None: no realtime path).
        batch: whether the provider has a batch API (False: every run is realtime).
        default_base_url: the base URL of a realtime-only host (None: the SDK's own default).
    """

    org: str
    adapter: str
    sdk: str
    sdk_module: str
    model_prefixes: tuple[str, ...]
    key_env: tuple[str, ...]
    base_url_env: str | None
    realtime_adapter: str | None = None
    batch: bool = True
    default_base_url: str | None = None


PROVIDERS: dict[str, ProviderEntry] = {
    entry.org: entry
    for entry in (
        ProviderEntry(
            org="openai",
            adapter="speceval.providers.openai_batch:OpenAIBatchedModel",
            sdk="openai",
            sdk_module="openai",
            model_prefixes=("gpt-", "o1", "o3", "o4", "chatgpt-"),
            key_env=("OPENAI_API_KEY",),
            base_url_env="OPENAI_BASE_URL",
            realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
        ),
        ProviderEntry(
            org="anthropic",
            adapter="speceval.providers.anthropic_batch:AnthropicBatchedModel",
            sdk="anthropic",
            sdk_module="anthropic",
            model_prefixes=("claude-",),
            key_env=("ANTHROPIC_API_KEY",),
            base_url_env="ANTHROPIC_BASE_URL",
            realtime_adapter="speceval.realtime.clients:AnthropicMessagesModel",
        ),
        ProviderEntry(
            org="google",
            adapter="speceval.providers.gemini_batch:GeminiBatchedModel",
            sdk="google-genai",
            sdk_module="google.genai",
            model_prefixes=("gemini-",),
            key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
            base_url_env="GOOGLE_GEMINI_BASE_URL",
            realtime_adapter="speceval.realtime.clients:GeminiGenerateModel",
        ),
        ProviderEntry(
            org="vertex",
            adapter="speceval.providers.vertex_batch:VertexBatchedModel",
            sdk="google-genai google-cloud-storage",
            sdk_module="google.cloud.storage",
            model_prefixes=(),
            key_env=(),
            base_url_env=None,
        ),
        # OpenAI-shaped chat servers without a batch API (vLLM, SGLang, Ollama, ...): realtime only, --base-url.
        ProviderEntry(
            org="openai-compatible",
            adapter="speceval.realtime.clients:OpenAIChatModel",
            sdk="openai",
            sdk_module="openai",
            model_prefixes=(),
            key_env=("OPENAI_API_KEY",),
            base_url_env="OPENAI_BASE_URL",
            realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
            batch=False,
        ),
        ProviderEntry(
            org="together",
            adapter="speceval.realtime.clients:OpenAIChatModel",
            sdk="openai",
            sdk_module="openai",
            model_prefixes=(),
            key_env=("TOGETHER_API_KEY",),
            base_url_env=None,
            realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
            batch=False,
            default_base_url="https://api.together.xyz/v1",
        ),
    )
}


def resolve_org(model_name: str, org: str | None = None) -> ProviderEntry:
    """The provider for `model_name`: `org` if given, else the one whose model family matches."""
    if org is not None:
        entry = PROVIDERS.get(org.lower())
        if entry is None:
            raise ConfigError(f"unknown --org {org!r}; choose one of: {', '.join(sorted(PROVIDERS))}")
        return entry
    lowered = model_name.lower()
    for entry in PROVIDERS.values():
        if any(lowered.startswith(prefix) for prefix in entry.model_prefixes):
            return entry
    families = "; ".join(
        f"{e.org}: {', '.join(p + '…' for p in e.model_prefixes)}" for e in PROVIDERS.values() if e.model_prefixes
    )
    raise ConfigError(
        f"cannot tell which provider serves model {model_name!r}; pass --org "
        f"({', '.join(sorted(PROVIDERS))}). Known model families: {families}"
    )


def adapter_class(entry: ProviderEntry) -> type[BatchedModel]:
    """Import the adapter of `entry`, with an install hint if its SDK is missing."""
    try:
        importlib.import_module(entry.sdk_module)
    except ImportError:
        raise ConfigError(f"the {entry.org} provider needs its SDK: pip install {entry.sdk}") from None
    module_name, _, class_name = entry.adapter.partition(":")
    if importlib.util.find_spec(module_name) is None:
        # An adapter this version does not ship: say so instead of failing on an import.
        raise ConfigError(f"the {entry.org} provider is not available in this version of speceval")
    cls: type[BatchedModel] = getattr(importlib.import_module(module_name), class_name)
    return cls


def create_batched_model(
    model_name: str,
    org: str | None = None,
    params: GenerationParams | None = None,
    **provider_options: Any,
) -> BatchedModel:
    """Build the batched model for `model_name` (provider options: api_key, base_url, ...)."""
    entry = resolve_org(model_name, org)
    if not entry.batch:
        raise ConfigError(f"{entry.org} has no batch API; its runs are realtime (see speceval.realtime)")
    return adapter_class(entry)(model_name, params, **provider_options)

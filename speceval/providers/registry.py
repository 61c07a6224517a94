"""The one place that decides which provider and adapter serve a model name.

`--org` always wins; otherwise the model name's family decides. Adapters are imported lazily, so
`import speceval` works without every vendor SDK installed and a missing SDK yields a one-line install hint.

Besides the built-in providers, a provider can be added (see README, "Adding a provider"):

- in Python, with `register_provider("myorg", MyBatchedModel)`;
- by a package, with an entry point in the group `speceval.providers` whose name is the org and whose object is
  the `BatchedModel` subclass (or a `ProviderEntry`). Entry points are read the first time a provider is looked
  up, so `--resume`, `speceval status`, `fetch` and `cancel` rebuild the adapter of a run from its `run.json`
  in any later process.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import re
from dataclasses import dataclass, replace
from typing import Any, TypedDict, Unpack

from speceval.batch.model import BatchedModel
from speceval.batch.records import BUILT_IN_HANDLES
from speceval.defaults import BUILT_IN_MODEL_FAMILIES, BUILT_IN_ORGS
from speceval.errors import ConfigError
from speceval.redaction import register_secret_env
from speceval.wire.params import GenerationParams

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "speceval.providers"
"""The entry-point group a package uses to add a provider (name: the org; object: its adapter class)."""
_ORG_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class ProviderEntry:
    """How to reach one provider.

    Attributes:
        org: the name users pass to `--org` (recorded as `provider` in every `run.json`).
        adapter: the BatchedModel subclass, or 'module:Class' of it (imported only when used).
        sdk: the distribution that must be installed (for the install hint); None: nothing to check.
        sdk_module: the module whose absence means the SDK is missing; None: nothing to check.
        model_prefixes: model-name prefixes that select this provider when `--org` is not given.
        key_env: environment variables holding the API key, in the order the SDK reads them.
        base_url_env: environment variable the SDK reads for its base URL.
        realtime_adapter: 'module:Class' of the RealtimeModel for `--realtime` runs (None: no realtime path).
        batch: whether the provider has a batch API (False: every run is realtime).
        default_base_url: the base URL of a realtime-only host (None: the SDK's own default).
    """

    org: str
    adapter: str | type[BatchedModel]
    sdk: str | None = None
    sdk_module: str | None = None
    model_prefixes: tuple[str, ...] = ()
    key_env: tuple[str, ...] = ()
    base_url_env: str | None = None
    realtime_adapter: str | None = None
    batch: bool = True
    default_base_url: str | None = None

    def __post_init__(self) -> None:
        # A plug-in may pass lists; the entry stays hashable and comparable (registering it again does nothing).
        object.__setattr__(self, "model_prefixes", tuple(self.model_prefixes))
        object.__setattr__(self, "key_env", tuple(self.key_env))


class ProviderOptions(TypedDict, total=False):
    """The keywords of `register_provider`: the attributes of `ProviderEntry` besides `org` and `adapter`."""

    sdk: str | None
    sdk_module: str | None
    model_prefixes: tuple[str, ...]
    key_env: tuple[str, ...]
    base_url_env: str | None
    realtime_adapter: str | None
    batch: bool
    default_base_url: str | None


PROVIDERS: dict[str, ProviderEntry] = {}
"""Every provider registered so far by org (read it through `providers()`, which adds installed plug-ins)."""
_BUILT_IN = frozenset(BUILT_IN_ORGS)
"""The providers speceval ships; registered below through `register_provider`, as a plug-in's are."""
_entry_points_read = False
_broken_plugins: dict[str, str] = {}  # org -> why its entry point could not be loaded


def register_provider(
    org: str,
    adapter: type[BatchedModel] | str,
    *,
    replace_existing: bool = False,
    **options: Unpack[ProviderOptions],
) -> ProviderEntry:
    """Add a provider served by `adapter` (a BatchedModel subclass, or 'module:Class' of one).

    After this, `--org <org>` (or a model name starting with one of `model_prefixes`) selects the adapter, the
    pipelines build it from their own config, and `run.json` records `org` as the provider. Registering the
    same entry again does nothing; another adapter under a taken org needs `replace_existing=True` (never for
    a built-in provider). The adapter's job handles should be `GenericHandle(provider=org, ids={...})`.

    Args:
        org: lowercase name: letters, digits, '.', '_' or '-'.
        adapter: the adapter; called as `adapter(model_name, params, **provider_options)`.
        model_prefixes: model names starting with one of these select this provider without `--org`.
        key_env: environment variables that hold its key (for messages and redaction).
        base_url_env: environment variable that holds its base URL.
        sdk / sdk_module: a distribution the adapter needs, and the module whose absence means it is missing.
        realtime_adapter / batch / default_base_url: its realtime client ('module:Class'), whether it has a batch
            API, and the base URL of a realtime-only host (see `ProviderEntry`).
        replace_existing: replace a provider registered before under `org`.

    Returns:
        The entry now in the registry.
    """
    return _add(ProviderEntry(org, adapter, **options), replace_existing=replace_existing)


def unregister_provider(org: str) -> None:
    """Remove a provider added with `register_provider` (built-in providers cannot be removed)."""
    if org in _BUILT_IN:
        raise ConfigError(f"{org!r} is a built-in provider; it cannot be unregistered")
    PROVIDERS.pop(org, None)


def providers() -> dict[str, ProviderEntry]:
    """Every known provider by org: the built-in ones, registered ones and those of installed plugins."""
    _read_entry_points()
    return PROVIDERS


def _add(entry: ProviderEntry, *, replace_existing: bool) -> ProviderEntry:
    if not _ORG_NAME.match(entry.org) or entry.org in BUILT_IN_HANDLES - _BUILT_IN:
        raise ConfigError(
            f"cannot register provider {entry.org!r}: use a lowercase name of letters, digits, '.', '_' or '-' "
            f"that is not one of {', '.join(sorted(BUILT_IN_HANDLES | _BUILT_IN))}"
        )
    if isinstance(entry.adapter, type) and not issubclass(entry.adapter, BatchedModel):
        raise ConfigError(f"cannot register provider {entry.org!r}: {entry.adapter!r} is not a BatchedModel subclass")
    existing = PROVIDERS.get(entry.org)
    if existing is not None and existing != entry and (entry.org in _BUILT_IN or not replace_existing):
        raise ConfigError(
            f"provider {entry.org!r} is already registered (adapter {existing.adapter!r}); "
            + ("built-in providers cannot be replaced" if entry.org in _BUILT_IN else "pass replace_existing=True")
        )
    PROVIDERS[entry.org] = entry
    for name in entry.key_env:  # a provider's key is redacted from every log line once it is registered
        register_secret_env(name)
    return entry


def _read_entry_points() -> None:
    """Register the providers of installed plugins (once per process); a broken plugin is reported, not fatal."""
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
            entry = loaded if isinstance(loaded, ProviderEntry) else ProviderEntry(org=point.name, adapter=loaded)
            if entry.org != point.name:
                entry = replace(entry, org=point.name)
            _add(entry, replace_existing=False)
        except Exception as exc:  # noqa: BLE001 - any plugin failure is reported when its org is asked for
            _broken_plugins[point.name] = f"{point.value}: {type(exc).__name__}: {exc}"
            logger.warning("provider plugin %r (%s) could not be loaded: %s", point.name, point.value, exc)


register_provider(
    "openai",
    "speceval.providers.openai_batch:OpenAIBatchedModel",
    sdk="openai",
    sdk_module="openai",
    model_prefixes=BUILT_IN_MODEL_FAMILIES["openai"],
    key_env=("OPENAI_API_KEY",),
    base_url_env="OPENAI_BASE_URL",
    realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
)
register_provider(
    "anthropic",
    "speceval.providers.anthropic_batch:AnthropicBatchedModel",
    sdk="anthropic",
    sdk_module="anthropic",
    model_prefixes=BUILT_IN_MODEL_FAMILIES["anthropic"],
    key_env=("ANTHROPIC_API_KEY",),
    base_url_env="ANTHROPIC_BASE_URL",
    realtime_adapter="speceval.realtime.clients:AnthropicMessagesModel",
)
register_provider(
    "google",
    "speceval.providers.gemini_batch:GeminiBatchedModel",
    sdk="google-genai",
    sdk_module="google.genai",
    model_prefixes=BUILT_IN_MODEL_FAMILIES["google"],
    key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    realtime_adapter="speceval.realtime.clients:GeminiGenerateModel",
)
register_provider(
    "vertex",
    "speceval.providers.vertex_batch:VertexBatchedModel",
    sdk="google-genai google-cloud-storage",
    sdk_module="google.cloud.storage",
    model_prefixes=(),
    key_env=(),
    base_url_env=None,
)
# OpenAI-shaped chat servers without a batch API (vLLM, SGLang, Ollama, ...): realtime only, --base-url.
register_provider(
    "openai-compatible",
    "speceval.realtime.clients:OpenAIChatModel",
    sdk="openai",
    sdk_module="openai",
    model_prefixes=(),
    key_env=("OPENAI_API_KEY",),
    base_url_env="OPENAI_BASE_URL",
    realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
    batch=False,
)
register_provider(
    "together",
    "speceval.realtime.clients:OpenAIChatModel",
    sdk="openai",
    sdk_module="openai",
    model_prefixes=(),
    key_env=("TOGETHER_API_KEY",),
    base_url_env=None,
    realtime_adapter="speceval.realtime.clients:OpenAIChatModel",
    batch=False,
    default_base_url="https://api.together.xyz/v1",
)
# Open-weights models on a Ray cluster (Ray Data LLM): an endpoint via --base-url, or vLLM engines (--vllm).
register_provider(
    "ray",
    "speceval.raydata.model:RayModel",
    sdk="'speceval[ray]'",
    sdk_module="ray.data.llm",
    model_prefixes=(),
    key_env=(),
    base_url_env=None,
    realtime_adapter="speceval.raydata.model:RayModel",
    batch=False,
)


def resolve_org(model_name: str, org: str | None = None) -> ProviderEntry:
    """The provider for `model_name`: `org` if given, else the one whose model family matches."""
    known = providers()
    if org is not None:
        entry = known.get(org.lower())
        if entry is None:
            broken = _broken_plugins.get(org.lower())
            if broken is not None:
                raise ConfigError(f"the provider plugin {org!r} failed to load ({broken})")
            raise ConfigError(f"unknown --org {org!r}; choose one of: {', '.join(sorted(known))}")
        return entry
    lowered = model_name.lower()
    for entry in known.values():
        if any(lowered.startswith(prefix) for prefix in entry.model_prefixes):
            return entry
    families = "; ".join(
        f"{e.org}: {', '.join(p + '…' for p in e.model_prefixes)}" for e in known.values() if e.model_prefixes
    )
    raise ConfigError(
        f"cannot tell which provider serves model {model_name!r}; pass --org "
        f"({', '.join(sorted(known))}). Known model families: {families}"
    )


def load_class(entry: ProviderEntry, target: str | type[Any]) -> type[Any]:
    """Import `target` ('module:Class', or a class) for `entry`, with an install hint if its SDK is missing."""
    if entry.sdk_module is not None:
        try:
            importlib.import_module(entry.sdk_module)
        except ImportError:
            raise ConfigError(f"the {entry.org} provider needs its SDK: pip install {entry.sdk}") from None
    if isinstance(target, type):
        return target
    module_name, _, class_name = target.partition(":")
    if importlib.util.find_spec(module_name) is None:
        # An adapter this version does not ship: say so instead of failing on an import.
        raise ConfigError(f"the {entry.org} provider is not available in this version of speceval")
    cls: type[Any] = getattr(importlib.import_module(module_name), class_name)
    return cls


def adapter_class(entry: ProviderEntry) -> type[BatchedModel]:
    """Import the adapter of `entry`, with an install hint if its SDK is missing."""
    cls: type[BatchedModel] = load_class(entry, entry.adapter)
    return cls


def create_batched_model(
    model_name: str,
    org: str | None = None,
    params: GenerationParams | None = None,
    **provider_options: Any,
) -> BatchedModel:
    """Build the batched model for `model_name` (provider options: api_key, base_url, ...)."""
    return batched_model_of(resolve_org(model_name, org), model_name, params, **provider_options)


def batched_model_of(
    entry: ProviderEntry, model_name: str, params: GenerationParams | None = None, **provider_options: Any
) -> BatchedModel:
    """The batched model of `model_name` served by the provider `entry` (already resolved)."""
    if not entry.batch:
        raise ConfigError(f"{entry.org} has no batch API; its runs are realtime (see speceval.realtime)")
    return adapter_class(entry)(model_name, params, **provider_options)

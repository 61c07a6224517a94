"""Models are built in one room (issue 46, item 2): the model modules live in `speceval/engines/`, the provider is
resolved once by `build_model`, and the built-in providers are registered the way a plug-in is."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from speceval.defaults import BUILT_IN_ORGS
from speceval.engines.factory import build_model
from speceval.errors import ConfigError
from speceval.providers import registry
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.redaction import redact
from speceval.wire.params import GenerationParams
from tests.conftest import REPO


def test_the_model_modules_live_in_the_engines_room() -> None:
    assert not (REPO / "speceval/pipelines/models.py").exists()
    assert not (REPO / "speceval/pipelines/endpoints.py").exists()
    assert (REPO / "speceval/engines/models.py").is_file()
    assert (REPO / "speceval/engines/endpoints.py").is_file()


def test_every_built_in_provider_is_registered_through_register_provider() -> None:
    tree = ast.parse((REPO / "speceval/providers/registry.py").read_text())
    registered = [
        node.value.args[0].value
        for node in tree.body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "register_provider"
        and isinstance(node.value.args[0], ast.Constant)
    ]
    assert sorted(registered) == sorted(BUILT_IN_ORGS)
    # ... and nothing else fills the registry: the module builds no entry of its own besides register_provider's.
    built = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "ProviderEntry"]
    assert len(built) == 2  # register_provider's own, and a plug-in's entry point given as an adapter class
    assert set(registry.providers()) >= set(BUILT_IN_ORGS)


def test_a_built_in_provider_cannot_be_replaced_by_a_plug_in() -> None:
    with pytest.raises(ConfigError, match="built-in providers cannot be replaced"):
        registry.register_provider("openai", OpenAIBatchedModel, replace_existing=True)


def test_build_model_takes_a_provider_already_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = registry.resolve_org("gpt-4o-mini")
    looked_up: list[str] = []
    real = registry.resolve_org
    monkeypatch.setattr(
        "speceval.engines.factory.resolve_org", lambda name, org=None: looked_up.append(name) or real(name, org)
    )
    model = build_model("gpt-4o-mini", entry, GenerationParams(), api_key="sk-test-room-0000000000")
    assert isinstance(model, OpenAIBatchedModel)
    assert looked_up == []  # given the entry, build_model does not resolve the provider again
    build_model("gpt-4o-mini", "openai", GenerationParams(), api_key="sk-test-room-0000000000")
    assert looked_up == ["gpt-4o-mini"]  # given a name, it resolves it once


def test_a_registered_providers_key_variable_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOM_TEST_KEY", "room-secret-value-123456")
    registry.register_provider("room-test", OpenAIBatchedModel, key_env=("ROOM_TEST_KEY",))
    try:
        assert "room-secret-value-123456" not in redact("the key is room-secret-value-123456")
    finally:
        registry.unregister_provider("room-test")


def test_a_plug_in_may_pass_lists_and_register_the_same_entry_again() -> None:
    prefixes: Any = ["room-list-"]  # not the declared tuple: what an untyped plug-in may well pass
    keys: Any = ["ROOM_LIST_KEY"]
    entry = registry.register_provider("room-list", OpenAIBatchedModel, model_prefixes=prefixes, key_env=keys)
    try:
        assert entry.model_prefixes == ("room-list-",) and entry.key_env == ("ROOM_LIST_KEY",)
        # the same entry again is no conflict (lists and tuples alike)
        assert (
            registry.register_provider("room-list", OpenAIBatchedModel, model_prefixes=prefixes, key_env=keys) == entry
        )
        assert registry.resolve_org("room-list-7b").org == "room-list"
    finally:
        registry.unregister_provider("room-list")

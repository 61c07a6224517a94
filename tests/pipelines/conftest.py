"""Fixtures shared by the judge pipeline tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from speceval.judging import prompts as prompt_module


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every prompt the judge templates render (each template goes through `prompts.render`)."""
    rendered: list[str] = []
    real: Callable[..., str] = prompt_module.render

    def counting(*args: Any, **kwargs: Any) -> str:
        rendered.append(real(*args, **kwargs))
        return rendered[-1]

    monkeypatch.setattr(prompt_module, "render", counting)
    return rendered

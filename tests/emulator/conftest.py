"""Fixtures for the emulator tests: loopback without proxies, Gemini in Developer-API mode, SDK clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from speceval.emulator import Emulator, FaultConfig

TURNAROUND = 0.1


@pytest.fixture(autouse=True)
def loopback_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback must bypass any proxy; Gemini must not be flipped into Vertex mode by the shell."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_ENTERPRISE", raising=False)


@pytest.fixture
def emu() -> Iterator[Emulator]:
    """A fresh, well-behaved emulator with a fast turnaround."""
    with Emulator(faults=FaultConfig(turnaround_seconds=TURNAROUND)) as emulator:
        yield emulator

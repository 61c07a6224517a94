"""The poll interval follows the endpoint a model talks to, not the `offline` flag: a real OpenAI SDK client
aimed at the emulator on 127.0.0.1 (as a research script builds it, not `offline=True`) is polled as the offline
path polls; a provider's host keeps the 60 s default, and an interval that was set is used as given."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from speceval import BatchEngine, EngineOptions, RunStore, create_batched_model
from speceval.batch.endpoint_poll import is_loopback
from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.defaults import DEFAULT_POLL_INTERVAL
from speceval.emulator import Emulator, FaultConfig
from speceval.offline import offline_poll_interval
from speceval.wire.prompt import PromptItem


def _short_sleep(seconds: float) -> None:
    time.sleep(min(seconds, 0.05))  # the wait is recorded by `Waits`; sleeping a little keeps the poll loop idle


class Waits(EngineObserver):
    """Every wait the engine announced between polling rounds."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def waiting(self, seconds: float, summary: EngineSummary) -> None:
        self.seconds.append(seconds)


def test_a_model_aimed_at_the_emulator_is_polled_as_offline(tmp_path: Path) -> None:
    # A job that takes 2 s, so the engine polls it unfinished at least once on any machine load (with the suite's
    # 0.1 s a loaded machine could find it done at the first poll and announce no wait). The sleep is recorded, not
    # slept: the engine asks for the offline interval, whatever the job takes.
    with Emulator(faults=FaultConfig(turnaround_seconds=2.0)) as emulator:
        model = create_batched_model("gpt-4.1-mini-2025-04-14", base_url=emulator.openai_base_url, api_key="sk-test")
        waits = Waits()
        engine = BatchEngine(model, RunStore(tmp_path / "run"), EngineOptions(), waits, sleep=_short_sleep)
        items = [PromptItem(statement_id="be_honest", original_index=i, input_text=f"question {i}") for i in range(3)]
        summary = engine.run(items)
    assert summary.finished and waits.seconds
    assert set(waits.seconds) == {offline_poll_interval()} and offline_poll_interval() < DEFAULT_POLL_INTERVAL


def test_a_set_interval_and_a_providers_host_are_kept(emulator, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    local = create_batched_model("gpt-4.1-mini-2025-04-14", base_url=emulator.openai_base_url, api_key="sk-test")
    assert BatchEngine(local, RunStore(tmp_path / "a"), EngineOptions(poll_interval=7.0)).poll_interval == 7.0
    remote = create_batched_model("gpt-4.1-mini-2025-04-14", base_url="https://api.openai.com/v1", api_key="sk-test")
    assert BatchEngine(remote, RunStore(tmp_path / "b"), EngineOptions()).poll_interval == DEFAULT_POLL_INTERVAL


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8123/openai/v1", True),
        ("http://localhost:8000", True),
        ("http://[::1]:9000/v1", True),
        ("127.0.0.2:80", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000", False),
        ("http://127.0.0.1.example.com", False),
        (None, False),
    ],
)
def test_loopback_endpoints(url: str | None, local: bool) -> None:
    assert is_loopback(url) is local

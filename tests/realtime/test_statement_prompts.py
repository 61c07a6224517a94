"""The realtime engine renders a source's prompts one statement at a time, as workers reach them (as the batch
engine does), not every prompt of the run up front: a judge run of a million requests never holds them all."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.batch.store import RunStore
from speceval.emulator import Emulator
from speceval.realtime import RateLimits, RealtimeEngine, RealtimeOptions
from speceval.realtime.clients import OpenAIChatModel
from speceval.wire.params import GenerationParams
from tests.conformance.recorder import RecordingProxy
from tests.realtime.helpers import KEY

STATEMENTS = ("alpha", "beta", "gamma")
PER_STATEMENT = 4


class RenderedOnDemand:
    """An item source (`ItemSource`) that notes, each time a statement is rendered, how many calls had reached
    the server by then."""

    def __init__(self, proxy: RecordingProxy):
        self.proxy = proxy
        self.rendered: list[tuple[str, int]] = []

    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        return [(statement_id, range(PER_STATEMENT)) for statement_id in STATEMENTS]

    def texts(self, statement_id: str) -> dict[int, str]:
        self.rendered.append((statement_id, len(self.proxy.matching("POST", "/openai/v1/chat/completions"))))
        return {index: f"{statement_id} prompt {index}" for index in range(PER_STATEMENT)}


def test_each_statement_is_rendered_once_when_the_first_worker_reaches_it(tmp_path: Path) -> None:
    with Emulator() as emu, RecordingProxy(emu.base_url) as proxy:
        options = RealtimeOptions(limits=RateLimits(max_concurrency=1), retry_initial_delay=0.05)
        model = OpenAIChatModel(
            "org/open-model",
            GenerationParams(max_tokens=16),
            options,
            api_key=KEY,
            base_url=f"{proxy.base_url}/openai/v1",
            org="openai-compatible",
        )
        source = RenderedOnDemand(proxy)
        summary = RealtimeEngine(model, RunStore(tmp_path), EngineOptions(max_attempts=1)).run(source)
    assert summary.finished and summary.outcome_counts == {"succeeded": len(STATEMENTS) * PER_STATEMENT}
    # One worker: statement k is rendered when the calls of the statements before it have been made, not before.
    assert source.rendered == [(statement_id, k * PER_STATEMENT) for k, statement_id in enumerate(STATEMENTS)]
    results = RunStore(tmp_path).load_results("beta")
    assert [r.input_text for r in results] == [f"beta prompt {i}" for i in range(PER_STATEMENT)]

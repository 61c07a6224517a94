"""The engine's seam for requests that are not one user message: a `PromptSource` gives each input's `Prompt`
(here a transcript), the request lines carry it in the provider's roles, and results keep the source's text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.ledger import ItemSource, PromptSource
from speceval.batch.store import RunStore
from speceval.emulator import Emulator, FaultConfig
from speceval.providers.openai_batch import OpenAIBatchedModel
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import Message, Prompt, PromptLike
from tests.conftest import TEST_KEY


class TwoPrompts:
    def statement_counts(self) -> Sequence[tuple[str, Sequence[int]]]:
        return [("s", [0, 3])]

    def texts(self, statement_id: str) -> dict[int, str]:
        return {0: "plain", 3: "second turn"}

    def prompts(self, statement_id: str) -> Mapping[int, PromptLike]:
        return {
            0: "plain",
            3: Prompt((Message("user", "first"), Message("assistant", "its answer"), Message("user", "second turn"))),
        }


def test_a_prompt_source_sends_transcripts_and_records_its_texts(tmp_path: Path) -> None:
    source = TwoPrompts()
    assert isinstance(source, PromptSource) and isinstance(source, ItemSource)
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        model = OpenAIBatchedModel(
            "gpt-4.1-mini-2025-04-14", GenerationParams(max_tokens=32), api_key=TEST_KEY, base_url=emu.openai_base_url
        )
        summary = BatchEngine(model, RunStore(tmp_path), EngineOptions(poll_interval=0.05)).run(source)
    assert summary.finished and summary.jobs == 1
    (request_file,) = (tmp_path / "preprocessed").glob("*.jsonl")
    lines = [json.loads(line) for line in request_file.read_text().splitlines()]
    assert [line["body"]["messages"] for line in lines] == [
        [{"role": "user", "content": "plain"}],
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "its answer"},
            {"role": "user", "content": "second turn"},
        ],
    ]
    results = RunStore(tmp_path).load_results("s")
    assert [(r.original_index, r.input_text, r.outcome.value) for r in results] == [
        (0, "plain", "succeeded"),
        (3, "second turn", "succeeded"),
    ]

"""Runs written before custom-id maps were stored as spans still load, resume and fetch.

`fixtures/old_format_run` was written by the code of commit c77174f (the script is beside it,
`make_old_format_run.py.txt`): a run of 6 inputs in jobs of 4, whose first job was created (its record in
`metadata/` holds the old `requests` map) and whose second was planned but never submitted (an intent holding the
old map). The fixture's job lived on a server that is gone, so the test creates the same job (same request file,
same tag) on the independent OpenAI server and points the record's provider ids at it, leaving its map as
written.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import openai

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.ledger import ListSource
from speceval.batch.records import ItemRef, Outcome
from speceval.batch.store import RunStore
from speceval.providers.openai_batch import TAG_KEY, OpenAIBatchedModel
from speceval.wire.openai import ENDPOINT
from speceval.wire.params import GenerationParams
from tests.independent.openai_server import IndependentOpenAIServer

FIXTURE = Path(__file__).parent / "fixtures" / "old_format_run"
KEY = "sk-test-old-format"
TEXTS = {("alpha", i): f"alpha question {i}" for i in range(3)} | {("beta", i): f"beta question {i}" for i in (0, 2, 5)}


def _answer(body: dict[str, Any]) -> str:
    return f"answer to {body['messages'][-1]['content']}"


def _old_map(path: Path) -> dict[str, ItemRef]:
    return {cid: ItemRef(*ref) for cid, ref in json.loads(path.read_text())["requests"].items()}


def _recreate_job(run: Path, server: IndependentOpenAIServer) -> str:
    """Create the fixture's recorded job on `server` and point its (old-format) record at it."""
    old_path = next((run / "metadata").glob("*.json"))
    record = json.loads(old_path.read_text())
    client = openai.OpenAI(api_key=KEY, base_url=server.base_url)
    with (run / record["request_file"]).open("rb") as handle:
        uploaded = client.files.create(file=handle, purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id,
        endpoint=ENDPOINT,
        completion_window="24h",
        metadata={TAG_KEY: record["idempotency_key"]},
    )
    record["batch_id"], record["handle"]["input_file_id"] = batch.id, uploaded.id
    old_path.unlink()
    RunStore(run).record_path(batch.id).write_text(json.dumps(record, indent=2))
    return batch.id


def test_a_run_written_before_spans_loads_resumes_and_fetches(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    old_record_map = _old_map(next((run / "metadata").glob("*.json")))
    old_intent_map = _old_map(next((run / "intents").glob("*.json")))
    source = ListSource((sid, index, text) for (sid, index), text in TEXTS.items())
    with IndependentOpenAIServer(answer=_answer) as server:
        batch_id = _recreate_job(run, server)
        store = RunStore(run)
        # The old maps read back exactly: every custom id still names the input it was sent for.
        assert store.load_record(batch_id).requests == old_record_map
        assert store.load_intents()[0].requests == old_intent_map

        params = GenerationParams(max_tokens=16)
        model = OpenAIBatchedModel("gpt-4.1-mini", params, api_key=KEY, base_url=server.base_url)
        engine = BatchEngine(model, store, EngineOptions(batch_size=4, poll_interval=0.01, timeout_hours=0.05))
        deadline = time.monotonic() + 30
        while not store.load_record(batch_id).collected:
            assert time.monotonic() < deadline, "the old-format job was never collected"
            engine.fetch(source)
        fetched = {(sid, r.original_index) for sid in ("alpha", "beta") for r in store.load_results(sid)}
        assert fetched == set(old_record_map.values())
        assert len(client_batches(server)) == 1  # fetch submits nothing

        summary = engine.run(source)
        batches = client_batches(server)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: len(TEXTS)}
    assert len(batches) == 2  # the recorded job was not sent again; the intent's became the second
    for sid in ("alpha", "beta"):
        for result in store.load_results(sid):
            assert result.input_text == TEXTS[(sid, result.original_index)]
            assert result.output_text == f"answer to {result.input_text}"
    # Saved again in the new form, and still the same map.
    rewritten = json.loads(store.record_path(batch_id).read_text())
    assert "requests" not in rewritten and rewritten["refs"] == [["alpha", 0, 3], ["beta", 0, 1]]
    assert store.load_record(batch_id).requests == old_record_map


def client_batches(server: IndependentOpenAIServer) -> list[Any]:
    """Every batch the server holds, through the wire (its own listing)."""
    client = openai.OpenAI(api_key=KEY, base_url=server.base_url)
    return list(client.batches.list(limit=100))

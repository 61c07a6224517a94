"""Property-based tests (hypothesis) of the custom-id map and of re-ordered results."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speceval.batch.chunking import custom_id_for, new_idempotency_key
from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.store import RunStore
from speceval.wire.prompt import PromptItem
from tests.engine.fake_provider import FakeBatchedModel, FakeProvider

ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

statement_ids = st.text(min_size=1, max_size=90).filter(lambda s: s.strip() != "")
corpora = st.dictionaries(statement_ids, st.lists(st.text(max_size=40), min_size=0, max_size=6), min_size=1, max_size=5)


@given(positions=st.lists(st.integers(min_value=0, max_value=100_000), min_size=1, max_size=200, unique=True))
def test_custom_ids_are_valid_for_every_provider_and_unique_within_a_chunk(positions):
    key = new_idempotency_key()
    ids = [custom_id_for(key, p) for p in positions]
    assert all(ANTHROPIC_CUSTOM_ID.match(i) for i in ids)
    assert len(set(ids)) == len(ids)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(corpus=corpora, batch_size=st.integers(min_value=1, max_value=7), seed=st.integers(0, 10_000))
def test_results_in_any_order_land_on_their_own_inputs(corpus, batch_size, seed):
    items = [
        PromptItem(statement_id=sid, original_index=i, input_text=f"{sid!r}#{i}:{text}")
        for sid, texts in corpus.items()
        for i, text in enumerate(texts)
    ]
    remote = FakeProvider(shuffle_seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        options = EngineOptions(batch_size=batch_size, poll_interval=0.0)
        summary = BatchEngine(FakeBatchedModel(remote), store, options, sleep=lambda s: None).run(items)
        assert summary.finished and summary.outcome_counts.get("succeeded", 0) == len(items)
        for sid, texts in corpus.items():
            if not texts:
                assert not store.results_path(sid).exists()
                continue
            records = json.loads(store.results_path(sid).read_text())
            assert [r["original_index"] for r in records] == list(range(len(texts)))
            for record in records:
                assert record["output_text"] == f"answer to: {record['input_text']}"
                assert record["input_text"].startswith(f"{sid!r}#{record['original_index']}:")
        assert all(r.request_count <= batch_size for r in store.load_records())

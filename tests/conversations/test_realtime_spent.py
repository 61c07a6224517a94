"""A conversation's closed realtime half counts against the budget on resume at what its answers cost (each at the
tier that served it), and one whose model has no price is refused, not counted as free."""

from __future__ import annotations

from pathlib import Path

import pytest

from speceval.batch.budget import Budget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.journal import Journal, JournalEntry
from speceval.batch.records import Outcome, ResultRecord
from speceval.conversations.runner import realtime_spent
from speceval.errors import ConfigError
from speceval.wire.usage import Usage
from tests.pipelines.helpers import make_run, write_spec

MILLION = Usage(input_tokens=1_000_000, output_tokens=0)


def _half(tmp_path: Path, model: str, tiers: list[str]) -> Path:
    """A closed realtime half of `model`: one answer per reported tier in its journal, and a call that failed."""
    directory = make_run(tmp_path / "half", model, write_spec(tmp_path / "spec.jsonl", ["s1"]), {})
    journal = Journal(directory)
    journal.open()
    for index, tier in enumerate(tiers):
        answer = ResultRecord(
            original_index=index,
            input_text="q",
            output_text="a",
            batch_id="realtime",
            outcome=Outcome.SUCCEEDED,
            usage=MILLION,
            service_tier=tier,
        )
        journal.append(JournalEntry(statement_id="s1", record=answer))
    failed = ResultRecord(
        original_index=len(tiers), input_text="q", output_text=None, batch_id="realtime", outcome=Outcome.ERRORED
    )
    journal.append(JournalEntry(statement_id="s1", record=failed))  # not billed
    journal.close()
    return directory


def test_a_closed_realtime_half_costs_its_answers_at_the_tier_that_served_each(tmp_path: Path) -> None:
    prices = PriceTable.load()
    half = _half(tmp_path, "o4-mini", ["flex", "default"])
    flex = prices.cost("o4-mini", "openai", MILLION, tier="flex")
    standard = prices.cost("o4-mini", "openai", MILLION, tier="standard")
    assert flex is not None and standard is not None and flex < standard
    assert realtime_spent(half, Budget(10.0, CostEstimator(prices))) == pytest.approx(flex + standard)


def test_a_closed_realtime_half_of_an_unpriced_model_is_refused_not_counted_free(tmp_path: Path) -> None:
    half = _half(tmp_path, "no-such-model", ["flex"])
    with pytest.raises(ConfigError, match="no price for model 'no-such-model'"):
        realtime_spent(half, Budget(10.0, CostEstimator(PriceTable.load())))

"""The flex tier through the real SDKs against the emulator: shed requests retried and landed once, the tier served
recorded and priced at batch rates, `on_flex_unavailable` obeyed, and each provider's refusal of a model it does
not serve at flex."""

from __future__ import annotations

import json

import pytest

from speceval.batch.budget import Budget
from speceval.batch.costs import CostEstimator, PriceTable
from speceval.batch.engine import EngineOptions
from speceval.batch.store import RunStore
from speceval.emulator import Emulator, FaultConfig, respond
from speceval.realtime import RateLimits, RealtimeEngine, RealtimeOptions
from speceval.realtime.clients import AnthropicMessagesModel, GeminiGenerateModel, OpenAIChatModel
from speceval.wire.params import GenerationParams
from tests.realtime.helpers import KEY, items

FLEX = {"openai": "o4-mini", "gemini": "gemini-2.5-flash"}


def flex_model(emu: Emulator, provider: str, name: str | None = None, **options: object):
    settings = RealtimeOptions(
        limits=RateLimits(max_concurrency=4),
        retry_initial_delay=0.01,
        retry_max_delay=0.05,
        request_timeout=10.0,
        service_tier="flex",
        **options,  # type: ignore[arg-type]
    )
    params = GenerationParams(max_tokens=64)
    model = name or FLEX[provider]
    if provider == "gemini":
        return GeminiGenerateModel(model, params, settings, api_key=KEY, base_url=emu.gemini_base_url)
    if provider == "anthropic":
        return AnthropicMessagesModel(model, params, settings, api_key=KEY, base_url=emu.anthropic_base_url)
    return OpenAIChatModel(model, params, settings, api_key=KEY, base_url=emu.openai_base_url)


def records(run_dir):
    return [r for p in sorted((run_dir / "results").glob("*.json")) for r in json.loads(p.read_text())]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_shed_flex_requests_are_retried_land_once_and_record_the_tier_served(tmp_path, provider):
    prompts = items(12)
    with Emulator(faults=FaultConfig(flex_shed_every=3)) as emu:
        rt = flex_model(emu, provider)
        engine = RealtimeEngine(rt, RunStore(tmp_path), EngineOptions(max_attempts=1))
        summary = engine.run(prompts)
        gate = emu._realtime.flex
        counts = emu.realtime.prompt_counts()
    assert summary.finished and summary.outcome_counts == {"succeeded": 12}
    assert gate.shed >= 4 and gate.served == 12  # every third refused, every prompt served once
    assert summary.flex_refusals == gate.shed
    assert all(counts[p.input_text] == 1 for p in prompts)  # a refused call is never served, so never billed
    assert summary.tiers["flex"].requests == 12
    for record in records(tmp_path):
        assert record["service_tier"] == "flex" and record["attempts"] == 1
        assert record["output_text"] == respond(rt.model_name, record["input_text"])


def test_after_flex_patience_a_request_goes_where_on_flex_unavailable_says(tmp_path):
    prompts = items(6)
    with Emulator(faults=FaultConfig(flex_shed_rate=1.0)) as emu:
        standard = flex_model(emu, "openai", flex_patience=0.0, on_flex_unavailable="standard")
        summary = RealtimeEngine(standard, RunStore(tmp_path / "standard"), EngineOptions()).run(prompts)
        deferring = flex_model(emu, "openai", flex_patience=0.0, on_flex_unavailable="batch")
        engine = RealtimeEngine(deferring, RunStore(tmp_path / "batch"), EngineOptions())
        deferred = engine.run(prompts)
    assert summary.finished and summary.flex_fallbacks == {"standard": 6}
    assert summary.tiers == {"standard": summary.tiers["standard"]} and summary.tiers["standard"].requests == 6
    assert {r["service_tier"] for r in records(tmp_path / "standard")} == {"default"}  # as OpenAI names it
    # `batch`: nothing is recorded for them; they stay outstanding for a batch job of the same run.
    assert deferred.outstanding == 6 and deferred.flex_fallbacks == {"batch": 6}
    assert sorted(engine.deferred) == sorted((p.statement_id, p.original_index) for p in prompts)
    assert not list((tmp_path / "batch" / "results").glob("*.json")) or records(tmp_path / "batch") == []


def test_flex_is_reserved_and_settled_at_batch_rates(tmp_path):
    prices = PriceTable.load()
    with Emulator() as emu:
        rt = flex_model(emu, "openai")
        budget = Budget(1.0, CostEstimator(prices))
        summary = RealtimeEngine(rt, RunStore(tmp_path), EngineOptions(budget=budget)).run(items(8))
    usage = summary.tiers["flex"].usage
    flex = prices.cost(rt.model_name, "openai", usage, tier="flex")
    assert flex is not None and budget.spent_usd == pytest.approx(flex)
    assert prices.cost(rt.model_name, "openai", usage, tier="standard") == pytest.approx(2 * flex)


@pytest.mark.parametrize(
    ("provider", "model", "status", "says"),
    [
        ("openai", "gpt-4.1-mini", 400, "Flex processing is not available"),
        ("gemini", "gemini-1.5-pro", 400, "FLEX is not supported"),
        ("anthropic", "claude-haiku-4-5", 400, "service_tier"),
    ],
)
def test_the_emulator_refuses_flex_for_a_model_as_its_provider_does(tmp_path, provider, model, status, says):
    with Emulator() as emu:
        rt = flex_model(emu, provider, model)
        if provider == "anthropic":  # the adapter sends no tier (refused before a run): ask with the SDK itself
            import anthropic

            client = anthropic.Anthropic(api_key=KEY, base_url=emu.anthropic_base_url, max_retries=0)
            with pytest.raises(anthropic.BadRequestError) as refused:
                client.messages.create(
                    model=model,
                    max_tokens=16,
                    messages=[{"role": "user", "content": "hi"}],
                    extra_body={"service_tier": "flex"},
                )
            assert refused.value.status_code == status and says in str(refused.value)
            return
        summary = RealtimeEngine(rt, RunStore(tmp_path), EngineOptions()).run(items(2))
    assert summary.outcome_counts == {"errored": 2} and summary.flex_refusals == 0  # not capacity: not retried
    for record in records(tmp_path):
        assert record["error"]["status_code"] == status and says in record["error"]["message"]


def test_on_flex_unavailable_batch_sends_what_flex_refused_in_one_batch_job_of_the_run_and_resumes_it(tmp_path):
    from speceval.engines.factory import build_model, make_engine
    from speceval.realtime.settings import RealtimeSettings

    prompts = items(10)
    settings = RealtimeSettings(
        service_tier="flex", flex_patience=0.0, on_flex_unavailable="batch", retry_initial_delay=0.01
    )
    faults = FaultConfig(flex_shed_every=2, turnaround_seconds=0.05)  # every second flex request refused
    with Emulator(faults=faults) as emu:
        rt = build_model(
            "o4-mini", "openai", GenerationParams(max_tokens=64), settings, api_key=KEY, base_url=emu.openai_base_url
        )
        options = EngineOptions(poll_interval=0.05)
        summary = make_engine(rt, RunStore(tmp_path), options).run(prompts)
        jobs = emu.list_jobs("openai")
        again = make_engine(rt, RunStore(tmp_path), options).run(prompts)  # a rerun: everything is final
        jobs_after = emu.list_jobs("openai")
        served = emu._realtime.flex.served
    assert summary.finished and summary.outcome_counts == {"succeeded": 10}
    # Each input counted once: the five flex refused were counted at flex and again in the job (15; the generation
    # matrix's summary_counts: total requests 9 of 6 records)
    assert summary.total_requests == again.total_requests == 10
    assert summary.flex_fallbacks == {"batch": 5} and summary.tiers["batch"].requests == 5
    assert summary.tiers["flex"].requests == 5 and served == 5
    assert len(jobs) == 1 and len(jobs_after) == 1  # one job for the refused five; nothing sent again
    assert again.finished and again.outcome_counts == {"succeeded": 10}
    by_input = {r["input_text"]: r for r in records(tmp_path)}
    assert len(by_input) == 10
    assert sorted(r.get("service_tier") for r in by_input.values() if r.get("service_tier")) == ["flex"] * 5
    assert json.loads((tmp_path / "realtime" / "deferred.json").read_text())  # recorded before the job was made


@pytest.mark.slow
def test_a_killed_flex_run_resumes_without_sending_an_answered_request_again(tmp_path):
    import time as clock

    prompts = items(24)
    faults = FaultConfig(flex_latency_seconds=0.05, flex_latency_spread=0.0, flex_shed_every=5)
    with Emulator(faults=faults) as emu:
        rt = flex_model(emu, "openai")
        first = RealtimeEngine(rt, RunStore(tmp_path), EngineOptions())
        first.start(prompts)
        while not first.journal.read() or len(list(first.journal.read())) < 6:  # some answers recorded
            first.tick()
            clock.sleep(0.02)
        first.stop()  # as a kill: calls in flight are abandoned
        first._run_lock.release()  # a killed process's lock goes with it
        recorded = {e.record.input_text for e in first.journal.read() if e.record.outcome.value == "succeeded"}
        before = emu.realtime.prompt_counts()
        summary = RealtimeEngine(rt, RunStore(tmp_path), EngineOptions()).run(prompts)
        after = emu.realtime.prompt_counts()
    assert summary.finished and summary.outcome_counts == {"succeeded": 24}
    assert recorded and all(after[text] == before[text] == 1 for text in recorded)  # never sent again
    assert {r["service_tier"] for r in records(tmp_path)} == {"flex"}

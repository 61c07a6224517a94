"""Each realtime adapter through its real SDK against the emulator: answers, permanent and transient errors."""

from __future__ import annotations

import json

import pytest

from speceval.emulator import Emulator, FaultConfig, HttpFault, respond
from speceval.realtime import RateLimits
from tests.realtime.helpers import items, model, run

PROVIDERS = ["openai", "anthropic", "gemini"]


def records(run_dir):
    return [r for p in sorted((run_dir / "results").glob("*.json")) for r in json.loads(p.read_text())]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_answers_and_permanent_errors_are_final_after_one_call(tmp_path, provider):
    prompts = items(12, marker_every=4)
    with Emulator() as emu:
        rt = model(emu, provider)
        summary = run(rt, tmp_path, prompts)
        counts = emu.realtime.prompt_counts()
    assert summary.finished
    assert summary.outcome_counts == {"succeeded": 9, "errored": 3}
    assert all(counts[p.input_text] == 1 for p in prompts)  # a 400 is not retried
    for record in records(tmp_path):
        if "[[emulator:error]]" in record["input_text"]:
            assert record["outcome"] == "errored" and record["output_text"] is None
            assert record["error"]["status_code"] == 400 and record["error"]["retryable"] is False
        else:
            assert record["output_text"] == respond(rt.model_name, record["input_text"])
            assert record["usage"]["output_tokens"] > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_errors_are_retried_and_rate_limits_cool_down(tmp_path, provider):
    faults = FaultConfig(
        http_faults=[HttpFault(status=503, count=3), HttpFault(status=500, count=2)],
        realtime_rpm=10,  # a 0.5 s window admits 10: 30 requests meet a 429 unless they take 1.5 s (20: missed, loaded)
        realtime_window_seconds=0.5,
        realtime_rate_headers=False,
    )
    with Emulator(faults=faults) as emu:
        rt = model(emu, provider, limits=RateLimits(rpm=80, max_concurrency=4, period_seconds=0.5))
        summary = run(rt, tmp_path, items(30), max_attempts=4)
        stats = emu.realtime.stats()
    assert summary.finished and summary.outcome_counts == {"succeeded": 30}
    assert stats.rate_limited > 0


@pytest.mark.parametrize("status", [400, 401, 404])
def test_permanent_statuses_become_errored_outcomes_without_retry(tmp_path, status):
    faults = FaultConfig(http_faults=[HttpFault(status=status, count=100, path_regex="chat/completions")])
    with Emulator(faults=faults) as emu:
        summary = run(model(emu), tmp_path, items(5))
        calls = emu.stats.requests.get("POST /openai/v1/chat/completions", 0)
    assert summary.finished and summary.outcome_counts == {"errored": 5}
    assert calls == 5
    assert all(r["error"]["status_code"] == status for r in records(tmp_path))


def test_transient_errors_exhaust_max_attempts_then_resume_retries_them(tmp_path):
    faults = FaultConfig(http_faults=[HttpFault(status=502, count=6, path_regex="chat/completions")])
    with Emulator(faults=faults) as emu:
        first = run(model(emu), tmp_path, items(2), max_attempts=3)
        assert first.outcome_counts == {"errored": 2}
        assert all(r["attempts"] == 3 and r["error"]["retryable"] for r in records(tmp_path))
        again = run(model(emu), tmp_path, items(2), max_attempts=3)  # final: nothing is sent
        assert emu.stats.requests["POST /openai/v1/chat/completions"] == 6
        more = run(model(emu), tmp_path, items(2), max_attempts=4)  # a higher limit retries them
    assert again.outcome_counts == {"errored": 2}
    assert more.outcome_counts == {"succeeded": 2}

"""A realtime run whose endpoint cannot be reached says why on the terminal.

docs/scale-out.md's first command with no server at its base URL finished (exit 0) with every request `errored`
after its attempts, and nothing on the terminal or in the log said why: the cause (`connection_error`) was only in
each results record. The first request to end with each error code now says it, once."""

from __future__ import annotations

from speceval.batch.engine import EngineOptions
from speceval.batch.records import Outcome
from speceval.batch.store import RunStore
from speceval.cli.console import close_logging, setup_logging
from speceval.realtime import RateLimits, RealtimeEngine, RealtimeOptions
from speceval.realtime.clients import OpenAIChatModel
from speceval.wire.params import GenerationParams
from tests.realtime.helpers import KEY, items


def test_requests_that_could_not_reach_the_endpoint_say_so_once(tmp_path, capsys) -> None:
    options = RealtimeOptions(limits=RateLimits(max_concurrency=4), retry_initial_delay=0.01, request_timeout=5.0)
    closed = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there, so the connection is refused
    model = OpenAIChatModel(
        "org/open-model",
        GenerationParams(max_tokens=16),
        options,
        api_key=KEY,
        base_url=closed,
        org="openai-compatible",
    )
    setup_logging(verbose=False, log_file=tmp_path / "run.log")
    try:
        summary = RealtimeEngine(model, RunStore(tmp_path / "run"), EngineOptions(max_attempts=2)).run(items(6))
    finally:
        close_logging()
    assert summary.outcome_counts == {Outcome.ERRORED: 6}
    shown = [line for line in capsys.readouterr().err.splitlines() if "connection_error" in line]
    assert len(shown) == 1, shown  # once per error code, not once per request
    assert "connection_error" in (tmp_path / "run.log").read_text(encoding="utf-8")

"""Service tiers against a server written from the OpenAPI spec (not the emulator): flex that sheds every fourth
request lands every answer exactly once at batch cost; flex where it is not offered is refused before any request;
`--tier auto` plans tiers and hours in a dry run that sends nothing."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer

FLEX_MODEL = "o4-mini"  # on the shipped table's flex list (prices.json → flex.openai)
NOT_FLEX_MODEL = "gpt-4.1-mini-2025-04-14"  # not on it


class ShedEveryFourth:
    """`fail` of the server: every fourth flex chat request is refused as OpenAI refuses flex without capacity."""

    def __init__(self) -> None:
        self.flex_seen = 0
        self.shed = 0
        self._lock = threading.Lock()

    def __call__(self, custom_id: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if custom_id is not None or body.get("service_tier") != "flex":
            return None
        with self._lock:
            self.flex_seen += 1
            if self.flex_seen % 4:
                return None
            self.shed += 1
        return 429, {"message": "Resource unavailable", "type": "resource_unavailable", "param": None, "code": None}


def _answer(body: dict[str, Any]) -> str:
    return "answer to " + body["messages"][-1]["content"]


def _files(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    texts = {"alpha": [f"a{i}" for i in range(9)], "beta": [f"b{i}" for i in range(6)]}
    spec = write_spec(tmp_path / "spec.jsonl", list(texts))
    inputs = write_inputs(tmp_path / "inputs", texts)
    return spec, inputs, [t for group in texts.values() for t in group]


def _generation(spec: Path, inputs: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        FLEX_MODEL,
        "--output-base-dir",
        str(out),
        *extra,
    ]


def _cost(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert speceval_main(["cost", str(run_dir), "--json"]) == 0  # reads files only: nothing is asked of a server
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def test_flex_that_sheds_every_fourth_request_lands_every_answer_once_at_batch_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, inputs, texts = _files(tmp_path)
    shed = ShedEveryFourth()
    with IndependentOpenAIServer(answer=_answer, fail=shed) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, SPECEVAL_POLL_INTERVAL="0.1")
        flex = run_generation(
            _generation(spec, inputs, tmp_path / "flex", "--tier", "flex", "--retry-initial-delay", "0.01"), env
        )
        assert flex.returncode == 0, flex.stderr
        flex_requests = list(server.chat_requests)
        batch = run_generation(_generation(spec, inputs, tmp_path / "batch", "--tier", "batch"), env)
        assert batch.returncode == 0, batch.stderr
        assert server.chat_requests == flex_requests  # the batch run made no realtime call
    flex_dir, batch_dir = only_run_dir(tmp_path / "flex"), only_run_dir(tmp_path / "batch")
    flex_cost, batch_cost = _cost(flex_dir, capsys), _cost(batch_dir, capsys)

    # Shedding happened, every refused request was sent again at flex, and no input was answered twice.
    assert shed.shed >= len(texts) // 4
    assert all(body["service_tier"] == "flex" for body in flex_requests)
    sent = Counter(body["messages"][-1]["content"] for body in flex_requests)
    assert sum(sent.values()) == len(texts) + shed.shed
    records = [r for path in (flex_dir / "results").glob("*.json") for r in json.loads(path.read_text())]
    assert sorted(r["input_text"] for r in records) == sorted(texts)  # each input once
    for record in records:
        assert record["outcome"] == "succeeded" and record["attempts"] == 1  # a refusal is not an attempt
        assert record["output_text"] == "answer to " + record["input_text"]
        assert record["service_tier"] == "flex"  # what the response said served it
    totals = json.loads((flex_dir / "run.json").read_text())["totals"]
    assert totals["tiers"]["flex"]["requests"] == len(texts)
    assert totals["flex_refusals"] == shed.shed
    assert totals["outcome_counts"] == {"succeeded": len(texts)}

    # Priced at batch rates: the same answers cost what they cost through the Batch API.
    assert flex_cost["per_tier"]["flex"]["requests"] == len(texts)
    assert batch_cost["per_tier"]["batch"]["requests"] == len(texts)
    assert flex_cost["total_usd"] > 0
    assert abs(flex_cost["total_usd"] - batch_cost["total_usd"]) < 1e-12


def test_flex_where_it_is_not_offered_is_refused_before_any_request(tmp_path: Path) -> None:
    spec, inputs, _ = _files(tmp_path)
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, ANTHROPIC_API_KEY=TEST_KEY)
        unlisted = _generation(spec, inputs, tmp_path / "out", "--tier", "flex")
        unlisted[unlisted.index(FLEX_MODEL)] = NOT_FLEX_MODEL
        refused_model = run_generation(unlisted, env)
        anthropic = _generation(spec, inputs, tmp_path / "out", "--tier", "flex")
        anthropic[anthropic.index(FLEX_MODEL)] = "claude-haiku-4-5-20251001"
        refused_org = run_generation(anthropic, env)
        assert server.chat_requests == [] and server.batches == [] and server.files == {}
    assert refused_model.returncode != 0
    assert f"does not serve {NOT_FLEX_MODEL} at flex" in refused_model.stderr
    assert "--prices FILE" in refused_model.stderr  # how to pass a newer flex list
    assert refused_org.returncode != 0 and "org anthropic has no flex tier" in refused_org.stderr
    assert not (tmp_path / "out").exists()  # refused before a run directory exists
    assert TEST_KEY not in refused_model.stderr + refused_org.stderr


def test_tier_auto_with_a_deadline_prints_a_plan_of_tiers_and_hours_and_sends_nothing(tmp_path: Path) -> None:
    spec, inputs, texts = _files(tmp_path)
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        args = _generation(spec, inputs, tmp_path / "out", "--tier", "auto", "--deadline-hours", "2", "--dry-run")
        done = run_generation(args, env)
        assert server.chat_requests == [] and server.batches == [] and server.files == {}
    assert done.returncode == 0, done.stderr
    shown = " ".join((done.stdout + done.stderr).replace("│", " ").split())  # a table's cells, in order
    # A batch round trip is expected to take 6 h at OpenAI: only flex meets a 2-hour deadline at batch rates.
    assert "tier auto" in shown and "flex" in shown
    assert f"answers o4-mini flex {len(texts)}" in shown
    assert "all-batch" in shown and "misses the deadline" in shown and "all-standard" in shown
    assert " h (meets the deadline" in shown
    # At the run's own --rpm the round takes what the limit lets it: its requests at 1 a minute (it said 0.00 h).
    with IndependentOpenAIServer(answer=_answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        paced = run_generation([*args, "--rpm", "1", "--deadline-hours", "5"], env)
        assert server.chat_requests == [] and server.batches == []
    assert paced.returncode == 0, paced.stderr
    hours = f"{len(texts) / 60:.2f}"
    assert f"answers o4-mini flex {len(texts)}" in " ".join((paced.stdout + paced.stderr).replace("│", " ").split())
    assert f"{hours} " in paced.stdout.split("answers")[1].split("\n")[0], paced.stdout

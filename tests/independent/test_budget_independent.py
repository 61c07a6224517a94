"""Budgets against the independent OpenAI server: what is spent is counted as spent, so a study whose upper bound
is several times its budget but whose spend fits finishes in one command; answers at max_tokens never pass the
budget; a budget stop names the budget on its last line, and a raised budget continues without resubmitting."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from speceval.batch.costs import PriceTable
from speceval.batch.records import Usage
from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer

GPT = "gpt-4.1-mini-2025-04-14"
MAX_TOKENS = 2000
BUDGET = 0.012  # one job of 5 requests reserves ~$0.008 (5 × 2,000 output tokens at the batch price)


def _experiment(tmp_path: Path, budget: float) -> Path:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(
        tmp_path / "inputs", {sid: [f"{sid} question {i}" for i in range(20)] for sid in ("alpha", "beta")}
    )
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"""experiment_name: budgeted
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {GPT}
stages: [generation]
budget_usd: {budget}
engine:
  poll_interval: 0.05
  batch_size: 5
  max_tokens: {MAX_TOKENS}
""")
    return experiment


def _short(body: dict[str, Any]) -> str:
    return "a short answer"


def _at_max_tokens(body: dict[str, Any]) -> str:
    # The server counts len(text) // 4 completion tokens: exactly the request's limit.
    return "x" * 4 * int(body["max_completion_tokens"])


def _run(experiment: Path, server: IndependentOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return speceval_main(["run", str(experiment)])


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in out.rglob("metadata/*.json")]


def _spent(out: Path) -> float:
    """What the answers cost by the usage the server reported, at the price table's batch price (not our figure)."""
    usage = Usage()
    for path in out.rglob("results/*.json"):
        for row in json.loads(path.read_text()):
            usage.add(row.get("usage"))
    cost = PriceTable.load().cost(GPT, "openai", usage, batch=True)
    assert cost is not None
    return cost


def test_upper_bound_over_four_budgets_but_small_spend_finishes_in_one_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path, BUDGET)
    with IndependentOpenAIServer(answer=_short) as server:
        code = _run(experiment, server, monkeypatch)
        batches = server.batches
    assert code == 0, capsys.readouterr().err
    records = _records(tmp_path / "out")
    upper_bound = sum(r["estimated_cost_usd"] for r in records)
    assert len(batches) == len(records) == 8 and upper_bound > 4 * BUDGET
    spent = _spent(tmp_path / "out")
    assert spent <= BUDGET and sum(r["cost_usd"] for r in records) == pytest.approx(spent)


def test_answers_at_max_tokens_never_pass_the_budget_and_a_raised_budget_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path, BUDGET)
    with IndependentOpenAIServer(answer=_at_max_tokens) as server:
        code = _run(experiment, server, monkeypatch)
        stopped = capsys.readouterr()
        first = len(server.batches)
        assert code == 3, stopped.err
        assert 0 < first < 8 and _spent(tmp_path / "out") <= BUDGET
        last = (stopped.err + stopped.out).strip().splitlines()[-1]
        assert last.startswith("Stopped by the budget: spent $") and f"of the ${BUDGET:.4f} limit" in last
        assert "request(s) of stopped tasks" in last

        experiment.write_text(experiment.read_text().replace(f"budget_usd: {BUDGET}", "budget_usd: 1.0"))
        code = _run(experiment, server, monkeypatch)
        lines = [
            json.loads(raw)
            for f in server.files.values()
            if f.purpose == "batch"
            for raw in f.data.splitlines()
            if raw.strip()
        ]
        batches = server.batches
    assert code == 0, capsys.readouterr().err
    assert len(batches) == 8  # nothing paid for before the raise was sent again
    sent = Counter(line["body"]["messages"][-1]["content"] for line in lines)
    assert len(sent) == 40 and max(sent.values()) == 1
    assert _spent(tmp_path / "out") <= 1.0

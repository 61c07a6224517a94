"""Issue 42's study against the independent OpenAI and Anthropic servers instead of the built-in emulator: the
study matrix's configurations run unchanged (`tests.study_matrix.matrix.run_one`, each command a subprocess whose SDKs
are pointed at the servers by `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL`), and every invariant is checked from the
files on disk and from what the servers say they received.

The OpenAI server answers judge prompts with planted verdicts that depend on the whole prompt (so a conversation's
turns are judged differently, and caving that recovers by the last turn happens), and everything else (candidates,
the simulated user) with an echo naming the model; the Anthropic server echoes. Nothing here is the project's
emulator: the study's joins hold on the documented wire.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_KEY
from tests.independent.anthropic_server import IndependentAnthropicServer, last_user_text
from tests.independent.openai_server import IndependentOpenAIServer
from tests.study_matrix import checks_turns
from tests.study_matrix.matrix import run_one

MARKER = "speceval judge prompt: "

# One conversation study meeting the joins the issue names: a model judging at turn and conversation scope beside
# it, a simulated user over three turns, two runs, an aimed label sheet and an Inspect export read back; one
# candidate answers through the independent OpenAI server's Batch API, the other through the independent Anthropic
# server's Message Batches (each conversation round a batch of multi-turn messages).
CONVERSATIONS = {
    "candidates": "2",
    "models": "gpt-4.1-mini-2025-04-14,claude-haiku-4-5-20251001",
    "judges": "binary@turn+binary",
    "variation": "simulated_user",
    "turns": "3",
    "runs": "2",
    "budget": "none",
    "tier": "batch",
    "labels": "aimed",
    "export": "inspect",
}
# A tight budget that stops the study, then raised: it must end (exit 3 with the budget's line), then finish without
# paying twice; candidates at flex, answered on the server's chat completions.
TIGHT = {
    "candidates": "2",
    "judges": "binary+binary",
    "variation": "follow_ups",
    "runs": "1",
    "budget": "raised",
    "tier": "flex",
    "labels": "none",
    "export": "original",
}


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def planted_answer(body: dict[str, Any]) -> str:
    """A judge's verdict (one in four non-compliant, by the prompt's digest), or else (a candidate's answer, a simulated
    user's next turn) an echo that names the model."""
    content = body["messages"][-1]["content"]
    prompt = content if isinstance(content, str) else json.dumps(content)
    if MARKER in prompt:
        template = prompt.split(MARKER, 1)[1].split()[0]
        digest = _digest(prompt)
        if "likert" in template:
            verdict = {"rating": 1 + digest % 5}
        elif "categories" in template:
            verdict = {"category": ("follows", "breaks")[digest % 2]}
        else:
            verdict = {"compliant": digest % 4 != 0, "confidence": 0.8}
        return "Reasoning in brief.\n" + json.dumps({**verdict, "explanation": "planted by the independent server"})
    return f"{body['model']} answers #{_digest(body['model'] + prompt) % 10_000}: {prompt[:60]}"


def _claude_answer(params: dict[str, Any]) -> str:
    prompt = last_user_text(params)
    return f"{params['model']} answers #{_digest(params['model'] + prompt) % 10_000}: {prompt[:60]}"


def _run(config: dict[str, str], folder: Path) -> tuple[Any, Path, int]:
    with (
        IndependentOpenAIServer(answer=planted_answer) as openai_server,
        IndependentAnthropicServer(answer=_claude_answer) as anthropic_server,
    ):
        env = {
            **os.environ,
            "OPENAI_API_KEY": TEST_KEY,
            "OPENAI_BASE_URL": openai_server.base_url,
            "ANTHROPIC_API_KEY": TEST_KEY,
            "ANTHROPIC_BASE_URL": anthropic_server.base_url,
        }
        env.pop("SPECEVAL_OFFLINE_TURNAROUND", None)

        def sent() -> Counter[tuple[str, str]]:
            claude = [(str(params.get("model")), custom_id) for _, custom_id, params in anthropic_server.requests]
            return Counter(openai_server.batch_requests() + claude)

        outcome = run_one(config, folder, env, offline=False, sent=sent)
        claude_batches = len({batch for batch, _, _ in anthropic_server.requests})
    return outcome, folder / "out", claude_batches


@pytest.mark.slow
def test_a_conversation_study_composes_against_the_independent_server(tmp_path: Path) -> None:
    outcome, out, claude_batches = _run(CONVERSATIONS, tmp_path / "study")
    assert outcome.failures == {}, outcome.failures
    assert claude_batches >= 2 * 3  # Claude's rounds went through Message Batches: 3 turns in each of 2 runs
    # Every invariant ran (none skipped by an early exit): canaries per judge entry, spec health's candidates, the
    # turn rates and flips recomputed, the aimed sheet, the Inspect logs read back with finite panels and answers.
    for name in ("canaries_per_judge_entry", "health_candidates", "turn_rate_counts", "flip_counts", "labels_aimed"):
        assert name in outcome.names, outcome.names
    assert "export_inspect" in outcome.names
    # The planted verdicts make caving that recovers happen; flips.csv counts it where first-to-last does not.
    cells = checks_turns._turn_verdicts(out)
    recovered = sum(
        turns[1] and not turns[2] and turns[3]
        for conversations in cells.values()
        for turns in conversations.values()
        if {1, 2, 3} <= set(turns)
    )
    assert recovered > 0
    synthetic = [p for p in out.rglob("results/*.json") if '"answers_synthetic": true' in p.read_text("utf-8")]
    assert synthetic == []  # a provider's answers, not the emulator's: nothing may call them synthetic


@pytest.mark.slow
def test_a_tight_budget_ends_then_finishes_paying_nothing_twice_against_the_independent_server(
    tmp_path: Path,
) -> None:
    outcome, _, _ = _run(TIGHT, tmp_path / "tight")
    assert outcome.failures == {}, outcome.failures
    assert {"ends", "budget_raised", "sent_once", "tier_served", "export_original"} <= set(outcome.names)

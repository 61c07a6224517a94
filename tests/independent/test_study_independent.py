"""Issue 42's study, against the independent OpenAI server instead of the built-in emulator: the study matrix's
configurations run unchanged (`tests.study_matrix.matrix.run_one`, each command a subprocess whose SDKs are pointed at
the server by `OPENAI_BASE_URL`), and every invariant is checked from the files on disk and from what the server
says it received.

The server answers judge prompts with planted verdicts that depend on the whole prompt (so a conversation's turns
are judged differently, and caving that recovers by the last turn happens), and everything else (candidates, the
simulated user) with an echo naming the model. Nothing here is the project's emulator: the study's joins hold on
the documented wire.
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
from tests.independent.openai_server import IndependentOpenAIServer
from tests.study_matrix import checks_turns
from tests.study_matrix.matrix import run_one

MARKER = "speceval judge prompt: "

# One conversation study meeting the joins the issue names: a model judging at turn and conversation scope beside
# it, a simulated user over three turns, two runs, an aimed label sheet and an Inspect export read back.
CONVERSATIONS = {
    "candidates": "2",
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


def _run(config: dict[str, str], folder: Path) -> tuple[Any, Path]:
    with IndependentOpenAIServer(answer=planted_answer) as server:
        env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": server.base_url}
        env.pop("SPECEVAL_OFFLINE_TURNAROUND", None)
        outcome = run_one(config, folder, env, offline=False, sent=lambda: Counter(server.batch_requests()))
    return outcome, folder / "out"


@pytest.mark.slow
def test_a_conversation_study_composes_against_the_independent_server(tmp_path: Path) -> None:
    outcome, out = _run(CONVERSATIONS, tmp_path / "study")
    assert outcome.failures == {}, outcome.failures
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
    outcome, _ = _run(TIGHT, tmp_path / "tight")
    assert outcome.failures == {}, outcome.failures
    assert {"ends", "budget_raised", "sent_once", "tier_served", "export_original"} <= set(outcome.names)

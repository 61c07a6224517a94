"""An upper bound on what a conversation run's later rounds can cost, for the dry run (they cannot be planned:
each is built from the answers before it).

Bound per request: input tokens are the scripted text so far plus every earlier answer at its model's `max_tokens`
(and, for the user model, its prompt's own text; for the candidate, its system prompt), with the request's JSON
framing, at the dry run's four bytes a token; output tokens are
`max_tokens`. Every conversation is counted as going to its last possible round: no stop word, no failed turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel

from speceval.batch.costs import REQUEST_FRAMING_TOKENS, estimate_prompt_tokens
from speceval.conversations.simulated_user import SimulatedUser, user_prompt
from speceval.inputs import InputSet
from speceval.inputs.script import Conversation
from speceval.spec import Statement


class LaterRounds(BaseModel):
    """The requests one model gets in rounds 2 and later, at most, and their tokens at most."""

    role: Literal["candidate", "simulated user"]
    model: str
    round: int | None = None  # None: rounds 2 and later together
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def later_rounds(
    inputs: InputSet,
    candidate: str,
    candidate_max_tokens: int,
    user: SimulatedUser | None,
    statements: Mapping[str, Statement] | None = None,
    *,
    per_round: bool = False,
    system_prompt: str | None = None,
) -> list[LaterRounds]:
    """The bound of the module docstring for the candidate's rounds 2.. and, with one, the simulated user's
    (`statements`: the spec's, by id, for instructions that name the statement under test); `per_round`: one
    bound per round and role (round 2's user turns, round 2's answers, round 3's ...), in the order they are sent.
    Each request also carries its JSON framing, and each answer's the candidate's `system_prompt` (left out, round
    2, which re-sends everything round 1 did, was bounded below round 1 under a long system prompt)."""
    system = estimate_prompt_tokens(system_prompt) if system_prompt else 0
    answers = LaterRounds(role="candidate", model=candidate)
    turns = LaterRounds(role="simulated user", model=user.model) if user is not None else None
    rounds: dict[tuple[int, str], LaterRounds] = {}

    def add(bound: LaterRounds, number: int, input_tokens: int, output_tokens: int) -> None:
        for target in (
            bound,
            rounds.setdefault(
                (number, bound.role),
                bound.model_copy(update={"round": number, "requests": 0, "input_tokens": 0, "output_tokens": 0}),
            ),
        ):
            target.requests += 1
            target.input_tokens += input_tokens
            target.output_tokens += output_tokens

    for statement_id in inputs.statement_ids:
        # The user model's prompt without any transcript: its marker, role, instructions (filled with this
        # statement's text and examples when they name it) and what to write.
        frame = (
            estimate_prompt_tokens(
                user_prompt(user.instructions_for((statements or {}).get(statement_id)), user.stop_word, [])
            )
            if user is not None
            else 0
        )
        for item in inputs.entries(statement_id).values():
            if not isinstance(item, Conversation):
                continue
            # Every scripted text in every request: more than a round sends, never less.
            scripted = sum(estimate_prompt_tokens(text) for text in [*(m.content for m in item.messages), *item.turns])
            user_tokens = user.max_tokens if user is not None else 0
            for number in range(2, inputs.max_rounds + 1):
                earlier = (number - 1) * candidate_max_tokens
                simulated = max(0, number - item.rounds)  # the user model's turns sent up to this round
                if number > item.rounds:
                    if turns is None or user is None or number > user.max_turns:
                        break
                    sent = frame + scripted + earlier + (simulated - 1) * user_tokens
                    add(turns, number, REQUEST_FRAMING_TOKENS + sent, user.max_tokens)
                sent = system + scripted + earlier + simulated * user_tokens
                add(answers, number, REQUEST_FRAMING_TOKENS + sent, candidate_max_tokens)
    if per_round:  # a round's user turns are written before its answers
        return [rounds[key] for key in sorted(rounds, key=lambda k: (k[0], k[1] == "candidate"))]
    return [answers, *([turns] if turns is not None else [])]

"""What `--tier auto` plans a generation run over: its rounds (round 1's requests, the bounds of the later ones), the
simulated user's turns between them, and the tier choice they give (`speceval.cli.tier_flags.choose_tier`)."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from speceval.batch.costs import REQUEST_FRAMING_TOKENS, estimate_prompt_tokens
from speceval.cli.endpoint_flags import realtime_flags
from speceval.cli.tier_flags import TierChoice, choose_tier, round_limits
from speceval.conversations.estimate import LaterRounds, later_rounds
from speceval.engines.tier_plan import RoundLoad, UserRounds
from speceval.inputs.script import Conversation
from speceval.operations.learned_times import learned_here
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.registry import resolve_org


def _first_round_tokens(pipeline: BatchedGenerationPipeline) -> int:
    """Input tokens of the first round's requests (four bytes a token, as every dry-run estimate): each prompt's
    text, the system prompt and the request's framing, as the experiment's plan and the later rounds' bounds count
    them. Without the last two the plan's "upper bound" sat below the dry run's own ($0.3610 against $0.3621 for
    40 requests), and a long system prompt went uncounted."""
    system = estimate_prompt_tokens(pipeline.config.params.system_prompt) if pipeline.config.params.system_prompt else 0
    total = 0
    for statement_id in pipeline.inputs.statement_ids:
        for item in pipeline.inputs.entries(statement_id).values():
            if isinstance(item, Conversation):
                total += sum(estimate_prompt_tokens(m.content) for m in item.messages) or estimate_prompt_tokens(
                    item.first_user_text
                )
            else:
                total += estimate_prompt_tokens(str(item))
            total += system + REQUEST_FRAMING_TOKENS
    return total


def tier_choice(args: argparse.Namespace, pipeline: BatchedGenerationPipeline) -> TierChoice:
    """`--tier` for this run (checked before anything is sent; `auto` planned over the run's rounds): cheap and
    the same for the same flags, so the identity draft and the model's connection each ask for it."""
    config = pipeline.config
    entry = resolve_org(config.model_name, pipeline.provider)

    @functools.cache
    def later() -> list[LaterRounds]:  # one pass over the inputs for the candidate's rounds and the user's turns
        return later_bounds(pipeline, per_round=True)

    def loads() -> list[RoundLoad]:
        first = RoundLoad(
            label="round 1" if pipeline.inputs.has_conversations else "answers",
            provider=entry.org,
            model=config.model_name,
            requests=pipeline.request_count,
            input_tokens=_first_round_tokens(pipeline),
            output_tokens=pipeline.request_count * config.params.max_tokens,
            **round_limits(args),
        )
        return [first] + [
            RoundLoad(
                label=f"round {bound.round} ({bound.role})",
                provider=entry.org,
                model=bound.model,
                requests=bound.requests,
                input_tokens=bound.input_tokens,
                output_tokens=bound.output_tokens,
                **round_limits(args),
            )
            for bound in later()
            if bound.role == "candidate"
        ]

    def user() -> UserRounds | None:
        # The simulated user's turns run between the rounds: their hours count against the deadline, at the tier
        # given it, else the one the plan picks for them (one user client sends them all).
        given = config.simulated_user
        if given is None:
            return None
        turns = [bound for bound in later() if bound.role != "candidate"]
        rounds = [bound.round for bound in turns]
        assert None not in rounds  # (per_round: every bound has its round)
        limits: dict[str, Any] = given.limit_keys()  # its own pace, as `simulated_user_model` sends at
        return UserRounds(
            rounds=[number for number in rounds if number is not None],
            loads=[
                RoundLoad(
                    label=f"round {bound.round} (user turns)",
                    provider=pipeline.user_org,
                    model=bound.model,
                    requests=bound.requests,
                    input_tokens=bound.input_tokens,
                    output_tokens=bound.output_tokens,
                    **limits,
                )
                for bound in turns
            ],
            tier=given.tier,
            given=given.tier is not None,
        )

    rounds = pipeline.inputs.has_conversations and pipeline.inputs.max_rounds > 1
    return choose_tier(
        args,
        entry,
        config.model_name,
        realtime_flags(args),
        loads,
        lambda times: learned_here(times, Path(config.output_base_dir)),
        per_round=rounds,
        user=user,
    )


def later_bounds(pipeline: BatchedGenerationPipeline, *, per_round: bool = False) -> list[LaterRounds]:
    """The upper bound of the requests of rounds 2 and later (`speceval.conversations.estimate`)."""
    config = pipeline.config
    statements = {s.id: s for s in pipeline.spec.statements}
    return later_rounds(
        pipeline.inputs,
        config.model_name,
        config.params.max_tokens,
        config.simulated_user,
        statements,
        per_round=per_round,
        system_prompt=config.params.system_prompt,
    )

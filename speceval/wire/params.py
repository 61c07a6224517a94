"""`GenerationParams`: the sampling settings sent with every request of a run, whatever carries it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speceval.defaults import DEFAULT_MAX_TOKENS
from speceval.wire.prompt import Prompt, PromptLike, as_prompt


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters sent with every request of a run."""

    temperature: float | None = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    system_prompt: str | None = None
    response_schema: dict[str, Any] | None = field(default=None, hash=False)
    """A JSON schema every answer must conform to (structured output), for runs whose every request asks for the
    same shape (the inputs generator's proposals and ratings); a `Prompt` carrying its own schema keeps it."""
    schema_name: str = "answer"


def with_run_schema(prompt: PromptLike, params: GenerationParams) -> PromptLike:
    """`prompt` asking for the run's answer schema (`params.response_schema`) when it does not ask for its own."""
    if params.response_schema is None or (isinstance(prompt, Prompt) and prompt.response_schema is not None):
        return prompt
    base = as_prompt(prompt)
    return Prompt(base.messages, params.response_schema, params.schema_name, base.cache_prefix)

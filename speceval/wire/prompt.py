"""What one request asks of a model, beyond a single user message.

Most requests are one user prompt, and the engines pass them to the wire builders as a plain `str` (the compact,
fast path). A request that carries a conversation so far (earlier user turns and the model's own answers), asks
for a JSON answer conforming to a schema (structured output), or starts with a part it shares with other requests
(a cache-shaped judge prompt) is a `Prompt` instead. Each provider module of `speceval.wire` translates a `Prompt`
into its provider's wire format in one place:

- messages: OpenAI and Anthropic `user` / `assistant` roles; Gemini `user` / `model` roles in `contents`;
- response_schema: OpenAI `response_format: {type: json_schema, json_schema: {name, schema, strict}}`,
  Anthropic `output_config: {format: {type: json_schema, schema}}`, Gemini
  `generationConfig.responseMimeType: application/json` + `responseJsonSchema`;
- cache_prefix: Anthropic `cache_control` on the shared part, OpenAI `prompt_cache_key` named after it; Gemini
  caches common prefixes implicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, InstanceOf

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One turn of a conversation, in provider-neutral roles (`assistant` is Gemini's `model`)."""

    role: Role
    content: str


@dataclass(frozen=True)
class Prompt:
    """A request's content: the conversation so far (ending with a user message) and an optional answer schema.

    Attributes:
        messages: the conversation so far, ending with a user message.
        response_schema: a JSON schema the answer must conform to (structured output), or None.
        schema_name: the schema's name where a provider asks for one (OpenAI).
        cache_prefix: how many leading characters of the first user message this request shares with others (a
            cache-shaped judge prompt's instructions and statement), marked for the provider's prompt cache; 0
            marks nothing. Whoever renders the prompt knows where its shared part ends and says so here, so the
            layers below never look inside a prompt to guess.
    """

    messages: tuple[Message, ...]
    response_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    cache_prefix: int = 0

    def __post_init__(self) -> None:
        if not self.messages or self.messages[-1].role != "user":
            raise ValueError("a prompt's messages must end with a user message")
        if not 0 <= self.cache_prefix <= len(self.first_user_text):
            raise ValueError(f"cache_prefix {self.cache_prefix} is outside the first user message")

    @classmethod
    def user(
        cls,
        text: str,
        response_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        cache_prefix: int = 0,
    ) -> Prompt:
        """A single user message, optionally with an answer schema and a shared, cacheable prefix."""
        return cls((Message("user", text),), response_schema, schema_name, cache_prefix)

    @property
    def last_user_text(self) -> str:
        """The text of the final user message (what a single-prompt request would have sent)."""
        return self.messages[-1].content

    @property
    def first_user_text(self) -> str:
        """The text of the first user message (where a shared, cacheable prefix lives)."""
        return next(m.content for m in self.messages if m.role == "user")

    @property
    def single_text(self) -> str | None:
        """The user message's text when the prompt is just that (one user message, no schema), else None: such a
        prompt is hashed and recorded as its text, as a plain `str` prompt is."""
        if len(self.messages) == 1 and self.response_schema is None:
            return self.messages[0].content
        return None


PromptLike = str | Prompt


def as_prompt(prompt: PromptLike) -> Prompt:
    """A `Prompt` for either form: a plain string is one user message with no schema."""
    return prompt if isinstance(prompt, Prompt) else Prompt.user(prompt)


def shared_prefix(prompt: PromptLike) -> str | None:
    """The part of the prompt marked as shared with other requests (`Prompt.cache_prefix`), or None."""
    if isinstance(prompt, str) or prompt.cache_prefix == 0:
        return None
    return prompt.first_user_text[: prompt.cache_prefix]


def is_structured(prompt: PromptLike) -> bool:
    """Whether the request asks for an answer conforming to a JSON schema."""
    return isinstance(prompt, Prompt) and prompt.response_schema is not None


class PromptItem(BaseModel):
    """One user prompt to send to a candidate model."""

    model_config = ConfigDict(frozen=True)

    statement_id: str
    """The statement the prompt tests."""
    original_index: int = Field(ge=0)
    """Its position in the statement's `inputs` list (results are ordered and merged by it)."""
    input_text: str
    """The prompt itself (for a conversation's round: that round's user turn)."""
    prompt: InstanceOf[Prompt] | None = None
    """What to send when it is more than `input_text` alone: a conversation's transcript so far (realtime rounds).
    None for a single prompt, which is sent as `input_text`."""

    @property
    def request(self) -> str | Prompt:
        """What an engine sends for this item."""
        return self.input_text if self.prompt is None else self.prompt

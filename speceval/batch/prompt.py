"""What one request asks of a model, beyond a single user message.

Most requests are one user prompt, and the engine passes them to `BatchedModel.format_request` as a plain `str`
(the compact, fast path). A request that carries a conversation so far (earlier user turns and the model's own
answers) or asks for a JSON answer conforming to a schema (structured output) is a `Prompt` instead. Each adapter
translates a `Prompt` into its provider's wire format in one place:

- messages: OpenAI and Anthropic `user` / `assistant` roles; Gemini `user` / `model` roles in `contents`;
- response_schema: OpenAI `response_format: {type: json_schema, json_schema: {name, schema, strict}}`,
  Anthropic `output_config: {format: {type: json_schema, schema}}`, Gemini
  `generationConfig.responseMimeType: application/json` + `responseJsonSchema`.
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
    """A request's content: the conversation so far (ending with a user message) and an optional answer schema."""

    messages: tuple[Message, ...]
    response_schema: dict[str, Any] | None = None
    schema_name: str = "answer"

    def __post_init__(self) -> None:
        if not self.messages or self.messages[-1].role != "user":
            raise ValueError("a prompt's messages must end with a user message")

    @classmethod
    def user(cls, text: str, response_schema: dict[str, Any] | None = None, schema_name: str = "answer") -> Prompt:
        """A single user message, optionally with an answer schema."""
        return cls((Message("user", text),), response_schema, schema_name)

    @property
    def last_user_text(self) -> str:
        """The text of the final user message (what a single-prompt request would have sent)."""
        return self.messages[-1].content


PromptLike = str | Prompt


def as_prompt(prompt: PromptLike) -> Prompt:
    """A `Prompt` for either form: a plain string is one user message with no schema."""
    return prompt if isinstance(prompt, Prompt) else Prompt.user(prompt)


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

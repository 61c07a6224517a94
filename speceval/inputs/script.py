"""A conversation input: a fixed history and/or scripted user turns, and the transcript of each round.

An item of an inputs file's `inputs` list is a string (one user message, as always) or an object:

    {"turns": ["first", "second", ...], "id": "q1_pressure"}
    {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}, ...,
                  {"role": "user", "content": "..."}], "turns": ["...", ...], "id": "..."}

`messages` is a history sent as it is (prefilled assistant turns allowed) and ends with a user message; `turns`
are user messages sent one per round, each after the model answered the previous request. Round 1 sends the history
(or the first turn); round k sends everything before plus the model's own answers in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from speceval.errors import InputError
from speceval.json_keys import OmitsUnsetFields
from speceval.spec import json_type_name
from speceval.wire.prompt import Message, Prompt

_KEYS = ("id", "messages", "turns")
_ROLES = ("user", "assistant")


class ChatMessage(OmitsUnsetFields):
    """One message of a conversation as results files hold it (roles are provider-neutral)."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    """`user`, or `assistant` (the candidate model; Gemini calls it `model` on the wire)."""
    content: str
    """The message's text, exactly as sent or received."""
    author: Literal["simulated_user"] | None = None
    """`simulated_user` for a user turn a simulated user's model wrote (None: the inputs file's own text)."""

    # Scripted conversations' records stay exactly as they were; only simulated turns say who wrote them.
    omitted_when_none: ClassVar[tuple[str, ...]] = ("author",)


class Conversation(BaseModel):
    """A scripted conversation: a history sent as given, then user turns sent one per round."""

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    """The author's name for it (e.g. `question_1_pressure_0`), carried into results as `conversation_id`."""
    messages: tuple[ChatMessage, ...] = ()
    """A fixed history ending in a user message (may be empty when `turns` is not)."""
    turns: tuple[str, ...] = ()
    """User turns sent after the model answered the request before."""

    @property
    def rounds(self) -> int:
        """How many requests the conversation makes when no turn fails: one per user message sent."""
        return (1 if self.messages else 0) + len(self.turns)

    @property
    def first_user_text(self) -> str:
        """The first user message (a results record's `input_text`, for consumers of single prompts)."""
        return self.messages[0].content if self.messages else self.turns[0]  # a history starts with the user

    def transcript(self, answers: Sequence[str], simulated: Sequence[str] = ()) -> list[ChatMessage]:
        """Every message after the model gave `answers` (one per round, in order).

        `simulated` are user turns a simulated user wrote, sent after the scripted ones (rounds `self.rounds + 1`
        on). With fewer answers than user turns, this ends with the next user message: the request of round
        `len(answers) + 1`. With one answer per user turn, it is the whole conversation, ending with the last answer.
        """
        if len(answers) > self.rounds + len(simulated):
            raise ValueError(f"{len(answers)} answers for a conversation of {self.rounds + len(simulated)} round(s)")
        messages = list(self.messages)
        turns = iter(
            [
                *(ChatMessage(role="user", content=turn) for turn in self.turns),
                *(ChatMessage(role="user", content=turn, author="simulated_user") for turn in simulated),
            ]
        )
        if not messages:
            messages.append(next(turns))
        for answer in answers:
            # Verbatim (never trimmed or re-encoded): the next turn is a reply to what the model actually said.
            messages.append(ChatMessage(role="assistant", content=answer))
            turn = next(turns, None)
            if turn is not None:
                messages.append(turn)
        return messages

    def prompt(self, answers: Sequence[str], simulated: Sequence[str] = ()) -> Prompt:
        """The request of round `len(answers) + 1`: the transcript so far, ending with that round's user turn."""
        if len(answers) >= self.rounds + len(simulated):
            raise ValueError(f"round {len(answers) + 1} of a conversation of {self.rounds} round(s)")
        return Prompt(tuple(Message(m.role, m.content) for m in self.transcript(answers, simulated)))


def parse_item(path: Path, index: int, item: dict[str, Any], seen_ids: dict[str, int]) -> Conversation:
    """Validate one object of an inputs file's `inputs` list; an InputError names file, item and field.

    `seen_ids` (id → item index) is shared by the items of one file, so an id given twice is refused.
    """
    where = f"inputs[{index}]"
    unknown = [key for key in item if key not in _KEYS]
    if unknown:
        raise InputError(
            path,
            f"unknown key {unknown[0]!r} in a conversation (allowed: {', '.join(_KEYS)})",
            field=f"{where}.{unknown[0]}",
        )
    if "messages" not in item and "turns" not in item:
        raise InputError(
            path,
            "a conversation needs 'turns' (scripted user turns) or 'messages' (a history "
            "ending in a user message), or the input must be a string",
            field=where,
        )
    conversation_id = item.get("id")
    if conversation_id is not None:
        if not isinstance(conversation_id, str) or not conversation_id:
            raise InputError(
                path, f"expected a non-empty string, got {json_type_name(conversation_id)}", field=f"{where}.id"
            )
        if conversation_id in seen_ids:
            raise InputError(
                path,
                f"the id {conversation_id!r} is already used by inputs[{seen_ids[conversation_id]}]",
                field=f"{where}.id",
            )
        seen_ids[conversation_id] = index
    messages = _messages(path, where, item["messages"]) if "messages" in item else ()
    turns = _turns(path, where, item["turns"], required=not messages) if "turns" in item else ()
    return Conversation(id=conversation_id, messages=messages, turns=turns)


def _messages(path: Path, where: str, value: Any) -> tuple[ChatMessage, ...]:
    if not isinstance(value, list) or not value:
        got = "an empty list" if isinstance(value, list) else json_type_name(value)
        raise InputError(
            path, f"expected a non-empty list of {{role, content}} objects, got {got}", field=f"{where}.messages"
        )
    messages = []
    for number, message in enumerate(value):
        field = f"{where}.messages[{number}]"
        if not isinstance(message, dict):
            raise InputError(
                path, f"expected an object with 'role' and 'content', got {json_type_name(message)}", field=field
            )
        extra = [key for key in message if key not in ("role", "content")]
        if extra:
            raise InputError(
                path, f"unknown key {extra[0]!r} (a message has 'role' and 'content')", field=f"{field}.{extra[0]}"
            )
        role = message.get("role")
        if role not in _ROLES:
            shown = repr(role) if isinstance(role, str) else json_type_name(role)
            raise InputError(path, f"expected 'user' or 'assistant', got {shown}", field=f"{field}.role")
        # Every provider accepts strictly alternating turns starting with the user; Anthropic and Gemini refuse
        # (or silently merge) other orders, so a history that would behave differently per provider is refused.
        expected = "user" if number % 2 == 0 else "assistant"
        if role != expected:
            raise InputError(
                path,
                f"expected a {expected!r} message here: a history starts with the user and "
                "alternates user and assistant",
                field=f"{field}.role",
            )
        content = _text(path, f"{field}.content", message.get("content", None), "content" in message)
        messages.append(ChatMessage(role=role, content=content))
    if messages[-1].role != "user":
        raise InputError(
            path,
            "a history must end with a user message (the model answers it)",
            field=f"{where}.messages[{len(messages) - 1}].role",
        )
    return tuple(messages)


def _turns(path: Path, where: str, value: Any, *, required: bool) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InputError(path, f"expected a list of strings, got {json_type_name(value)}", field=f"{where}.turns")
    if required and not value:
        raise InputError(path, "expected at least one user turn (or a 'messages' history)", field=f"{where}.turns")
    return tuple(_text(path, f"{where}.turns[{number}]", turn, True) for number, turn in enumerate(value))


def _text(path: Path, field: str, value: Any, present: bool) -> str:
    if not present:
        raise InputError(path, "required field is missing (expected a string)", field=field)
    if not isinstance(value, str):
        raise InputError(path, f"expected a string, got {json_type_name(value)}", field=field)
    if not value.strip():
        # Providers refuse empty messages (Anthropic, Gemini): say so now, not after paying for earlier rounds.
        raise InputError(path, "an empty message; every turn must have text", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            path, "contains an unpaired surrogate escape (\\ud800-\\udfff), not text", field=field
        ) from None
    return value

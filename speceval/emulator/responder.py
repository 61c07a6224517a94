"""Deterministic synthetic answers: the same (model, prompt) always gets the same text.

A `Responder` is any callable `(model, prompt) -> answer text`. The default one tags every answer as synthetic,
so an offline run can never be mistaken for real model output. Judge-style responders can be added beside it.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

_SUBJECTS = ("The request", "This question", "The prompt", "Your message", "The input", "This case")
_VERBS = ("calls for", "suggests", "deserves", "points to", "asks for", "invites")
_OBJECTS = (
    "a careful and honest answer",
    "a short, direct reply",
    "a balanced explanation",
    "a clear summary of the facts",
    "a helpful next step",
    "a polite clarification",
    "an answer that states its limits",
    "a concise overview",
)


class Responder(Protocol):
    """Produces the answer text of one request."""

    def __call__(self, model: str, prompt: str) -> str:
        """Answer `prompt` as `model` would (synthetically)."""
        ...


def respond(model: str, prompt: str) -> str:
    """The default synthetic answer: a tagged sentence derived from a sha256 of the prompt."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    sentence = (
        f"{_SUBJECTS[digest[0] % len(_SUBJECTS)]} {_VERBS[digest[1] % len(_VERBS)]} "
        f"{_OBJECTS[digest[2] % len(_OBJECTS)]} (ref {digest[3:7].hex()})."
    )
    return f"[synthetic answer from the speceval emulator; model={model}] {sentence}"


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate (about four characters per token, at least one)."""
    return max(1, (len(text) + 3) // 4)

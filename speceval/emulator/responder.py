"""Deterministic synthetic answers: the same (model, prompt) always gets the same text.

A `Responder` is any callable `(model, prompt) -> answer text`. The default one tags every answer as synthetic,
so an offline run can never be mistaken for real model output. Prompts rendered from speceval's judge templates
(their first line starts with `speceval judge prompt: <template id>`) get a synthetic verdict in the strict
format instead, so `--offline` runs generation → compliance → ranking end to end. The verdict varies with a hash
of the judge model, the kind of template (its id without the version) and the texts inside the prompt's fenced
blocks (statement, examples, input, responses), never with the fence nonce or the template's wording: the same
judgement asked with another template version or in another run gets the same verdict, as a consistent judge's
would. Its wrapping varies too (a ```json fence, JSON after reasoning, prose with braces before the JSON);
about one answer in twenty has no verdict at all, so the "unparsed" path is exercised too.

A simulated user's prompt (first line `speceval prompt: simulated_user_*`) gets a user's next message: a follow-up
question about the assistant's last answer, or, about one time in three once the assistant has answered and when
the prompt defines a stop word, a goodbye holding that word, so offline conversations end early now and then.
"""

from __future__ import annotations

import hashlib
import json
import re
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


JUDGE_MARKER = "speceval judge prompt: "
"""The start of the first line of every speceval judge prompt (see `speceval.judging.prompts`)."""
_NO_VERDICT_PERCENT = 5
_RESPONSE_BLOCK = re.compile(r"^<<<BEGIN (response_[ab]) (\w+)>>>\n(.*?)\n<<<END \1 \2>>>$", re.S | re.M)
_TRANSCRIPT_BLOCK = re.compile(
    r"^<<<BEGIN transcript_([ab])_\S+ (\w+)>>>\n(.*?)\n<<<END transcript_\1_\S+ \2>>>$", re.S | re.M
)
_FENCED_BLOCK = re.compile(r"^<<<BEGIN (\S+) (\w+)>>>\n(.*?)\n<<<END \1 \2>>>$", re.S | re.M)


def respond(model: str, prompt: str) -> str:
    """The default synthetic answer: a verdict for judge prompts, else a tagged sentence from the prompt's sha256."""
    digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).digest()
    if prompt.startswith(JUDGE_MARKER):
        template_id = prompt.split("\n", 1)[0][len(JUDGE_MARKER) :].strip()
        return judge_verdict(template_id, prompt, judgement_digest(model, template_id, prompt))
    if prompt.startswith(SIMULATED_USER_MARKER):
        return simulated_user_turn(model, prompt, digest)
    sentence = (
        f"{_SUBJECTS[digest[0] % len(_SUBJECTS)]} {_VERBS[digest[1] % len(_VERBS)]} "
        f"{_OBJECTS[digest[2] % len(_OBJECTS)]} (ref {digest[3:7].hex()})."
    )
    return f"[synthetic answer from the speceval emulator; model={model}] {sentence}{_asked_score(prompt, digest)}"


_ASKED_SCORE = re.compile(r'End every answer with "([^"\n]+): N" where N \((\d+)-(\d+)\)')


def _asked_score(prompt: str, digest: bytes) -> str:
    """A prompt that asks for a self-reported score in a fixed form (`End every answer with "cooperation: N" where N
    (0-10) ...`, as Scenario Lab's actors are asked) gets one, as an instruction-following model would give it, so an
    offline run shows a custom metric extracting values, not only missing ones."""
    asked = _ASKED_SCORE.search(prompt)
    if asked is None:
        return ""
    low, high = int(asked.group(2)), int(asked.group(3))
    return f" {asked.group(1)}: {low + digest[7] % (high - low + 1)}" if high >= low else ""


SIMULATED_USER_MARKER = "speceval prompt: simulated_user_"
"""The start of a simulated user's prompt (see `speceval.conversations.simulated_user`)."""
_STOP_WORD = re.compile(r"^When the conversation is over, answer with this stop word alone: (.+)$", re.M)
_ASSISTANT_BLOCK = re.compile(r"^<<<BEGIN assistant_\d+ \w+>>>$", re.M)
_FOLLOW_UPS = (
    "Can you be more specific about that?",
    "Why should I believe that? Give me one concrete reason.",
    "That does not answer my question. Try again, briefly.",
    "What would you do differently if the stakes were higher?",
    "I disagree. Convince me, or admit you are unsure.",
    "Fine. What is the next step, and who is responsible for it?",
)


def simulated_user_turn(model: str, prompt: str, digest: bytes) -> str:
    """A synthetic user's next message, deterministic in the prompt's hash (see the module docstring)."""
    stop = _STOP_WORD.search(prompt)
    if stop is not None and _ASSISTANT_BLOCK.search(prompt) and digest[0] % 3 == 0:
        return f"[synthetic user turn; model={model}] Thank you, that is all I needed. {stop.group(1)}"
    return f"[synthetic user turn; model={model}] {_FOLLOW_UPS[digest[1] % len(_FOLLOW_UPS)]} (ref {digest[3:7].hex()})"


def judgement_digest(model: str, template_id: str, prompt: str) -> bytes:
    """A hash of what a judge prompt asks (see the module docstring); the judge model seeds it too, so two
    offline judges disagree now and then, as real ones do."""
    kind = re.sub(r"_v\d+$", "", template_id)
    blocks = "\x00".join(f"{name}\x00{text}" for name, _, text in _FENCED_BLOCK.findall(prompt))
    return hashlib.sha256(f"{model}\n{kind}\n{blocks}".encode("utf-8", "surrogatepass")).digest()


def judge_verdict(template_id: str, prompt: str, digest: bytes) -> str:
    """A synthetic judge answer to a prompt of template `template_id`, deterministic in the prompt's hash."""
    note = "synthetic verdict from the speceval emulator"
    verdict: dict[str, object]
    if template_id.startswith("compliance_likert"):
        verdict = {"rating": 1 + digest[1] % 5, "explanation": note}
    elif template_id.startswith("ranking"):
        verdict = {"winner": _synthetic_winner(prompt, digest), "explanation": note}
    else:
        verdict = {"compliant": digest[1] % 4 != 0, "confidence": 0.5 + digest[2] % 50 / 100, "explanation": note}
    payload = json.dumps(verdict)
    style = digest[0] % 100
    if style < _NO_VERDICT_PERCENT:
        return "[synthetic] I cannot decide on this one without more context."
    if style < 45:
        return f"[synthetic] Reasoning about the statement and the response.\n\n```json\n{payload}\n```"
    if style < 75:
        return f"[synthetic] Weighing the response against the statement, my verdict: {payload}"
    return f"[synthetic] Placeholders such as {{name}} or {{}} are not a verdict. Final answer:\n{payload}"


def _synthetic_winner(prompt: str, digest: bytes) -> str:
    """The same pair of responses (or of transcripts) gets the same winner in either order, except for a little
    'position bias'."""
    blocks = {name: text for name, _, text in _RESPONSE_BLOCK.findall(prompt)}
    a, b = blocks.get("response_a", ""), blocks.get("response_b", "")
    if not blocks:  # two transcripts: each side is every message of its blocks, in order
        sides: dict[str, list[str]] = {"a": [], "b": []}
        for name, _, text in _TRANSCRIPT_BLOCK.findall(prompt):
            sides[name].append(text)
        a, b = "\x00".join(sides["a"]), "\x00".join(sides["b"])
    if a == b or digest[1] % 10 == 0:
        return "tie"
    if digest[2] % 8 == 0:
        return "A"
    return (
        "A"
        if hashlib.sha256(a.encode("utf-8", "surrogatepass")).digest()
        > hashlib.sha256(b.encode("utf-8", "surrogatepass")).digest()
        else "B"
    )


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate (about four characters per token, at least one)."""
    return max(1, (len(text) + 3) // 4)

"""Judge prompts: versioned template files rendered with one statement and the untrusted text to judge.

Templates live in `speceval/judging/templates/<template_id>.txt`; a template id ends in its version (`_v1`) and a
template file never changes once released (a new wording is a new id), so the `prompt_version` recorded in every
result names the exact wording the judge saw. Every released template stays loadable, so a run judged with an
old one can be resumed with it.

Untrusted text (the user input, the candidate responses, and the spec's own examples) is placed between
`<<<BEGIN name NONCE>>>` and `<<<END name NONCE>>>` lines, and the template tells the judge that nothing inside
such a block is an instruction. No text placed in a prompt ever contains that prompt's nonce, so a response
cannot write a closing line of its own. Placeholders use `string.Template`, which substitutes once and never
re-reads substituted text, so a `$name` or a brace in a response is inert.

Two generations of templates:

- v1 derives the nonce from a hash of everything placed in the prompt, so no two prompts share more than their
  first few lines.
- v2 is cache-shaped: everything a statement's requests share (instructions, answer format, statement,
  examples) comes first and is byte-identical across them; the judged conversation and a short answer reminder
  follow. Its nonce is drawn per (judge run, statement) from the run's random salt (`new_salt`, recorded in the
  run's manifest so a resume renders the same prompts), and re-drawn for one request only when that request's
  untrusted text happens to contain it. `split_shared_prefix` says where the shared part ends; the judge
  sources hand each prompt to the engines with that length (`speceval.wire.prompt.Prompt.cache_prefix`), and
  the wire layer marks it for the provider's prompt cache (Anthropic `cache_control`, OpenAI
  `prompt_cache_key`); Gemini caches common prefixes implicitly.
"""

from __future__ import annotations

import hashlib
import secrets
from enum import StrEnum
from functools import cache
from importlib import resources
from string import Template

from speceval.spec import Example, Statement

NONCE_CHARS = 16
MARKER_PREFIX = "speceval judge prompt: "
"""The first line of every judge prompt starts with this (the emulator recognises judge prompts by it)."""
SHARED_PREFIX_END = "<<<BEGIN user_input "
"""In a cache-shaped prompt, the first occurrence of this text ends the part a statement's requests share.

Every v2 template's per-request part starts with the user input's BEGIN line. Text before it is the same for
all requests of a statement, so its first occurrence is at the same place in all of them (even if a statement
itself contained this text, the split would only move earlier, still inside the shared part).
"""
TRANSCRIPT_PREFIX_ENDS = ("<<<BEGIN message_1_", "<<<BEGIN transcript_a_message_1_")
"""The same for the transcript templates: their per-request part starts with the first message's BEGIN line
(`speceval.judging.transcripts` numbers messages from 1)."""


class TemplateId(StrEnum):
    """The released judge templates. The value is the file stem and the `prompt_version` of results."""

    COMPLIANCE_BINARY_V1 = "compliance_binary_v1"
    COMPLIANCE_LIKERT_V1 = "compliance_likert_v1"
    RANKING_V1 = "ranking_v1"
    COMPLIANCE_BINARY_V2 = "compliance_binary_v2"
    COMPLIANCE_LIKERT_V2 = "compliance_likert_v2"
    RANKING_V2 = "ranking_v2"
    COMPLIANCE_CATEGORIES_V2 = "compliance_categories_v2"
    """Categorical judging (one of the experiment's named categories); cache-shaped from its first release."""
    COMPLIANCE_BINARY_TRANSCRIPT_V2 = "compliance_binary_transcript_v2"
    """A conversation's whole transcript (or its first k assistant turns), one fenced block per message."""
    COMPLIANCE_LIKERT_TRANSCRIPT_V2 = "compliance_likert_transcript_v2"
    COMPLIANCE_CATEGORIES_TRANSCRIPT_V2 = "compliance_categories_transcript_v2"
    RANKING_TRANSCRIPT_V2 = "ranking_transcript_v2"
    """Two candidates' transcripts of the same script, each message in its own fenced block."""

    @property
    def cache_shaped(self) -> bool:
        """Whether the template puts everything a statement's requests share first (v2 and later)."""
        return not self.value.endswith("_v1")

    @property
    def is_transcript(self) -> bool:
        """Whether the template judges a conversation's transcript (one fenced block per message)."""
        return self.kind.endswith("_transcript")

    @property
    def kind(self) -> str:
        """`compliance_binary`, `compliance_likert` or `ranking` (the template id without its version)."""
        return self.value.rsplit("_", 1)[0]


CURRENT = {
    "compliance_binary": TemplateId.COMPLIANCE_BINARY_V2,
    "compliance_likert": TemplateId.COMPLIANCE_LIKERT_V2,
    "ranking": TemplateId.RANKING_V2,
    "compliance_categories": TemplateId.COMPLIANCE_CATEGORIES_V2,
    "compliance_binary_transcript": TemplateId.COMPLIANCE_BINARY_TRANSCRIPT_V2,
    "compliance_likert_transcript": TemplateId.COMPLIANCE_LIKERT_TRANSCRIPT_V2,
    "compliance_categories_transcript": TemplateId.COMPLIANCE_CATEGORIES_TRANSCRIPT_V2,
    "ranking_transcript": TemplateId.RANKING_TRANSCRIPT_V2,
}
"""The template each kind of judgement uses for new runs."""
_CACHE_SHAPED_MARKERS = tuple(f"{MARKER_PREFIX}{t.value}\n" for t in TemplateId if t.cache_shaped)


@cache
def load_template(template_id: TemplateId) -> Template:
    """The template file of `template_id` (read once per process)."""
    text = resources.files("speceval.judging").joinpath("templates", f"{template_id.value}.txt").read_text("utf-8")
    return Template(text)


def new_salt() -> str:
    """A fresh random salt for one judge run (its statements' nonces are drawn from it)."""
    return secrets.token_hex(16)


def _first_absent(seed: str, texts: list[str]) -> str:
    """The first of `sha256(seed:0)`, `sha256(seed:1)`, ... (cut to NONCE_CHARS) that none of `texts` contains."""
    counter = 0
    while True:
        nonce = hashlib.sha256(f"{seed}:{counter}".encode("utf-8", "surrogatepass")).hexdigest()[:NONCE_CHARS]
        if not any(nonce in text for text in texts):
            return nonce
        counter += 1


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def make_nonce(parts: list[str]) -> str:
    """v1: a fence code that none of `parts` contains, derived from a hash of all of them."""
    return _first_absent(_digest(parts), parts)


def statement_nonce(salt: str, statement_id: str, shared: list[str]) -> str:
    """v2: the fence code of every request of one statement in one judge run (none of `shared` contains it)."""
    return _first_absent(_digest(["statement", salt, statement_id]), shared)


def request_nonce(salt: str, statement_id: str, shared: list[str], untrusted: list[str]) -> str:
    """v2: the statement's nonce, unless this request's untrusted text contains it; then one drawn for it alone.

    The re-drawn nonce is still a pure function of the salt and the texts, so a resume renders the same prompt.
    """
    nonce = statement_nonce(salt, statement_id, shared)
    if not any(nonce in text for text in untrusted):
        return nonce
    return _first_absent(_digest(["request", salt, statement_id, *untrusted]), shared + untrusted)


def fence(name: str, text: str, nonce: str) -> str:
    """`text` verbatim between the BEGIN and END lines of block `name`."""
    return f"<<<BEGIN {name} {nonce}>>>\n{text}\n<<<END {name} {nonce}>>>"


def _example_texts(examples: list[Example]) -> list[str]:
    texts: list[str] = []
    for example in examples:
        texts.extend(
            value
            for value in (example.description, example.user_query, example.good_response, example.bad_response)
            if value
        )
    return texts


def render_examples(examples: list[Example], nonce: str) -> str:
    """The calibration-examples section (empty when the statement has none)."""
    if not examples:
        return ""
    lines = [
        "",
        "## Calibration examples from the specification",
        "",
        "Use these to calibrate your judgement; the statement itself takes precedence. An example may show only a",
        "compliant response, only a violating one, or both.",
    ]
    for number, example in enumerate(examples, start=1):
        lines.append("")
        title = f"### Example {number}"
        if example.description:
            title += f": {' '.join(example.description.split())}"
        lines.append(title)
        for label, name, value in (
            ("User input:", "user_input", example.user_query),
            ("A response that complies:", "good_response", example.good_response),
            ("A response that violates the statement:", "bad_response", example.bad_response),
        ):
            if value:
                lines.extend(["", label, fence(f"example_{number}_{name}", value, nonce)])
    lines.append("")
    return "\n".join(lines)


def _statement_fields(statement: Statement) -> dict[str, str]:
    return {
        "statement_id": statement.id,
        "statement_type": statement.type.value,
        "authority_level": statement.authority_level.value,
        "section": statement.section or "N/A",
        "subsection": statement.subsection or "N/A",
    }


Blocks = list[tuple[str, str]]
"""(block name, untrusted text) in order: several fenced blocks filling one placeholder (a transcript)."""


def render(
    template_id: TemplateId,
    statement: Statement,
    untrusted: dict[str, str],
    *,
    salt: str = "",
    trusted: dict[str, str] | None = None,
    sequences: dict[str, Blocks] | None = None,
) -> str:
    """The prompt of `template_id` for `statement` and the untrusted texts named by the template's placeholders.

    `salt` is the judge run's (see `new_salt`); v1 templates ignore it. `trusted` fills placeholders with the
    evaluator's own text (the categories of a categorical judge), placed outside the fences. `sequences` fills a
    placeholder with several fenced blocks, one per (name, text), separated by blank lines (a transcript's
    messages); their texts count as untrusted for the nonce like the others.
    """
    examples = list(statement.metadata.examples)
    shared = [template_id.value, statement.text, *_example_texts(examples), *_statement_fields(statement).values()]
    texts = [*untrusted.values(), *(text for blocks in (sequences or {}).values() for _, text in blocks)]
    if template_id.cache_shaped:
        nonce = request_nonce(salt, statement.id, shared, texts)
    else:
        nonce = make_nonce([statement.text, *texts, *shared[2:]])
    fenced = {
        placeholder: "\n\n".join(fence(name, text, nonce) for name, text in blocks)
        for placeholder, blocks in (sequences or {}).items()
    }
    return load_template(template_id).substitute(
        template_id=template_id.value,
        nonce=nonce,
        statement_text=statement.text,
        examples=render_examples(examples, nonce),
        **_statement_fields(statement),
        **(trusted or {}),
        **untrusted,
        **fenced,
    )


def _template(default: TemplateId, template: TemplateId | None) -> TemplateId:
    chosen = template or default
    family = default.kind.split("_")[0]
    if chosen.kind.split("_")[0] != family:
        raise ValueError(f"template {chosen.value} is not a {family} template")
    if chosen.is_transcript != default.is_transcript:
        raise ValueError(f"template {chosen.value} is {'' if chosen.is_transcript else 'not '}a transcript template")
    return chosen


def render_compliance(
    statement: Statement,
    user_input: str,
    response: str,
    *,
    likert: bool = False,
    template: TemplateId | None = None,
    salt: str = "",
) -> str:
    """The prompt asking whether `response` (to `user_input`) complies with `statement`.

    The current template of the mode (`likert` or binary), unless `template` names a released compliance
    template, which then decides the mode.
    """
    chosen = _template(CURRENT["compliance_likert" if likert else "compliance_binary"], template)
    return render(chosen, statement, {"user_input": user_input, "response": response}, salt=salt)


def render_category(
    statement: Statement, user_input: str, response: str, categories: dict[str, str], *, salt: str = ""
) -> str:
    """The prompt asking which of `categories` (name → what it means) fits `response` (to `user_input`)."""
    return render(
        CURRENT["compliance_categories"],
        statement,
        {"user_input": user_input, "response": response},
        salt=salt,
        trusted={"categories": category_list(categories)},
    )


def category_list(categories: dict[str, str]) -> str:
    """The categories as a categorical template lists them: one `- name: meaning` line each."""
    return "\n".join(f"- {name}: {' '.join(meaning.split())}" for name, meaning in categories.items())


def render_ranking(
    statement: Statement,
    user_input: str,
    response_a: str,
    response_b: str,
    *,
    template: TemplateId | None = None,
    salt: str = "",
) -> str:
    """The prompt asking which of two responses follows `statement` better (Response A is shown first)."""
    chosen = _template(CURRENT["ranking"], template)
    return render(
        chosen, statement, {"user_input": user_input, "response_a": response_a, "response_b": response_b}, salt=salt
    )


def split_shared_prefix(prompt: str) -> tuple[str, str] | None:
    """A cache-shaped judge prompt cut into (the part its statement's requests share, the rest); else None.

    Provider adapters mark the first part for the provider's prompt cache. None for every other prompt
    (generation prompts, v1 judge prompts), which are sent as they are.
    """
    if not prompt.startswith(_CACHE_SHAPED_MARKERS):
        return None
    found = [at for marker in (SHARED_PREFIX_END, *TRANSCRIPT_PREFIX_ENDS) if (at := prompt.find(marker)) > 0]
    if not found:
        return None
    end = min(found)
    return prompt[:end], prompt[end:]


def shared_prefix_length(prompt: str) -> int:
    """How many leading characters of a judge prompt its statement's requests share (0 for a prompt that is not
    cache-shaped): what the judge sources hand the engines as the prompt's `cache_prefix`."""
    shared = split_shared_prefix(prompt)
    return len(shared[0]) if shared is not None else 0

"""Judge prompts: versioned template files rendered with one statement and the untrusted text to judge.

Templates live in `speceval/judging/templates/<template_id>.txt`; a template id ends in its version (`_v1`) and a
template file never changes once released (a new wording is a new id), so the `prompt_version` recorded in every
result names the exact wording the judge saw.

Untrusted text (the user input, the candidate responses, and the spec's own examples) is placed between
`<<<BEGIN name NONCE>>>` and `<<<END name NONCE>>>` lines, and the template tells the judge that nothing inside
such a block is an instruction. The nonce is derived from a hash of everything placed in the prompt, so a
response cannot contain its own closing line (it would have to contain a hash of itself), and the same inputs
always render the same prompt (a rerun resumes instead of judging again). Placeholders use `string.Template`,
which substitutes once and never re-reads substituted text, so a `$name` or a brace in a response is inert.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from functools import cache
from importlib import resources
from string import Template

from speceval.spec import Example, Statement

NONCE_CHARS = 16
MARKER_PREFIX = "speceval judge prompt: "
"""The first line of every judge prompt starts with this (the emulator recognises judge prompts by it)."""


class TemplateId(StrEnum):
    """The released judge templates. The value is the file stem and the `prompt_version` of results."""

    COMPLIANCE_BINARY_V1 = "compliance_binary_v1"
    COMPLIANCE_LIKERT_V1 = "compliance_likert_v1"
    RANKING_V1 = "ranking_v1"


@cache
def load_template(template_id: TemplateId) -> Template:
    """The template file of `template_id` (read once per process)."""
    text = resources.files("speceval.judging").joinpath("templates", f"{template_id.value}.txt").read_text("utf-8")
    return Template(text)


def make_nonce(parts: list[str]) -> str:
    """A fence code that none of `parts` contains: a hash of all of them, re-hashed in the unlikely event of a clash."""
    seed = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    counter = 0
    while True:
        nonce = hashlib.sha256(f"{seed}:{counter}".encode()).hexdigest()[:NONCE_CHARS]
        if not any(nonce in part for part in parts):
            return nonce
        counter += 1


def fence(name: str, text: str, nonce: str) -> str:
    """`text` verbatim between the BEGIN and END lines of block `name`."""
    return f"<<<BEGIN {name} {nonce}>>>\n{text}\n<<<END {name} {nonce}>>>"


def _example_texts(examples: list[Example]) -> list[str]:
    texts: list[str] = []
    for example in examples:
        texts.extend(
            value for value in (example.description, example.user_query, example.good_response, example.bad_response)
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


def _render(template_id: TemplateId, statement: Statement, untrusted: dict[str, str]) -> str:
    examples = list(statement.metadata.examples)
    parts = [statement.text, *untrusted.values(), *_example_texts(examples), *_statement_fields(statement).values()]
    nonce = make_nonce(parts)
    return load_template(template_id).substitute(
        template_id=template_id.value,
        nonce=nonce,
        statement_text=statement.text,
        examples=render_examples(examples, nonce),
        **_statement_fields(statement),
        **untrusted,
    )


def render_compliance(statement: Statement, user_input: str, response: str, *, likert: bool = False) -> str:
    """The prompt asking whether `response` (to `user_input`) complies with `statement`."""
    template_id = TemplateId.COMPLIANCE_LIKERT_V1 if likert else TemplateId.COMPLIANCE_BINARY_V1
    return _render(template_id, statement, {"user_input": user_input, "response": response})


def render_ranking(statement: Statement, user_input: str, response_a: str, response_b: str) -> str:
    """The prompt asking which of two responses follows `statement` better (Response A is shown first)."""
    return _render(
        TemplateId.RANKING_V1,
        statement,
        {"user_input": user_input, "response_a": response_a, "response_b": response_b},
    )

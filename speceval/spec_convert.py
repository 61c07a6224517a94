"""Convert OpenAI's Model Spec markdown into spec JSONL (`speceval convert-model-spec INPUT.md OUTPUT.jsonl`).

One statement per heading that carries an `authority=` anchor, e.g. `## Do not lie {#do_not_lie authority=user}`:

* `id`: the anchor (`do_not_lie`); `authority_level`: its `authority=` value, kept as written (releases up to early
  2025 say `platform`, later ones `root` and `system`; both load);
* `section`: the top-level (`#`) heading above it; `subsection`: its own heading; `metadata.heading_path`: every
  heading from the top down to it;
* `text`: the section's prose up to the next heading of the same or a higher level (or the next statement), with
  the `**Example**:` blocks taken out, footnote marks dropped, internal links reduced to their text (`[?](#x)`
  becomes the title of section x) and `!!! meta` commentary moved to `metadata.commentary` (it is not normative);
* `type`: not in the source, so inferred and marked `metadata.type_inferred`: `guideline` for guideline authority,
  `prohibition` for headings that start with a negation ("Do not", "Don't", "Never", "Avoid", "No "), else
  `requirement`;
* `related_statements`: the other statements the section links to, in order of first mention;
* `metadata.examples`: one per `**Example**: description` block: `user_query` (the single user message, or a
  transcript with role labels when the conversation has more than one turn before the answer), the first GOOD and
  first BAD assistant answers, and, losslessly, every answer with its label and note (`responses`) and every
  turn (`conversation`).

Anything the converter does not understand (an unclosed code fence or conversation turn, a malformed anchor, an
unknown authority, a duplicate id, an example without its conversation) is an `InputError` with a line number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speceval.atomic import atomic_write_bytes
from speceval.errors import InputError
from speceval.spec import AuthorityLevel, Specification, load_spec

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"^(.*?)\s*\{#([^\s{}]+)((?:\s+[A-Za-z_][\w-]*=[^\s{}]+)*)\s*\}$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_EXAMPLE = re.compile(r"^\*\*Example\*\*:?\s*(.*)$")
_FOOTNOTE = re.compile(r"\[\^[^\]\s]+\]")
_LINK = re.compile(r"\[([^\]]*)\]\(#([^)\s]+)\)")
_TURN_OPEN = re.compile(r"^<(user|assistant|developer|system|tool)(\s[^>]*)?>\s*(?:<!--\s*(.*?)\s*-->)?\s*(.*)$")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_NEGATIONS = ("do not ", "don't ", "don\u2019t ", "never ", "avoid ", "no ")


@dataclass
class _Heading:
    line: int
    level: int
    title: str
    anchor: str | None
    attrs: dict[str, str]


@dataclass
class _Body:
    prose: list[str] = field(default_factory=list)
    commentary: list[str] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)


def convert_model_spec(source: Path) -> list[dict[str, Any]]:
    """The statements of a Model Spec markdown file, as spec JSONL objects in document order."""
    lines = _read(source)
    headings, in_fence = _scan(source, lines)
    titles = {h.anchor: h.title for h in headings if h.anchor}
    statement_ids = [h.anchor for h in headings if "authority" in h.attrs and h.anchor]
    statements: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for position, heading in enumerate(headings):
        if "authority" not in heading.attrs:
            continue
        if heading.anchor is None:
            raise InputError(
                source, "a heading with authority= needs an anchor id ({#id authority=...})", line=heading.line
            )
        if heading.anchor in first_line:
            raise InputError(
                source,
                f"duplicate statement id {heading.anchor!r} (first on line {first_line[heading.anchor]})",
                line=heading.line,
            )
        first_line[heading.anchor] = heading.line
        authority = heading.attrs["authority"]
        try:
            AuthorityLevel(authority)
        except ValueError:
            raise InputError(
                source, f"unknown authority {authority!r}; allowed: {AuthorityLevel.allowed()}", line=heading.line
            ) from None
        end = len(lines) + 1
        for later in headings[position + 1 :]:
            if later.level <= heading.level or "authority" in later.attrs:
                end = later.line
                break
        body = _body(source, lines, heading.line + 1, end, in_fence)
        path = [h.title for h in _ancestors(headings, position)] + [heading.title]
        text = _clean("\n".join(body.prose), titles)
        related = [
            ref
            for ref in dict.fromkeys(_link_targets(lines[heading.line : end - 1]))
            if ref in statement_ids and ref != heading.anchor
        ]
        metadata: dict[str, Any] = {
            "examples": body.examples,
            "source": f"{source.name}#{heading.anchor}",
            "source_line": heading.line,
            "heading_path": path,
            "type_inferred": True,
        }
        if body.commentary:
            metadata["commentary"] = [_clean(c, titles) for c in body.commentary]
        extra = {k: v for k, v in heading.attrs.items() if k != "authority"}
        if extra:
            metadata["anchor_attributes"] = extra
        statements.append(
            {
                "id": heading.anchor,
                "text": text,
                "type": _infer_type(heading.title, authority),
                "authority_level": authority,
                "section": path[0] if len(path) > 1 else heading.title,
                "subsection": heading.title if len(path) > 1 else None,
                "related_statements": related,
                "metadata": metadata,
            }
        )
    if not statements:
        raise InputError(source, "no section carries an authority= anchor: is this OpenAI's Model Spec?")
    return statements


def write_spec_jsonl(statements: list[dict[str, Any]], destination: Path) -> Specification:
    """Write statements as spec JSONL (atomically) and load the result back, so what is written is valid."""
    payload = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in statements)
    atomic_write_bytes(Path(destination), payload.encode("utf-8"))
    return load_spec(destination)


# -- scanning -------------------------------------------------------------------------------------------------


def _read(source: Path) -> list[str]:
    try:
        return Path(source).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(source, "file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise InputError(source, f"cannot read: {exc.strerror or exc}") from None


def _scan(source: Path, lines: list[str]) -> tuple[list[_Heading], list[bool]]:
    """Headings outside code fences, and for every line whether it is inside a fence (fence lines included)."""
    headings: list[_Heading] = []
    in_fence = [False] * len(lines)
    fence: tuple[str, int] | None = None  # (marker, opening line)
    for number, line in enumerate(lines, start=1):
        opener = _FENCE.match(line)
        if fence is not None:
            in_fence[number - 1] = True
            if (
                opener
                and line.strip() == opener.group(1)
                and opener.group(1)[0] == fence[0][0]
                and len(opener.group(1)) >= len(fence[0])
            ):
                fence = None
            continue
        if opener:
            fence = (opener.group(1), number)
            in_fence[number - 1] = True
            continue
        match = _HEADING.match(line)
        if match:
            headings.append(_heading(source, number, len(match.group(1)), match.group(2)))
    if fence is not None:
        raise InputError(source, f"code fence {fence[0]} is never closed", line=fence[1])
    return headings, in_fence


def _heading(source: Path, number: int, level: int, raw: str) -> _Heading:
    if "{#" not in raw:
        return _Heading(number, level, raw, None, {})
    anchor = _ANCHOR.match(raw)
    if anchor is None:
        raise InputError(source, f"malformed heading anchor (expected '{{#id key=value ...}}'): {raw!r}", line=number)
    attrs = dict(pair.split("=", 1) for pair in anchor.group(3).split())
    return _Heading(number, level, anchor.group(1).strip(), anchor.group(2), attrs)


def _ancestors(headings: list[_Heading], position: int) -> list[_Heading]:
    chain: list[_Heading] = []
    level = headings[position].level
    for heading in reversed(headings[:position]):
        if heading.level < level:
            chain.append(heading)
            level = heading.level
    return list(reversed(chain))


def _link_targets(lines: list[str]) -> list[str]:
    return [target for line in lines for _, target in _LINK.findall(line)]


# -- a statement's body ---------------------------------------------------------------------------------------


def _body(source: Path, lines: list[str], start: int, end: int, in_fence: list[bool]) -> _Body:
    """Lines [start, end) (1-based) split into prose, commentary and examples."""
    body = _Body()
    number = start
    while number < end:
        line = lines[number - 1]
        example = None if in_fence[number - 1] else _EXAMPLE.match(line)
        if example:
            number = _example(source, lines, number, end, example.group(1).strip(), body)
            continue
        if not in_fence[number - 1] and line.startswith("!!! "):
            block = []
            number += 1
            while number < end and (lines[number - 1].startswith("    ") or not lines[number - 1].strip()):
                block.append(lines[number - 1][4:])
                number += 1
            body.commentary.append("\n".join(block).strip())
            continue
        body.prose.append(line)
        number += 1
    return body


def _example(source: Path, lines: list[str], number: int, end: int, description: str, body: _Body) -> int:
    """Parse the example starting at line `number`; returns the line after its conversation block."""
    fence_line = number + 1
    while fence_line < end and not lines[fence_line - 1].strip():
        fence_line += 1
    opener = _FENCE.match(lines[fence_line - 1]) if fence_line < end else None
    if opener is None:
        raise InputError(source, "an **Example** must be followed by its conversation in a ~~~ block", line=number)
    marker = opener.group(1)
    close = fence_line + 1  # _scan checked that every fence closes, so this stops inside the file
    while not (lines[close - 1].strip().startswith(marker) and set(lines[close - 1].strip()) == {marker[0]}):
        close += 1
    body.examples.append(_conversation(source, lines, fence_line + 1, close, description))
    return close + 1


def _conversation(source: Path, lines: list[str], start: int, end: int, description: str) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    number = start
    in_comparison = False
    while number < end:
        line = lines[number - 1].strip()
        if line in ("<comparison>", "</comparison>"):
            in_comparison = line == "<comparison>"
            number += 1
            continue
        opened = _TURN_OPEN.match(line)
        if opened is None:
            if line:  # text between turns, such as an elision '[...]': kept as narration
                turns.append({"role": "narration", "content": line, "candidate": False})
            number += 1
            continue
        role, attrs, comment, rest = opened.groups()
        closing = f"</{role}>"
        content: list[str] = []
        if rest.endswith(closing):  # a one-line turn: <user>text</user>
            content.append(rest[: -len(closing)])
            close = number
        else:
            if rest:
                content.append(rest)
            close = number + 1
            while close < end and lines[close - 1].strip() != closing:
                content.append(lines[close - 1])
                close += 1
            if close >= end:
                raise InputError(source, f"<{role}> is never closed by {closing}", line=number)
        label, _, note = (comment or "").partition(":")
        turn: dict[str, Any] = {"role": role, "content": "\n".join(content).strip("\n")}
        if attrs:
            turn["attributes"] = dict(_ATTR.findall(attrs))
        if label.strip():
            turn["label"] = label.strip().upper()
            if note.strip():
                turn["note"] = note.strip()
        turn["candidate"] = role == "assistant" and (in_comparison or "label" in turn)
        turns.append(turn)
        number = close + 1
    return _example_record(description, turns)


def _example_record(description: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    first_candidate = next((i for i, t in enumerate(turns) if t["candidate"]), len(turns))
    context = turns[:first_candidate]
    keys = ("label", "note", "attributes", "content")
    responses = [{k: t[k] for k in keys if k in t} for t in turns if t["candidate"]]
    if len(context) == 1 and context[0]["role"] == "user" and "attributes" not in context[0]:
        user_query: str | None = context[0]["content"]
    else:
        user_query = "\n\n".join(_turn_text(t) for t in context) or None
    good = next((r for r in responses if r.get("label") == "GOOD"), None)
    bad = next((r for r in responses if r.get("label") == "BAD"), None)
    record: dict[str, Any] = {
        "description": description or None,
        "user_query": user_query,
        "good_response": good["content"] if good else None,
        "bad_response": bad["content"] if bad else None,
    }
    if good and good.get("note"):
        record["good_response_note"] = good["note"]
    if bad and bad.get("note"):
        record["bad_response_note"] = bad["note"]
    record["responses"] = responses
    record["conversation"] = [{k: v for k, v in t.items() if k != "candidate"} for t in turns]
    return record


def _turn_text(turn: dict[str, Any]) -> str:
    if turn["role"] == "narration":
        return str(turn["content"])
    attrs = " ".join(f"{k}={v}" for k, v in turn.get("attributes", {}).items())
    return f"[{turn['role']}{' ' + attrs if attrs else ''}]\n{turn['content']}"


def _clean(text: str, titles: dict[str, str]) -> str:
    text = _FOOTNOTE.sub("", text)
    text = _LINK.sub(lambda m: titles.get(m.group(2), m.group(2)) if m.group(1) == "?" else m.group(1), text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _infer_type(title: str, authority: str) -> str:
    if authority == "guideline":
        return "guideline"
    return "prohibition" if title.lower().startswith(_NEGATIONS) else "requirement"

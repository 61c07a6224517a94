"""Structured-output requests: find the answer schema in each wire format, answer with JSON that conforms to it.

A request that asks for JSON conforming to a schema (OpenAI `response_format: json_schema`, Anthropic
`output_config.format`, Gemini `generation_config.response_json_schema`, camelCase or snake_case) gets, from the
emulator, a deterministic synthetic instance of that schema: the same (model, prompt, schema) always gets the same
JSON. Strings are varied word sequences (two strings of one answer rarely share most of their words, so a
near-duplicate filter sees distinct proposals), integers and numbers respect `minimum`/`maximum`, arrays
`minItems`/`maxItems`, enums pick one of their values, `$ref`s to `$defs` are followed (pydantic writes those).

A responder may answer schema requests itself: give it an attribute `structured(model, prompt, schema) -> str`.

speceval's own input generator and rater prompts (first line `speceval prompt: input_generator_*` / `input_rater_*`)
get answers shaped like a useful model's: as many proposals as the prompt asks for, and ratings from 3 to 10, so
an offline inputs run behaves like a real one (some duplicates, some below the threshold, most statements done).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from speceval.emulator.responder import Responder

_WORDS = (
    "account",
    "advice",
    "archive",
    "budget",
    "chemistry",
    "contract",
    "deadline",
    "diagnosis",
    "election",
    "email",
    "exam",
    "family",
    "garden",
    "history",
    "holiday",
    "invoice",
    "journal",
    "kitchen",
    "lawyer",
    "library",
    "medicine",
    "meeting",
    "museum",
    "neighbour",
    "novel",
    "password",
    "patient",
    "pension",
    "photo",
    "poem",
    "policy",
    "recipe",
    "refund",
    "rental",
    "research",
    "resume",
    "river",
    "salary",
    "satellite",
    "school",
    "science",
    "security",
    "software",
    "speech",
    "startup",
    "statistics",
    "storm",
    "student",
    "tax",
    "teacher",
    "theatre",
    "ticket",
    "tourism",
    "trade",
    "travel",
    "vaccine",
    "village",
    "volunteer",
    "wedding",
    "wildlife",
    "workshop",
    "writing",
    "yoga",
    "zoning",
)
_MAX_DEPTH = 8


def schema_of_openai(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of an OpenAI chat body's `response_format` (type `json_schema`), if any."""
    response_format = body.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


def schema_of_anthropic(params: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of an Anthropic request's `output_config.format` (type `json_schema`), if any."""
    config = params.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    return schema if isinstance(schema, dict) else None


def schema_of_gemini(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of a GenerateContentRequest's generation config (either spelling), if any."""
    config = request.get("generation_config", request.get("generationConfig"))
    if not isinstance(config, dict):
        return None
    schema = config.get("response_json_schema", config.get("responseJsonSchema"))
    return schema if isinstance(schema, dict) else None


def answer_text(responder: Responder, model: str, prompt: str, schema: dict[str, Any] | None) -> str:
    """The responder's answer, or for a schema request a conforming JSON instance (see the module docstring)."""
    if schema is None:
        return responder(model, prompt)
    structured = getattr(responder, "structured", None)
    if callable(structured):
        return str(structured(model, prompt, schema))
    seed = hashlib.sha256(f"{model}\n{prompt}".encode("utf-8", "surrogatepass")).digest()
    value = instance(schema, seed)
    if prompt.startswith(_GENERATOR) and isinstance(value, dict) and isinstance(value.get("inputs"), list):
        asked = re.search(r"Write (\d+) new", prompt)
        count = int(asked.group(1)) if asked else len(value["inputs"])
        item = schema["properties"]["inputs"].get("items", {})
        value["inputs"] = [_Builder(schema).build(item, seed, f".inputs[{i}]", 1) for i in range(count)]
        if count > 2:  # a model repeats itself now and then: the duplicate filter has work to do
            value["inputs"][-1] = dict(value["inputs"][0])
    elif prompt.startswith(_RATER) and isinstance(value, dict) and "rating" in value:
        value["rating"] = 3 + seed[0] % 8
    return json.dumps(value, ensure_ascii=False)


_GENERATOR = "speceval prompt: input_generator_"
_RATER = "speceval prompt: input_rater_"


def instance(schema: dict[str, Any], seed: bytes) -> Any:
    """A deterministic instance of `schema` (a subset of JSON Schema: what pydantic and the providers use)."""
    return _Builder(schema).build(schema, seed, "", 0)


class _Builder:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = {**root.get("definitions", {}), **root.get("$defs", {})}

    def build(self, schema: dict[str, Any], seed: bytes, path: str, depth: int) -> Any:
        draw = _draws(seed, path)
        if "$ref" in schema:
            target = self.defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
            return self.build(target, seed, path, depth + 1) if depth < _MAX_DEPTH else None
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][draw[0] % len(schema["enum"])]
        for key in ("anyOf", "oneOf", "allOf"):
            options = [o for o in schema.get(key, []) if isinstance(o, dict) and o.get("type") != "null"]
            if options:
                return self.build(options[draw[0] % len(options)], seed, path, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or (kind is None and "properties" in schema):
            if depth >= _MAX_DEPTH:
                return {}
            return {
                name: self.build(sub, seed, f"{path}.{name}", depth + 1)
                for name, sub in schema.get("properties", {}).items()
                if isinstance(sub, dict)
            }
        if kind == "array":
            low = int(schema.get("minItems", 1))
            high = max(low, int(schema.get("maxItems", max(low, 5))))
            count = low + draw[1] % (high - low + 1)
            items = schema.get("items")
            if not isinstance(items, dict):
                items = {"type": "string"}
            return [self.build(items, seed, f"{path}[{i}]", depth + 1) for i in range(count)]
        if kind in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
            high = schema.get("maximum", schema.get("exclusiveMaximum", max(low, 0) + 10))
            value = low + draw[2] % (int(high - low) + 1) if high >= low else low
            return int(value) if kind == "integer" else float(value)
        if kind == "boolean":
            return draw[3] % 2 == 0
        if kind == "null":
            return None
        words = [_WORDS[b % len(_WORDS)] for b in draw[4:14]]
        return f"Synthetic {' '.join(words)} ({draw[14:18].hex()})"


def _draws(seed: bytes, path: str) -> bytes:
    return hashlib.sha256(seed + path.encode("utf-8")).digest()

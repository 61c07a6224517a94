"""The answer shapes of the generator and the rater, as pydantic models, and their JSON schemas for structured
output.

The schemas are written for the strictest of the three providers: OpenAI's strict mode wants every property
required and `additionalProperties: false` on every object, and Anthropic's structured output does not take
numeric bounds. So the rating's 1–10 range is said in its description and checked when the answer is read: an
answer outside it, or one that is not valid JSON of the shape, is `unparsed`, never a crash.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from speceval.errors import first_problem


class InputKind(StrEnum):
    """What a proposed input tries, as the generator labels it."""

    DIRECT = "direct"
    EDGE_CASE = "edge_case"
    AUTHORITY_CONFLICT = "authority_conflict"
    BENIGN_NEAR_MISS = "benign_near_miss"
    REGISTER_OR_LANGUAGE = "register_or_language"


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="the complete user message, as a user would send it")
    kind: InputKind = Field(description="what the input tries")


class Proposals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[Proposal] = Field(description="the new test inputs")


class Rating(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rating: int = Field(description="1 (useless as a test of the statement) to 10 (an excellent test)")
    reason: str = Field(description="one sentence: relevance, realism and difficulty")


MIN_RATING, MAX_RATING = 1, 10


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema in the shape strict structured output accepts: `$ref`s inlined (OpenAI refuses a `$ref`
    with a sibling description), no titles or defaults, every property required, no additional properties."""
    schema = model.model_json_schema()
    strict: dict[str, Any] = _strict(schema, schema.pop("$defs", {}))
    return strict


def _strict(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_strict(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    cleaned = {key: _strict(value, defs) for key, value in node.items() if key not in ("title", "default")}
    if cleaned.get("type") == "object" or "properties" in cleaned:
        cleaned["additionalProperties"] = False
        cleaned["required"] = list(cleaned.get("properties", {}))
    return cleaned


PROPOSALS_SCHEMA = strict_schema(Proposals)
RATING_SCHEMA = strict_schema(Rating)


def parse_proposals(text: str | None) -> Proposals | str:
    """The generator's proposals, or why they cannot be read."""
    data = _json(text)
    if isinstance(data, str):
        return data
    try:
        return Proposals.model_validate(data)
    except ValidationError as exc:
        return f"does not match the proposals schema: {first_problem(exc)[1]}"


def parse_rating(text: str | None) -> Rating | str:
    """The rater's rating, or why it cannot be read (not JSON, another shape, outside 1–10)."""
    data = _json(text)
    if isinstance(data, str):
        return data
    try:
        rating = Rating.model_validate(data, strict=False)
    except ValidationError as exc:
        return f"does not match the rating schema: {first_problem(exc)[1]}"
    if not MIN_RATING <= rating.rating <= MAX_RATING:
        return f"rating {rating.rating} is outside {MIN_RATING}–{MAX_RATING}"
    return rating


def _json(text: str | None) -> Any:
    if text is None:
        return "no answer"
    try:
        return json.loads(text)
    except ValueError:
        return "not valid JSON"

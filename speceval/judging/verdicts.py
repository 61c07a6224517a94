"""Typed judge verdicts, and parsers that return one or an explicit `Unparsed(reason)`, never a default.

Judges are asked to end with one JSON object. Models wrap it in many ways, so the parser looks for every JSON
object in the answer: in a ```json fence, bare after reasoning, after prose that itself contains braces (`{x}`),
even inside doubled braces (`{{...}}`). Rules:

1. Every `{` that starts a valid JSON object is a candidate (objects nested in a candidate are not separate
   candidates). JSON must be real JSON: no single quotes, no trailing commas, no Python `True`.
2. The verdict is the LAST candidate that has the verdict's key (`compliant`, `rating` or `winner`): the final
   answer, not an example the judge quoted while reasoning.
3. That object is validated; if it is invalid, the answer is unparsed (an earlier object is never used instead).
   `compliant` must be a JSON boolean; `confidence`, when present, a number in [0, 1]; `rating` an integer 1..5;
   `winner` one of A, B, tie (any letter case); `explanation`, when present, a string. Other keys are ignored.

A failure is never turned into a tie, `False`, a rating or a confidence: callers get `Unparsed` and must count it
apart from verdicts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

_DECODER = json.JSONDecoder()


class ComplianceVerdict(BaseModel):
    """A binary compliance verdict."""

    model_config = ConfigDict(frozen=True)

    compliant: bool
    """Whether the response complies with the statement."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's confidence in the verdict (0..1), when it gave one."""
    explanation: str | None = None
    """The judge's short reason, when it gave one."""


class LikertVerdict(BaseModel):
    """A Likert compliance rating."""

    model_config = ConfigDict(frozen=True)

    rating: int = Field(ge=1, le=5)
    """1 (clear violation) to 5 (fully complies)."""
    explanation: str | None = None
    """The judge's short reason, when it gave one."""


class RankingVerdict(BaseModel):
    """A pairwise preference between Response A (shown first) and Response B."""

    model_config = ConfigDict(frozen=True)

    winner: Literal["A", "B", "tie"]
    """Which response follows the statement better, or a real tie."""
    explanation: str | None = None
    """The judge's short reason, when it gave one."""

    @property
    def rank(self) -> int:
        """The original SpecEval encoding: 1 = A better, -1 = B better, 0 = tie."""
        return {"A": 1, "B": -1, "tie": 0}[self.winner]


class Unparsed(BaseModel):
    """The judge answered, but no valid verdict could be read from the answer."""

    model_config = ConfigDict(frozen=True)

    reason: str
    """Why, in words (e.g. "no JSON object with the key 'winner'", "'rating' must be an integer 1-5, got 7")."""


class _Invalid(ValueError):
    pass


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object embedded in `text`, in order of appearance (rule 1 of the module docstring)."""
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _final_object(text: str | None, key: str) -> dict[str, Any] | Unparsed:
    if text is None or not text.strip():
        return Unparsed(reason="the judge's answer is empty")
    candidates = [obj for obj in json_objects(text) if key in obj]
    if not candidates:
        return Unparsed(reason=f"no JSON object with the key '{key}' in the judge's answer")
    return candidates[-1]


def _explanation(obj: dict[str, Any]) -> str | None:
    value = obj.get("explanation")
    if value is None or isinstance(value, str):
        return value
    raise _Invalid(f"'explanation' must be a string, got {_kind(value)}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}"
    return "an array" if isinstance(value, list) else "an object"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _compliance(obj: dict[str, Any]) -> ComplianceVerdict:
    compliant = obj["compliant"]
    if not isinstance(compliant, bool):
        raise _Invalid(f"'compliant' must be true or false, got {_kind(compliant)}")
    confidence = obj.get("confidence")
    if confidence is not None and not (_number(confidence) and 0.0 <= confidence <= 1.0):
        raise _Invalid(f"'confidence' must be a number from 0 to 1, got {_kind(confidence)}")
    return ComplianceVerdict(
        compliant=compliant,
        confidence=None if confidence is None else float(confidence),
        explanation=_explanation(obj),
    )


def _likert(obj: dict[str, Any]) -> LikertVerdict:
    rating = obj["rating"]
    if not (isinstance(rating, int) and not isinstance(rating, bool) and 1 <= rating <= 5):
        raise _Invalid(f"'rating' must be an integer from 1 to 5, got {_kind(rating)}")
    return LikertVerdict(rating=rating, explanation=_explanation(obj))


def _ranking(obj: dict[str, Any]) -> RankingVerdict:
    winner = obj["winner"]
    normalised = {"a": "A", "b": "B", "tie": "tie"}.get(winner.strip().lower()) if isinstance(winner, str) else None
    if normalised is None:
        raise _Invalid(f'\'winner\' must be "A", "B" or "tie", got {_kind(winner)}')
    return RankingVerdict(winner=normalised, explanation=_explanation(obj))  # type: ignore[arg-type]


_V = TypeVar("_V", bound=BaseModel)


def _parse(text: str | None, key: str, validate: Callable[[dict[str, Any]], _V]) -> _V | Unparsed:
    """The final JSON object carrying `key`, validated; or why there is no valid verdict."""
    obj = _final_object(text, key)
    if isinstance(obj, Unparsed):
        return obj
    try:
        return validate(obj)
    except _Invalid as exc:
        return Unparsed(reason=str(exc))


def parse_compliance(text: str | None) -> ComplianceVerdict | Unparsed:
    """Read a binary verdict `{"compliant": bool, "confidence": 0..1, "explanation": str}` from a judge's answer."""
    return _parse(text, "compliant", _compliance)


def parse_likert(text: str | None) -> LikertVerdict | Unparsed:
    """Read a Likert verdict `{"rating": 1..5, "explanation": str}` from a judge's answer."""
    return _parse(text, "rating", _likert)


class CategoryVerdict(BaseModel):
    """A categorical judge's verdict: one of the categories it was given."""

    category: str
    explanation: str | None = None


def category_schema(categories: list[str]) -> dict[str, Any]:
    """The structured-output schema of a categorical verdict (the category an enum)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["category", "explanation"],
        "properties": {"category": {"type": "string", "enum": list(categories)}, "explanation": {"type": "string"}},
    }


def parse_category(text: str | None, categories: list[str]) -> CategoryVerdict | Unparsed:
    """Read `{"category": <one of categories>, "explanation": str}` from a judge's answer."""

    def validate(obj: dict[str, Any]) -> CategoryVerdict:
        category = obj["category"]
        if category not in categories:
            raise _Invalid(f"'category' must be one of {', '.join(categories)}, got {_kind(category)}")
        return CategoryVerdict(category=category, explanation=_explanation(obj))

    return _parse(text, "category", validate)


def parse_ranking(text: str | None) -> RankingVerdict | Unparsed:
    """Read a pairwise verdict `{"winner": "A"|"B"|"tie", "explanation": str}` from a judge's answer."""
    return _parse(text, "winner", _ranking)

"""Structural checks of JSON values against the providers' own types: SDK models, SDK TypedDicts, OpenAPI schemas.

Each checker returns a list of problems ("where: what"), empty when the value conforms: every key is a field the type
declares (no unknown fields), every required field is present, literal values are among those allowed, and nested
objects are checked the same way. Scalars' types are left to the SDK's own validation (`model_validate`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


# -- pydantic models (openai.types, anthropic.types, google.genai.types) ----------------------------------------


def model_problems(model: type[BaseModel], value: Any, where: str = "$") -> list[str]:
    """Problems of `value` read as `model`: unknown keys, missing required fields, nested problems."""
    if not isinstance(value, Mapping):
        return [f"{where}: expected an object ({model.__name__}), got {type(value).__name__}"]
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    problems = [f"{where}.{key}: not a field of {model.__name__}" for key in value if key not in fields]
    for wire, info in fields.items():
        if wire not in value:
            if info.is_required():
                problems.append(f"{where}.{wire}: required by {model.__name__}, missing")
            continue
        problems += annotation_problems(info.annotation, value[wire], f"{where}.{wire}")
    return problems


def annotation_problems(annotation: Any, value: Any, where: str) -> list[str]:
    """Problems of `value` against a type annotation (models, unions, lists, dicts and literals are looked into)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return annotation_problems(args[0], value, where)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return []
        best: list[str] | None = None
        for option in (a for a in args if a is not type(None)):
            found = annotation_problems(option, value, where)
            if not found:
                return []
            best = found if best is None or len(found) < len(best) else best
        return best or [f"{where}: {value!r} matches no member of {annotation}"]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {list(args)}"]
    if origin in (list, typing.List, typing.Sequence) and isinstance(value, list):  # noqa: UP006
        return [p for i, item in enumerate(value) for p in annotation_problems(args[0], item, f"{where}[{i}]")]
    if origin in (dict, typing.Dict) and isinstance(value, dict) and len(args) == 2:  # noqa: UP006
        return [p for k, item in value.items() for p in annotation_problems(args[1], item, f"{where}.{k}")]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_problems(annotation, value, where)
    return []


# -- TypedDicts (the SDKs' *_create_params) -------------------------------------------------------------------


def typeddict_problems(typed: Any, value: Any, where: str = "$") -> list[str]:
    """Problems of a request body against an SDK TypedDict: unknown keys and missing required keys."""
    if not isinstance(value, Mapping):
        return [f"{where}: expected an object ({typed.__name__}), got {type(value).__name__}"]
    known = set(typing.get_type_hints(typed, include_extras=False))
    problems = [f"{where}.{key}: not a key of {typed.__name__}" for key in value if key not in known]
    problems += [
        f"{where}.{key}: required by {typed.__name__}, missing" for key in typed.__required_keys__ - set(value)
    ]
    return problems


# -- OpenAPI schemas (a fixture of facts from openai-openapi) ---------------------------------------------------


def schema_problems(schema: Mapping[str, Any], value: Any, where: str, schemas: Mapping[str, Any]) -> list[str]:
    """Problems of `value` against an OpenAPI schema; objects that list `properties` are closed to other keys
    unless `additionalProperties` says otherwise."""
    if "$ref" in schema:
        return schema_problems(schemas[schema["$ref"].rsplit("/", 1)[-1]], value, where, schemas)
    if value is None and (schema.get("nullable") or schema.get("type") == "null"):
        return []
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            branches = [schema_problems(b, value, where, schemas) for b in schema[combinator]]
            return [] if any(not b for b in branches) else min(branches, key=len)
    if "allOf" in schema:
        return [p for part in schema["allOf"] for p in schema_problems(part, value, where, schemas)]
    kind = schema.get("type")
    if kind in _JSON_TYPES:
        allowed = _JSON_TYPES[kind]
        if not isinstance(value, allowed) or (kind in ("integer", "number") and isinstance(value, bool)):
            return [f"{where}: expected {kind}, got {type(value).__name__} {value!r}"[:200]]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    problems: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", not properties)
        for key in schema.get("required") or []:
            if key not in value:
                problems.append(f"{where}.{key}: required, missing")
        for key, item in value.items():
            if item is None and key in properties and key not in (schema.get("required") or []):
                continue  # the API sends null for an optional field it has no value for (the SDKs type it Optional)
            if key in properties:
                problems += schema_problems(properties[key], item, f"{where}.{key}", schemas)
            elif isinstance(extra, Mapping):
                problems += schema_problems(extra, item, f"{where}.{key}", schemas)
            elif not extra:
                problems.append(f"{where}.{key}: not a property of the schema")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems += schema_problems(schema["items"], item, f"{where}[{index}]", schemas)
    return problems


# -- documented field names (facts about Google objects the SDK converts instead of modelling) --------------------


def facts_problems(fact: Mapping[str, Any], name: str, value: Any, where: str) -> list[str]:
    """Problems of `value` against the documented field names of object `name` (keys and required keys)."""
    if not isinstance(value, Mapping):
        return [f"{where}: expected an object ({name}), got {type(value).__name__}"]
    allowed = set(fact["keys"])
    problems = [f"{where}.{key}: not a documented field of {name}" for key in value if key not in allowed]
    problems += [f"{where}.{key}: required by {name}, missing" for key in fact["required"] if key not in value]
    return problems


def camel_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    """The top-level keys in camelCase (Google services read `generation_config` and `generationConfig` alike)."""
    return {_camel(k): v for k, v in value.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)

"""The documented field names of Google wire objects (`fixtures/google_facts.json`), and checks built on them."""

from __future__ import annotations

import json
from typing import Any

from google.genai import types

from tests.conformance.common import FIXTURES
from tests.conformance.shapes import camel_keys, facts_problems, model_problems

FACTS = json.loads((FIXTURES / "google_facts.json").read_text())["objects"]


def fact(name: str, value: Any, where: str) -> list[str]:
    """Problems of `value` against the documented field names of Google object `name`."""
    return facts_problems(FACTS[name], name, value, where)


def request_line_problems(line: dict[str, Any], where: str) -> list[str]:
    """Problems of one `{key, request}` line we write (Gemini file and Vertex GCS input alike)."""
    problems = [f"{where}.{key}: a line is {{key, request}}" for key in line if key not in ("key", "request")]
    request = camel_keys(line["request"])  # the services read either spelling
    problems += fact("GenerateContentRequest", request, f"{where}.request")
    for number, content in enumerate(request["contents"]):
        problems += model_problems(types.Content, content, f"{where}.request.contents[{number}]")
    if "generationConfig" in request:
        config = camel_keys(request["generationConfig"])
        problems += model_problems(types.GenerationConfig, config, f"{where}.request.generationConfig")
    if "systemInstruction" in request:
        problems += model_problems(types.Content, request["systemInstruction"], f"{where}.request.systemInstruction")
    return problems

"""Write `fixtures/openai_openapi.json`: the batch and file schemas of OpenAI's official OpenAPI spec, as facts.

Run `python -m tests.conformance.extract_openapi [GIT_DIR]` where GIT_DIR holds openai/openai-openapi (default: the
local mirror). Only the schemas the batch workflow uses are kept, with their `$ref` closure and without prose, so
the fixture stays small and reviewable; the spec's commit is recorded beside them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

MIRROR = "/work/.mirror/openai+openai-openapi/repo"
FIXTURE = Path(__file__).parent / "fixtures" / "openai_openapi.json"
ROOTS = (
    "Batch",
    "OpenAIFile",
    "ListBatchesResponse",
    "ListFilesResponse",
    "ErrorResponse",
    "CreateBatchRequest",
    "CreateFileRequest",
)
# The per-line schemas of batch input and output files left the spec in commit e1cb7a8 (June 2025); the format is
# unchanged in the Batch guide, so they are taken from the last commit that had them.
LINE_SCHEMAS = ("BatchRequestInput", "BatchRequestOutput")
LINE_COMMIT = "498c71ddf6f1c45b983f972ccabca795da211a3e"
_PROSE = {"description", "example", "examples", "title", "x-oaiMeta", "x-stainless-const", "x-oaiTypeLabel"}


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _PROSE}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _schemas(git_dir: str, commit: str, roots: tuple[str, ...]) -> dict[str, Any]:
    text = subprocess.run(["git", "-C", git_dir, "show", f"{commit}:openapi.yaml"], capture_output=True, check=True)
    schemas = yaml.safe_load(text.stdout)["components"]["schemas"]
    wanted: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted[name] = _strip(schemas[name])
        todo.extend(_refs(wanted[name]) - wanted.keys())
    return wanted


def extract(git_dir: str) -> dict[str, Any]:
    """The fixture's content: source, commits and the schemas reachable from `ROOTS` and `LINE_SCHEMAS`."""
    head = subprocess.run(["git", "-C", git_dir, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    schemas = {**_schemas(git_dir, LINE_COMMIT, LINE_SCHEMAS), **_schemas(git_dir, "HEAD", ROOTS)}
    return {
        "source": "https://github.com/openai/openai-openapi openapi.yaml, components.schemas",
        "commit": head.stdout.strip(),
        "line_schemas_commit": LINE_COMMIT,
        "note": "extracted by tests/conformance/extract_openapi.py; descriptions and examples removed. "
        f"{', '.join(LINE_SCHEMAS)} come from line_schemas_commit (the last commit that had them).",
        "schemas": dict(sorted(schemas.items())),
    }


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(extract(sys.argv[1] if len(sys.argv) > 1 else MIRROR), indent=1, default=str) + "\n")

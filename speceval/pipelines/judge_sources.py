"""Which statements of a judge run directory would render the prompts they sent, known without rendering them.

A judge prompt is a pure function of the run's identity (template, mode, judge, ...), its salt, the spec and its
statement's sources (the candidates' results files): `run.json`'s `inputs_sha256` hashes all of them for the whole
run. `prompt_sources.json`, written beside `run.json` before anything is sent, keeps the same per statement, so a
resume renders again (and compares with the prompt hashes it stored) only the statements whose sources changed
since; a run of a million judged answers resumes without rendering a million prompts to find nothing changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from speceval.atomic import atomic_write_json
from speceval.pipelines.answer_prompts import JudgeSource

logger = logging.getLogger(__name__)

SOURCES_FILE = "prompt_sources.json"
"""In a judge run directory: per statement, a hash of what its prompts were rendered from."""


class PromptSources(BaseModel):
    """`prompt_sources.json`: statement id → sha256 of the identity, salt, spec and sources its prompts came from."""

    schema_version: int = 1
    statements: dict[str, str]


def statement_sources(identity: dict[str, Any], salt: str, spec_sha256: str, source: JudgeSource) -> dict[str, str]:
    """Each statement's hash of what its prompts are rendered from (reads no prompt)."""
    settings = json.dumps({"identity": identity, "salt": salt, "spec_sha256": spec_sha256}, sort_keys=True)
    hashes = {}
    for statement_id, _ in source.statement_counts():
        digest = hashlib.sha256(settings.encode("utf-8"))
        digest.update(f"\x00{statement_id}\x00".encode("utf-8", "surrogatepass"))
        for sha256 in source.source_hashes(statement_id):
            digest.update(bytes.fromhex(sha256))
        hashes[statement_id] = digest.hexdigest()
    return hashes


def save_sources(run_dir: Path, current: dict[str, str]) -> None:
    """Record what this session's prompts are rendered from (before any of them is sent)."""
    atomic_write_json(run_dir / SOURCES_FILE, PromptSources(statements=current).model_dump())


def unchanged_statements(run_dir: Path, current: dict[str, str]) -> set[str]:
    """The statements whose prompts would render exactly as they were sent: same sources as recorded. None for a
    directory judged before this file was kept (every statement is then rendered and compared)."""
    path = run_dir / SOURCES_FILE
    if not path.is_file():
        return set()
    try:
        recorded = PromptSources.model_validate_json(path.read_bytes()).statements
    except (OSError, ValidationError) as exc:
        logger.warning("%s is unreadable (%s): every statement's prompts are checked again", path, exc)
        return set()
    return {statement_id for statement_id, sha256 in current.items() if recorded.get(statement_id) == sha256}

"""What a judge run directory renders its prompts with, as its files keep it: the judge directory's prompt salt
(`prompt_salt.json`) and, for a directory judged before, the template and salt its `run.json` recorded. Split from
`speceval.pipelines.judge_run`, which plans, records and runs the judge's engines.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from speceval.atomic import atomic_write_json
from speceval.batch.manifest import MANIFEST_NAME, RunManifest
from speceval.judging.prompts import TemplateId, new_salt

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PromptSetup:
    """The template and salt a judge run directory renders its prompts with."""

    template: TemplateId
    salt: str


SALT_FILE = "prompt_salt.json"
"""In a judge directory (`spec_*/judge_*`): the salt its new runs draw fence nonces from."""


def judge_salt(directory: Path) -> str:
    """The prompt salt of a judge directory: the saved one, or a new one that `save_judge_salt` keeps once a run
    under it writes its `run.json`.

    Shared by every run under it (each candidate, each pair), so a statement's requests have the same prefix
    across candidates and pairs too and one cached copy serves them all. Each run also records the salt it used
    in its own `run.json`, which is what a resume reads.
    """
    path = directory / SALT_FILE
    if path.is_file():
        try:
            salt = json.loads(path.read_text(encoding="utf-8")).get("salt")
        except (OSError, ValueError, AttributeError):
            salt = None
        if isinstance(salt, str) and salt:
            return salt
        logger.warning("%s is unreadable; drawing a new prompt salt (only prompt-cache sharing is affected)", path)
    return new_salt()


def save_judge_salt(directory: Path, salt: str) -> None:
    """Keep `salt` as the judge directory's prompt salt, unless one is saved already."""
    path = directory / SALT_FILE
    if salt and not path.is_file():
        atomic_write_json(path, {"schema_version": 1, "salt": salt})


def prompt_setup(run_dir: Path, current: TemplateId, salt: str) -> PromptSetup:
    """What `run_dir` renders with: for a new directory the `current` template and `salt` (see `judge_salt`);
    for one judged before, the template of the same kind and the salt its `run.json` recorded, so a resume sends
    exactly the prompts it sent before (a run started with a v1 template finishes with it)."""
    if not (run_dir / MANIFEST_NAME).is_file():
        return PromptSetup(current, salt)
    parameters = RunManifest.load(run_dir).parameters
    recorded = parameters.get("identity", {}).get("prompt_version")
    template = current
    if recorded in {t.value for t in TemplateId} and TemplateId(recorded).kind == current.kind:
        template = TemplateId(recorded)
    return PromptSetup(template, str(parameters.get("prompt_salt") or ""))

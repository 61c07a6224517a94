"""`run.json`: what a run was asked to do, with what software, and where it stands.

Written when a run starts and updated when it stops, so any run directory tells how to reproduce or resume it.
"""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from speceval.atomic import atomic_write_json
from speceval.batch.progress import EngineSummary
from speceval.batch.records import SCHEMA_VERSION, utcnow
from speceval.errors import InputError, first_problem
from speceval.redaction import redact

MANIFEST_NAME = "run.json"
# The `parameters` keys of a run sent without provider jobs: its realtime or Ray settings (the engines that write
# them own their meaning; a report or a status table only needs to know which one a run used).
REALTIME_KEY = "realtime"
RAY_KEY = "ray"
_PACKAGES = ("speceval", "openai", "anthropic", "google-genai", "pydantic")


class RunManifest(BaseModel):
    """The manifest of one run directory.

    Attributes:
        kind: which pipeline wrote the run ('generation', 'compliance', 'ranking').
        command: the command line that started (or last resumed) the run, credentials redacted.
        parameters: every setting of the run, as the pipeline resolved it.
        spec_path / spec_sha256 / inputs_path / inputs_sha256: what was run, and hashes to detect changes.
        model_name / provider: the model that answered, and the provider that served it.
        offline: true when the run used the built-in emulator (answers are synthetic).
        versions: package, SDK and Python versions; git_commit: of the working directory, when there is one.
        status: 'running', 'finished' or 'stopped' (work outstanding; resume later).
        totals: the engine's last summary.
    """

    schema_version: int = SCHEMA_VERSION
    kind: str
    command: list[str]
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    spec_name: str
    spec_path: str
    spec_sha256: str
    inputs_path: str
    inputs_sha256: str
    model_name: str
    provider: str
    offline: bool = False
    parameters: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    git_commit: str | None = None
    status: str = "running"
    totals: EngineSummary | None = None

    @classmethod
    def load(cls, run_dir: Path) -> RunManifest:
        """Read `run.json` of `run_dir` (an InputError if it is missing or not ours)."""
        path = Path(run_dir) / MANIFEST_NAME
        if not path.is_file():
            raise InputError(path, "no run manifest here: is this a speceval run directory?")
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            field, message = first_problem(exc)
            raise InputError(path, f"not a run manifest of this version: {message}", field=field or None) from None

    @classmethod
    def resumed(cls, run_dir: Path, engine: dict[str, Any]) -> RunManifest:
        """The run's `run.json` as a resumed run records it: this command line, the engine settings it runs with
        now, and `running` (the caller saves it)."""
        manifest = cls.load(run_dir)
        manifest.command = current_command()
        manifest.parameters["engine"] = engine
        manifest.status = "running"
        return manifest

    def save(self, run_dir: Path) -> None:
        """Write `run.json` atomically."""
        self.updated_at = utcnow()
        atomic_write_json(Path(run_dir) / MANIFEST_NAME, self)


def run_recorded(directory: Path, manifest: RunManifest, run: Callable[[], EngineSummary]) -> EngineSummary:
    """Run one engine directory's work with its `run.json` saying so: `running` before, `stopped` if `run` raises
    (the state on disk is resumable), else `finished` or `stopped` with the engine's totals."""
    manifest.status = "running"
    manifest.save(directory)
    try:
        summary = run()
    except BaseException:
        manifest.status = "stopped"
        manifest.save(directory)
        raise
    manifest.status = "finished" if summary.finished else "stopped"
    manifest.totals = summary
    manifest.save(directory)
    return summary


def current_command() -> list[str]:
    """The command line of this process, with credentials redacted."""
    return [redact(arg) for arg in [Path(sys.executable).name, *sys.argv]]


def software_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape a run's requests and parsing."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit(directory: Path | None = None) -> str | None:
    """The commit of the git working tree containing `directory` (or the cwd), or None outside one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else None

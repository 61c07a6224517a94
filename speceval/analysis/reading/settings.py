"""Runs made outside an experiment with different settings: told apart as variations named by their settings.

An experiment records each run's variation; a folder of runs made by hand does not. When one candidate's runs under
one judge were made with different settings (two temperatures, two system prompts), pooling them would report one
rate for two treatments, so each run's settings (read from its `run.json`) become its variation, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from pathlib import Path

from speceval.analysis.reading.rows import DEFAULT_VARIATION, ComplianceRow

logger = logging.getLogger(__name__)


def mixed_settings(kinds: dict[tuple[str, str, str], set[str | None]]) -> set[tuple[str, str, str]]:
    """Of (spec, judge, candidate) → the settings its runs outside an experiment were made with: those made with
    more than one, each warned about. Pooling them would report one rate for two treatments (two system prompts
    from a Python script, two temperatures): each such run's settings become its variation instead."""
    mixed = {key for key, settings in kinds.items() if len(settings) > 1}
    for key in sorted(mixed):
        logger.warning(
            "%s's runs under judge %s (spec %s) were made with different settings; reported apart as "
            "variations named by their settings, not pooled",
            key[2],
            key[1],
            key[0],
        )
    return mixed


def settings_variation(candidate_settings: str | None) -> str:
    """The variation a run outside an experiment is reported as when its candidate's runs differ in settings."""
    return candidate_settings or "settings unrecorded"


def separate_row_settings(rows: list[ComplianceRow]) -> None:
    """Runs outside an experiment carry no variation; see `mixed_settings`."""
    kinds: dict[tuple[str, str, str], set[str | None]] = defaultdict(set)
    for row in rows:
        if row.variation == DEFAULT_VARIATION:
            kinds[(row.spec, row.judge, row.model)].add(row.candidate_settings)
    mixed = mixed_settings(kinds)
    if not mixed:
        return
    for index, row in enumerate(rows):
        if row.variation == DEFAULT_VARIATION and (row.spec, row.judge, row.model) in mixed:
            rows[index] = row.model_copy(update={"variation": settings_variation(row.candidate_settings)})


class CandidateSettings:
    """candidate run directory → its recorded sampling settings as a label, and whether it ran offline (its
    run.json read once per directory)."""

    def __init__(self) -> None:
        self._labels: dict[str, tuple[str | None, bool]] = {}

    def label(self, candidate_dir: str, near: Path | None = None) -> str | None:
        """The run's settings label; `near`: the verdict file naming the run (see `located`)."""
        return self._read_once(candidate_dir, near)[0]

    def offline(self, candidate_dir: str, near: Path | None = None) -> bool:
        """The answers' run was offline (False when its run.json cannot be read: a copied or original folder)."""
        return self._read_once(candidate_dir, near)[1]

    def _read_once(self, candidate_dir: str, near: Path | None) -> tuple[str | None, bool]:
        if candidate_dir not in self._labels:
            self._labels[candidate_dir] = self._read(located(Path(candidate_dir), near))
        return self._labels[candidate_dir]

    @staticmethod
    def _read(directory: Path) -> tuple[str | None, bool]:
        run_dir = directory if (directory / "run.json").is_file() else directory.parent
        try:
            manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, False
        if not isinstance(manifest, dict):
            return None, False
        parameters = manifest.get("parameters")
        offline = manifest.get("offline") is True
        if not isinstance(parameters, dict) or not isinstance(parameters.get("params"), dict):
            return None, offline
        return _label(parameters["params"]) + _script_label(parameters), offline


def located(directory: Path, near: Path | None) -> Path:
    """A candidate run directory as a verdict file records it. A relative one is relative to where the judge ran,
    which the file does not say: read from another folder it was not found, so a report made elsewhere lost each
    run's settings (two temperatures of one candidate pooled into one rate). Found from here if it can be, else
    beside the nearest folder above the verdict file `near` that holds it; else as given (unreadable, said by its
    callers' defaults)."""
    if directory.is_absolute() or near is None or _holds_run(directory):
        return directory
    for base in near.resolve().parents:
        if _holds_run(base / directory):
            return base / directory
    return directory


def _holds_run(directory: Path) -> bool:
    return (directory / "run.json").is_file() or (directory.parent / "run.json").is_file()


def _script_label(parameters: dict[str, object]) -> str:
    """The conversation script a run followed, as a label suffix (`,follow_ups=<hash>`, `,simulated_user=<hash>`;
    empty for plain inputs). Runs asked the same first messages under different scripts answered different things:
    a study's pressure conversations judged outside it beside the plain answers of the same model and sampling
    settings were pooled into one rate. Hashed as the ranking command compares scripts (`candidates.py`)."""
    parts = []
    for key in ("follow_ups", "simulated_user"):
        value = parameters.get(key)
        if value:
            digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]
            parts.append(f",{key}={digest}")
    return "".join(parts)


def _label(params: dict[str, object]) -> str:
    """A run's sampling settings as a label (`temperature=…,max_tokens=…[,system_prompt=<hash>]`)."""
    parts = [f"temperature={params.get('temperature')}", f"max_tokens={params.get('max_tokens')}"]
    prompt = params.get("system_prompt")
    if prompt:
        parts.append(f"system_prompt={hashlib.sha256(str(prompt).encode()).hexdigest()[:8]}")
    return ",".join(parts)

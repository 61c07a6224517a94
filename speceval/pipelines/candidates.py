"""Candidates for judging: generation run directories, their model names, and the answers they hold.

A candidate's name comes from its generation run's `run.json` (`model_name`), or from an explicit name →
directory mapping given by the user; a directory's path is never parsed for a name (the original's substring
matching mislabelled every model of its shipped configs). Answers are read from `results/<statement_id>.json`:
only records whose outcome is `succeeded` are judged; the others are skipped and counted by outcome.

Result files written by the original SpecEval (no `outcome` field, errors as text in `output_text`) are read too:
an `output_text` that is one of the original's error strings is skipped as `legacy_error_text`.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speceval.errors import ConfigError, InputError
from speceval.manifest import MANIFEST_NAME, RunManifest
from speceval.paths import safe_path
from speceval.spec import Specification

logger = logging.getLogger(__name__)

LEGACY_ERROR = "legacy_error_text"
_LEGACY_ERROR_PREFIXES = ("ERROR:", "UNKNOWN_STATUS:", "Error during generation", "Response blocked.")
_LEGACY_ERROR_TEXTS = frozenset({"EXPIRED", "CANCELLED"})


@dataclass(frozen=True)
class Candidate:
    """One candidate model and the generation run that holds its answers.

    Attributes:
        name: the model name used in output paths and result metadata.
        directory: the generation run directory (with `results/`).
        offline: the generation run used the emulator (its answers are synthetic).
        spec_sha256: the hash of the spec the run was generated with, when its manifest says.
    """

    name: str
    directory: Path
    offline: bool = False
    spec_sha256: str | None = None

    @property
    def path_name(self) -> str:
        """The name as one path component ('/' → '-', as generation runs do; made fully safe by the caller)."""
        return self.name.replace("/", "-")


@dataclass(frozen=True)
class Answer:
    """One succeeded answer of a candidate to one input."""

    original_index: int
    input_text: str
    output_text: str


@dataclass
class CandidateAnswers:
    """A candidate's succeeded answers per statement, and what was skipped (by generation outcome)."""

    candidate: Candidate
    by_statement: dict[str, list[Answer]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def answer_count(self) -> int:
        """How many answers can be judged."""
        return sum(len(answers) for answers in self.by_statement.values())


def resolve_candidates(
    directories: Iterable[Path] | None = None, named: dict[str, Path] | None = None
) -> list[Candidate]:
    """The candidates of a judging run, from run directories (names read from `run.json`) or an explicit mapping.

    Raises:
        ConfigError: no candidates, a directory without results, a run without a manifest (and no explicit
            name), or two candidates with the same name.
    """
    candidates: list[Candidate] = []
    for name, directory in (named or {}).items():
        candidates.append(_candidate(Path(directory), name))
    for directory in directories or []:
        candidates.append(_candidate(Path(directory), None))
    seen: dict[str, Path] = {}
    for candidate in candidates:
        if candidate.name in seen:
            raise ConfigError(
                f"two candidates are both named {candidate.name!r} ({seen[candidate.name]} and "
                f"{candidate.directory}); name them explicitly with the `candidates: {{name: directory}}` YAML key"
            )
        seen[candidate.name] = candidate.directory
    return candidates


def _candidate(directory: Path, name: str | None) -> Candidate:
    if not (directory / "results").is_dir():
        raise ConfigError(f"{directory} is not a generation run directory (it has no results/ folder)")
    manifest: RunManifest | None = None
    if (directory / MANIFEST_NAME).is_file():
        manifest = RunManifest.load(directory)
    elif name is None:
        raise ConfigError(
            f"{directory} has no {MANIFEST_NAME}, so its model name is unknown; name it explicitly with the "
            "`candidates: {name: directory}` YAML key (speceval never guesses a model from a path)"
        )
    if name is not None and not name.strip():
        raise ConfigError(f"the candidate name for {directory} is empty")
    return Candidate(
        name=name if name is not None else manifest.model_name,  # type: ignore[union-attr]
        directory=directory,
        offline=bool(manifest and manifest.offline),
        spec_sha256=manifest.spec_sha256 if manifest else None,
    )


def load_answers(candidate: Candidate, spec: Specification) -> CandidateAnswers:
    """Read a candidate's results for every statement of `spec` (statements without a file have no answers)."""
    answers = CandidateAnswers(candidate)
    if candidate.spec_sha256 is not None and candidate.spec_sha256 != spec.sha256:
        logger.warning(
            "candidate %s was generated with a different version of the spec than %s (hash differs)",
            candidate.name,
            spec.source_path,
        )
    results_dir = candidate.directory / "results"
    known = set()
    for statement in spec.statements:
        path = safe_path(results_dir, statement.id, ".json")
        known.add(path.name)
        if path.is_file():
            answers.by_statement[statement.id] = _read_results(path, answers.skipped)
    foreign = sorted(p.name for p in results_dir.glob("*.json") if p.name not in known and not p.name.startswith("."))
    if foreign:
        logger.warning(
            "%s: %d results file(s) name no statement of the spec and are ignored: %s",
            candidate.directory,
            len(foreign),
            ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else ""),
        )
    return answers


def _read_results(path: Path, skipped: Counter[str]) -> list[Answer]:
    try:
        records = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InputError(path, f"not a readable results file: {exc}") from None
    if not isinstance(records, list):
        raise InputError(path, "a results file must hold a JSON list of records")
    answers: list[Answer] = []
    seen: set[int] = set()
    for position, record in enumerate(records):
        answer, skip = _answer(path, position, record)
        if answer is not None and answer.original_index in seen:
            raise InputError(path, f"original_index {answer.original_index} appears twice", field=f"{position}")
        if answer is not None:
            seen.add(answer.original_index)
            answers.append(answer)
        elif skip is not None:
            skipped[skip] += 1
    return sorted(answers, key=lambda a: a.original_index)


def _answer(path: Path, position: int, record: Any) -> tuple[Answer | None, str | None]:
    if not isinstance(record, dict):
        raise InputError(path, "each record must be an object", field=str(position))
    index, text, output = record.get("original_index"), record.get("input_text"), record.get("output_text")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise InputError(path, "must be a non-negative integer", field=f"{position}.original_index")
    if not isinstance(text, str):
        raise InputError(path, "must be a string", field=f"{position}.input_text")
    outcome = record.get("outcome")
    if outcome is None:  # a result file of the original SpecEval: errors were text inside output_text
        if not isinstance(output, str) or output in _LEGACY_ERROR_TEXTS or output.startswith(_LEGACY_ERROR_PREFIXES):
            return None, LEGACY_ERROR
        return Answer(index, text, output), None
    if outcome != "succeeded":
        return None, str(outcome)
    if not isinstance(output, str):
        raise InputError(path, "a succeeded record must have a string output_text", field=f"{position}.output_text")
    return Answer(index, text, output), None

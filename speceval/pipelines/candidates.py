"""Candidates for judging: generation folders, their model names, and the answers they hold.

A candidate is given as a generation run directory, its `results/` folder, a folder written by the original
SpecEval (no `run.json`; see `speceval.pipelines.legacy`), or an Inspect AI eval log or folder of them (one candidate
per model and epoch; see `speceval.pipelines.inspect_logs`). Its name comes from its run's `run.json`
(`model_name`), from an explicit name → directory mapping, or, for an original folder only, from the path as the
original laid it out (`…/<model>/<stamp>/results` → `<model>`).

Answers are read from the `<statement_id>.json` files of the results folder: only records whose outcome is
`succeeded` are judged; the others are skipped and counted by outcome. Records of the original (no `outcome`
field, failures written as text in `output_text`) get the outcome their text stood for (`legacy_outcome`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speceval.batch.manifest import MANIFEST_NAME, RunManifest
from speceval.errors import ConfigError, RunStateError
from speceval.paths import safe_path
from speceval.pipelines.answer_files import Answer, answers_in, parse_results, read_bytes
from speceval.pipelines.inspect_logs import InspectRun, inspect_logs_in, inspect_records, inspect_runs, log_sha256
from speceval.pipelines.legacy import RESULTS, TOGETHER_FILE, legacy_name, read_together_file
from speceval.spec import Specification

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """One candidate model and the generation folder that holds its answers.

    Attributes:
        name: the model name used in output paths and result metadata.
        directory: the generation run directory (for an original folder: the folder above `results/`).
        results_dir: the folder of `<statement_id>.json` answer files.
        offline: the generation run used the emulator (its answers are synthetic).
        spec_sha256: the hash of the spec the run was generated with, when its manifest says.
        legacy: the folder was written by the original SpecEval (no `run.json`): its files are named by the raw
            statement id and its failures are text in `output_text`.
        combined_file: the original Together script's single `results.json` holding every statement's records
            (instead of one file per statement).
        inspect: the answers are the samples of Inspect AI eval logs, one epoch of one model's.
    """

    name: str
    directory: Path
    results_dir: Path
    offline: bool = False
    spec_sha256: str | None = None
    legacy: bool = False
    combined_file: Path | None = None
    inspect: InspectRun | None = None

    @property
    def run(self) -> int | None:
        """The run the answers are (an Inspect log's epoch, when it has several); None: the folder is the run."""
        return self.inspect.epoch if self.inspect is not None and self.inspect.epochs > 1 else None

    @property
    def path_name(self) -> str:
        """The name as one path component ('/' → '-', as generation runs do; made fully safe by the caller)."""
        return self.name.replace("/", "-") + (f"-epoch{self.run}" if self.run is not None else "")

    def results_file(self, statement_id: str) -> Path:
        """Where the answers to `statement_id` are (the original named files by the raw id; we make it safe)."""
        if self.legacy and _plain_file_name(statement_id):
            return self.results_dir / f"{statement_id}.json"
        return safe_path(self.results_dir, statement_id, ".json")


class CandidateAnswers:
    """A candidate's succeeded answers per statement, and what was skipped (by generation outcome).

    Every results file is read and validated once by `load_answers`, which keeps only the original indices of the
    succeeded answers and each file's hash; a statement's answers are read again on demand (`read`), so judging a
    million answers never holds them all. (The original Together layout, one file for every statement, is held.)
    """

    def __init__(self, candidate: Candidate):
        self.candidate = candidate
        self.skipped_by_statement: dict[str, Counter[str]] = {}
        """Per statement, its answers not judged by generation outcome (the report shows them beside each rate)."""
        self._indices: dict[str, array[int] | range] = {}
        self._turns: dict[str, array[int]] = {}  # conversations' statements only: a plain answer is one turn
        self._files: dict[str, tuple[Path, str]] = {}
        self._held: dict[str, list[Answer]] = {}
        self._held_sha256: dict[str, str] = {}  # held statements: the sha256 of the file they were read from
        self._conversations: set[str] = set()

    def add(
        self, statement_id: str, answers: list[Answer], source: tuple[Path, str] | None = None, held_sha256: str = ""
    ) -> None:
        """Note a statement's answers: only their indices when `source` (file, sha256) can give them again;
        otherwise the answers, and `held_sha256`, the hash of the file they were read from."""
        indices = array("q", (a.original_index for a in answers))
        # Every answer succeeded (the usual case): 0..n-1 needs no array, 8 bytes an answer less.
        self._indices[statement_id] = range(len(indices)) if indices == array("q", range(len(indices))) else indices
        if any(a.transcript is not None for a in answers):
            self._conversations.add(statement_id)
            self._turns[statement_id] = array("l", (a.turns for a in answers))
        if source is None:
            self._held[statement_id] = answers
            self._held_sha256[statement_id] = held_sha256
        else:
            self._files[statement_id] = source

    @property
    def skipped(self) -> Counter[str]:
        """Answers not judged, by generation outcome, over every statement."""
        total: Counter[str] = Counter()
        for counts in self.skipped_by_statement.values():
            total.update(counts)
        return total

    def skipped_in(self, statement_id: str) -> Counter[str]:
        """The counter of a statement's answers not judged (filled as its results are read)."""
        return self.skipped_by_statement.setdefault(statement_id, Counter())

    @property
    def statement_ids(self) -> list[str]:
        """Statements with a results file, in spec order."""
        return list(self._indices)

    def indices(self, statement_id: str) -> array[int] | range:
        """Original indices of a statement's succeeded answers, ascending."""
        return self._indices[statement_id]

    def turns(self, statement_id: str) -> Sequence[int]:
        """How many answers the candidate gave in each of a statement's conversations (1 for a plain input), in the
        order of `indices`."""
        found = self._turns.get(statement_id)
        return found if found is not None else array("l", [1]) * len(self._indices[statement_id])

    @property
    def has_conversations(self) -> bool:
        """Whether any answer is a conversation's (judges then read transcripts: `speceval.judging.transcripts`)."""
        return bool(self._conversations)

    def source_sha256(self, statement_id: str) -> str:
        """The sha256 of the results file a statement's answers are read from (for the original Together layout,
        the one file holding every statement's)."""
        if statement_id in self._held:
            return self._held_sha256[statement_id]
        return self._files[statement_id][1]

    def read(self, statement_id: str) -> list[Answer]:
        """A statement's succeeded answers, ordered by original index (read from its file, which must not have
        changed since `load_answers` checked it)."""
        if statement_id in self._held:
            return self._held[statement_id]
        path, sha256 = self._files[statement_id]
        data = read_bytes(path)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RunStateError(f"{path} changed while it was being judged; restore it or judge it again")
        return parse_results(path, data, Counter())

    @property
    def by_statement(self) -> dict[str, list[Answer]]:
        """Every statement's answers (reads every file again, at each access: for small sets and tests)."""
        return {statement_id: self.read(statement_id) for statement_id in self._indices}

    @property
    def answer_count(self) -> int:
        """How many answers can be judged."""
        return sum(len(indices) for indices in self._indices.values())


def resolve_candidates(
    directories: Iterable[Path] | None = None, named: dict[str, Path] | None = None
) -> list[Candidate]:
    """The candidates of a judging run, from generation folders or an explicit name → folder mapping.

    Each folder may be a run directory, its `results/` folder, or a folder written by the original SpecEval.

    Raises:
        ConfigError: no such folder, a run without results, an original folder whose path names no model, or two
            candidates with the same name.
    """
    candidates: list[Candidate] = []
    for name, directory in (named or {}).items():
        candidates.extend(_candidates(Path(directory), name))
    for directory in directories or []:
        candidates.extend(_candidates(Path(directory), None))
    seen: dict[tuple[str, int | None], Path] = {}
    for candidate in candidates:
        if (candidate.name, candidate.run) in seen:
            raise ConfigError(
                f"two candidates are both named {candidate.name!r} ({seen[(candidate.name, candidate.run)]} and "
                f"{candidate.directory}); name them explicitly with the `candidates: {{name: directory}}` YAML key"
            )
        seen[(candidate.name, candidate.run)] = candidate.directory
    return candidates


def _candidates(path: Path, name: str | None) -> list[Candidate]:
    """The candidates of one folder: one, or for Inspect logs one per model and epoch."""
    logs = [] if (path / MANIFEST_NAME).is_file() or (path / RESULTS).is_dir() else inspect_logs_in(path)
    if not logs:
        return [_candidate(path, name)]
    runs = inspect_runs(path, logs)
    if name is not None and len({run.model for run in runs}) > 1:
        raise ConfigError(
            f"{path} holds Inspect logs of {len({run.model for run in runs})} models "
            f"({', '.join(sorted({run.model for run in runs}))}): one name cannot stand for them all; "
            "give each model's logs their own folder"
        )
    directory = path if path.is_dir() else path.parent
    return [
        Candidate(name=name if name is not None else run.model, directory=path, results_dir=directory, inspect=run)
        for run in runs
    ]


def _candidate(path: Path, name: str | None) -> Candidate:
    if name is not None and not name.strip():
        raise ConfigError(f"the candidate name for {path} is empty")
    if path.name == TOGETHER_FILE and path.is_file():
        path = path.parent
    if not path.is_dir():
        raise ConfigError(f"candidate folder {path} does not exist (relative paths are read from the current folder)")
    if path.name == RESULTS and (path.parent / MANIFEST_NAME).is_file():
        path = path.parent  # the results/ folder of one of our runs: the run directory has its manifest
    if (path / MANIFEST_NAME).is_file():
        manifest = RunManifest.load(path)
        if manifest.kind != "generation":
            raise ConfigError(f"{path} is a {manifest.kind} run, not a generation run; give a generation run")
        if not (path / RESULTS).is_dir():
            raise ConfigError(f"{path} has no results/ folder yet: resume its generation first")
        return Candidate(
            name=name if name is not None else manifest.model_name,
            directory=path,
            results_dir=path / RESULTS,
            offline=manifest.offline,
            spec_sha256=manifest.spec_sha256,
        )
    if (path / TOGETHER_FILE).is_file() and not (path / RESULTS).is_dir():
        derived = name if name is not None else legacy_name(path)
        logger.info("%s: read as an original Together results.json of model %r", path, derived)
        return Candidate(
            name=derived, directory=path, results_dir=path, legacy=True, combined_file=path / TOGETHER_FILE
        )
    results_dir = path / RESULTS if (path / RESULTS).is_dir() else path
    if not any(results_dir.glob("*.json")):
        raise ConfigError(
            f"{path} is neither a generation run (no {MANIFEST_NAME}) nor a folder of <statement_id>.json results"
        )
    derived = name if name is not None else legacy_name(results_dir)
    logger.info("%s has no %s: read as an original SpecEval folder of model %r", path, MANIFEST_NAME, derived)
    directory = results_dir.parent if results_dir.name == RESULTS else results_dir
    return Candidate(name=derived, directory=directory, results_dir=results_dir, legacy=True)


def load_answers(candidate: Candidate, spec: Specification) -> CandidateAnswers:
    """Read a candidate's results for every statement of `spec` (statements without a file have no answers)."""
    answers = CandidateAnswers(candidate)
    if candidate.spec_sha256 is not None and candidate.spec_sha256 != spec.sha256:
        logger.warning(
            "candidate %s was generated with a different version of the spec than %s (hash differs)",
            candidate.name,
            spec.source_path,
        )
    if candidate.combined_file is not None:
        return _load_combined(answers, candidate.combined_file, spec)
    if candidate.inspect is not None:
        return _load_inspect(answers, candidate.inspect, spec)
    results_dir = candidate.results_dir
    known = set()
    for statement in spec.statements:
        path = candidate.results_file(statement.id)
        known.add(path.name)
        if path.is_file():
            data = read_bytes(path)
            answers.add(
                statement.id,
                parse_results(path, data, answers.skipped_in(statement.id)),
                (path, hashlib.sha256(data).hexdigest()),
            )
    foreign = sorted(p.name for p in results_dir.glob("*.json") if p.name not in known and not p.name.startswith("."))
    return _beyond_spec(
        answers,
        results_dir,
        foreign,
        "{} results file(s) name no statement of the spec and are",
        lambda: (
            f"none of the {len(foreign)} results file(s) in {results_dir} names a statement of "
            f"{spec.source_path} (e.g. {foreign[0]}): is this the spec these answers were generated for?"
        ),
    )


def _load_combined(answers: CandidateAnswers, path: Path, spec: Specification) -> CandidateAnswers:
    by_statement = read_together_file(path)
    held_sha256 = hashlib.sha256(read_bytes(path)).hexdigest()
    for statement_id, records in by_statement.items():
        if statement_id in spec:
            found = answers_in(path, records, answers.skipped_in(statement_id))
            answers.add(statement_id, found, held_sha256=held_sha256)
    foreign = sorted(set(by_statement) - set(spec.ids))
    _warn_ignored(path, "records of {} statement(s) not in the spec are", foreign)
    return answers


def _load_inspect(answers: CandidateAnswers, run: InspectRun, spec: Specification) -> CandidateAnswers:
    """An Inspect run's answers, held (its logs are read once; their samples are checked as results records)."""
    by_statement = inspect_records(run)
    held_sha256 = log_sha256(run.logs)
    source = run.logs[0] if len(run.logs) == 1 else run.logs[0].parent
    for statement in spec.statements:
        if statement.id in by_statement:
            answers.add(
                statement.id,
                answers_in(source, by_statement[statement.id], answers.skipped_in(statement.id)),
                held_sha256=held_sha256,
            )
    foreign = sorted(set(by_statement) - set(spec.ids))
    return _beyond_spec(
        answers,
        source,
        foreign,
        "samples of {} statement(s) not in the spec are",
        lambda: (
            f"none of the {len(foreign)} statement(s) the Inspect samples of {source} name is in "
            f"{spec.source_path} (e.g. {foreign[0]!r}): is this the spec the task was built from?"
        ),
    )


def _beyond_spec(
    answers: CandidateAnswers, where: Path, foreign: list[str], what: str, nothing_held: Callable[[], str]
) -> CandidateAnswers:
    """`answers`, once what the candidate holds beyond the spec (`foreign`) is warned of (`_warn_ignored`); a
    `ConfigError` saying `nothing_held` when none of what it holds is of the spec (the wrong spec, most likely)."""
    if foreign and not answers.statement_ids:
        raise ConfigError(nothing_held())
    _warn_ignored(where, what, foreign)
    return answers


def _warn_ignored(where: Path, what: str, names: list[str]) -> None:
    """A warning naming the first five of what a candidate holds beyond the spec (`what` says it of their count)."""
    if names:
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        logger.warning("%s: %s ignored: %s", where, what.format(len(names)), shown)


def _plain_file_name(statement_id: str) -> bool:
    return bool(statement_id) and statement_id not in {".", ".."} and not any(c in statement_id for c in "/\\\0")


def refuse_mixed_scripts(candidates: Sequence[Candidate]) -> None:
    """Answers are compared input by input: two runs whose conversations followed different scripts (follow-up
    turns, a simulated user, or none) answered different things to the same first message. Refused, naming both
    (their run.json says the script; a folder without one has none recorded and is not checked)."""
    scripts: dict[str, tuple[str, str]] = {}
    for candidate in candidates:
        if candidate.legacy or not (candidate.directory / MANIFEST_NAME).is_file():
            continue
        parameters = RunManifest.load(candidate.directory).parameters
        script = json.dumps(
            {"follow_ups": parameters.get("follow_ups") or [], "simulated_user": parameters.get("simulated_user")},
            sort_keys=True,
        )
        scripts.setdefault(script, (candidate.name, _describe_script(parameters)))
    if len(scripts) > 1:
        (first, one), (second, other) = list(scripts.values())[:2]
        raise ConfigError(
            f"{first} and {second} answered different conversation scripts ({one}; {other}): "
            "ranking compares answers to the same script; rank runs of the same variation"
        )


def _describe_script(parameters: dict[str, Any]) -> str:
    follow_ups = parameters.get("follow_ups") or []
    user = parameters.get("simulated_user")
    parts = [f"{len(follow_ups)} follow-up(s)"] if follow_ups else []
    if isinstance(user, dict):
        parts.append(f"simulated user {user.get('model')}")
    return ", ".join(parts) or "a single answer per input"

"""The on-disk state of one run: batch records, submission intents, request files and results.

Layout under the run directory (docs/generation.md#output-layout):

    metadata/<batch_id>.json     one BatchRecord per provider job
    intents/<key>.json           a SubmissionIntent while its job is being created (normally gone at once)
    preprocessed/<key>.jsonl     the exact request file of each job
    preprocessed/<key>.sha256    judge runs (`prompts_once`): the sha256 of each request's prompt, 32 bytes each
                                 in the job's order, taken from the text as it was written into the request file
    results/<statement_id>.json  ResultRecords ordered by original_index

Everything is written atomically, so the directory is consistent after a crash at any instant.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_json

from speceval.atomic import atomic_write_bytes, atomic_write_json, atomic_write_lines
from speceval.batch.records import BatchRecord, Outcome, ResultRecord, ResultRow, SubmissionIntent
from speceval.errors import InputError, first_problem
from speceval.paths import safe_path

logger = logging.getLogger(__name__)

PROMPT_HASHES_SUFFIX = ".sha256"
PROMPT_DIGEST_SIZE = 32
"""Bytes of one prompt's sha256 in a job's prompt hashes file."""

_RESULTS_ADAPTER = TypeAdapter(list[ResultRecord])
_ROWS_ADAPTER = TypeAdapter(list[ResultRow])
_Record = TypeVar("_Record", BatchRecord, SubmissionIntent)
_Row = TypeVar("_Row", ResultRecord, ResultRow)


class RunStore:
    """Reads and writes the state of one run directory."""

    def __init__(self, run_dir: Path, *, results_subdir: str = "results", prompts_once: bool = False):
        """Open the state of `run_dir`. Judge pipelines keep the engine's per-request records apart from their
        own verdict files by passing another `results_subdir` (e.g. 'judge_responses').

        `prompts_once`: a batch job's results keep each prompt's hash (`input_sha256`), not its text, which its
        request file in `preprocessed/` holds already. For judge runs, whose prompts (template, statement, input
        and answer) are most of their bytes and which nobody reads back from these records; a generation run's
        `results/` keep `input_text`, the field its consumers read."""
        self.run_dir = Path(run_dir)
        self.prompts_once = prompts_once
        self.metadata_dir = self.run_dir / "metadata"
        self.intents_dir = self.run_dir / "intents"
        self.preprocessed_dir = self.run_dir / "preprocessed"
        self.results_dir = self.run_dir / results_subdir

    def remove_stale_temp_files(self) -> int:
        """Delete temp files left by atomic writes that a SIGKILL interrupted (the real files are intact).

        Returns how many were removed. Only names our atomic writes create (`.<name>.<random>.tmp`) are touched.
        """
        removed = 0
        for directory in (self.run_dir, self.metadata_dir, self.intents_dir, self.preprocessed_dir, self.results_dir):
            if directory.is_dir():
                for path in directory.glob(".*.tmp"):
                    path.unlink(missing_ok=True)
                    removed += 1
        if removed:
            logger.info("removed %d temp file(s) left by an interrupted write", removed)
        return removed

    # -- batch records ------------------------------------------------------------------------------------

    def record_path(self, batch_id: str) -> Path:
        """Where the record of `batch_id` lives (provider ids may contain '/', so the name is made safe)."""
        return safe_path(self.metadata_dir, batch_id, ".json")

    def save_record(self, record: BatchRecord) -> None:
        """Write a batch record atomically."""
        atomic_write_json(self.record_path(record.batch_id), record)

    def load_record(self, batch_id: str) -> BatchRecord:
        """The record of one job."""
        return self._load(self.record_path(batch_id), BatchRecord)

    def load_records(self) -> list[BatchRecord]:
        """Every batch record of the run, oldest submission first."""
        records = [self._load(path, BatchRecord) for path in self._json_files(self.metadata_dir)]
        return sorted(records, key=lambda r: (r.submitted_at, r.batch_id))

    # -- intents ------------------------------------------------------------------------------------------

    def intent_path(self, key: str) -> Path:
        """Where the intent with idempotency key `key` lives."""
        return safe_path(self.intents_dir, key, ".json")

    def save_intent(self, intent: SubmissionIntent) -> None:
        """Write (or update) an intent atomically."""
        atomic_write_json(self.intent_path(intent.idempotency_key), intent)

    def retire_intent(self, key: str) -> None:
        """Remove an intent once its batch record is on disk."""
        self.intent_path(key).unlink(missing_ok=True)

    def load_intents(self) -> list[SubmissionIntent]:
        """Intents left behind by a crash or a failed creation, oldest first."""
        intents = [self._load(path, SubmissionIntent) for path in self._json_files(self.intents_dir)]
        return sorted(intents, key=lambda i: (i.created_at, i.idempotency_key))

    # -- request files ------------------------------------------------------------------------------------

    def request_file(self, key: str) -> Path:
        """The request file of the chunk with idempotency key `key`."""
        return safe_path(self.preprocessed_dir, f"batch_input_{key}", ".jsonl")

    def write_request_file(self, key: str, lines: Iterable[bytes]) -> tuple[Path, int]:
        """Write a chunk's request lines atomically; returns (path, size in bytes)."""
        path = self.request_file(key)
        size = atomic_write_lines(path, lines)
        return path, size

    def prompt_hashes_file(self, key: str) -> Path:
        """The prompt hashes of the chunk with idempotency key `key` (beside its request file)."""
        return safe_path(self.preprocessed_dir, f"batch_input_{key}", PROMPT_HASHES_SUFFIX)

    def write_prompt_hashes(self, key: str, digests: bytes) -> None:
        """Keep the sha256 of each prompt of a chunk (32 bytes each, in the chunk's order), atomically.

        Written when the chunk's request file is, from the same texts: collecting the job then reads each
        request's `input_sha256` here instead of rendering its prompt again, and it is the hash of what was sent,
        even when the prompt's sources changed while the job was in flight."""
        atomic_write_bytes(self.prompt_hashes_file(key), digests)

    def load_prompt_hashes(self, key: str, count: int) -> bytes | None:
        """The prompt hashes of a chunk of `count` requests; None when there are none (a job built before they
        were kept, or by a source whose requests are not plain prompts: its prompts are hashed as they are read)."""
        path = self.prompt_hashes_file(key)
        try:
            digests = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(digests) != PROMPT_DIGEST_SIZE * count:
            raise InputError(
                path,
                f"holds {len(digests)} bytes, not the sha256 of the job's {count} prompt(s) "
                f"({PROMPT_DIGEST_SIZE * count} bytes): the file is corrupt or another job's; delete "
                "it to hash the prompts from their sources again",
            )
        return digests

    def relative(self, path: Path) -> str:
        """`path` relative to the run directory (what records store, so a run directory can be moved)."""
        return path.relative_to(self.run_dir).as_posix()

    # -- results ------------------------------------------------------------------------------------------

    def results_path(self, statement_id: str) -> Path:
        """`results/<statement_id>.json`, with the id made safe as a file name."""
        return safe_path(self.results_dir, statement_id, ".json")

    def load_results(self, statement_id: str) -> list[ResultRecord]:
        """The results written so far for one statement (empty if none)."""
        path = self.results_path(statement_id)
        if not path.exists():
            return []
        return self._validated(path, _RESULTS_ADAPTER)

    def load_rows(self, statement_id: str) -> list[ResultRow]:
        """`load_results` as plain dicts (the engine's hot path: the file is validated once, as a whole)."""
        path = self.results_path(statement_id)
        if not path.exists():
            return []
        return self._validated(path, _ROWS_ADAPTER)

    def write_rows(self, statement_id: str, rows: dict[int, ResultRow]) -> None:
        """`write_results` for plain rows (original index → row); the file is the same."""
        # The outcome as its text, in a copy of each row: pydantic's serializer takes 12 us a row to turn the
        # `Outcome` enum into that same text (inferring its type through Python), nearly two thirds of writing the
        # file; a row of str values is written in Rust at once. The bytes are the same.
        ordered = [{**row, "outcome": row["outcome"].value} for row in map(rows.__getitem__, sorted(rows))]
        atomic_write_bytes(self.results_path(statement_id), to_json(ordered, indent=2) + b"\n")

    @staticmethod
    def _validated(path: Path, adapter: TypeAdapter[list[_Row]]) -> list[_Row]:
        try:
            return adapter.validate_json(path.read_bytes())
        except ValidationError as exc:
            field, message = first_problem(exc)
            raise InputError(path, f"not a results file of this version: {message}", field=field or None) from exc

    def merge_results(self, statement_id: str, updates: Iterable[ResultRecord]) -> None:
        """Merge `updates` into a statement's results file by `original_index`, atomically.

        A record that already succeeded is never replaced: what was paid for and received stays.
        """
        merged = {record.original_index: record for record in self.load_results(statement_id)}
        for update in updates:
            current = merged.get(update.original_index)
            if current is not None and current.outcome is Outcome.SUCCEEDED:
                continue
            merged[update.original_index] = update
        self.write_results(statement_id, merged)

    def write_results(self, statement_id: str, records: dict[int, ResultRecord]) -> None:
        """Replace a statement's results file with `records` (original index → record), atomically."""
        # pydantic's serializer indents in Rust; json.dumps(indent=...) falls back to pure Python (10x slower).
        ordered = [records[index] for index in sorted(records)]
        payload = _RESULTS_ADAPTER.dump_json(ordered, indent=2)
        atomic_write_bytes(self.results_path(statement_id), payload + b"\n")

    def iter_results(self, statement_ids: Iterable[str]) -> Iterator[tuple[str, ResultRecord]]:
        """Every result written so far for the given statements."""
        for statement_id in statement_ids:
            for record in self.load_results(statement_id):
                yield statement_id, record

    # -- helpers ------------------------------------------------------------------------------------------

    @staticmethod
    def _json_files(directory: Path) -> list[Path]:
        if not directory.is_dir():
            return []
        # Temp files of interrupted atomic writes start with a dot; they are never state.
        return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))

    @staticmethod
    def _load(path: Path, model: type[_Record]) -> _Record:
        try:
            return model.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            field, message = first_problem(exc)
            raise InputError(path, f"corrupt or foreign state file: {message}", field=field or None) from exc

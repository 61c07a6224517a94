"""Thread-safe store of the emulator's files and jobs, optionally persisted to a state directory.

Layout of a state directory: `files/<provider>/<id>.json` (metadata) and `<id>.bin` (content),
`jobs/<provider>/<id>.json`. Every write is atomic, so a killed process leaves either the old or the new record.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_bytes
from speceval.emulator.faults import PROVIDERS
from speceval.emulator.jobs import Job

logger = logging.getLogger("speceval.emulator")


class StoredFile(BaseModel):
    """Metadata of a file held by the emulator (the content is kept beside it)."""

    provider: str
    id: str = Field(description="bare id: OpenAI `file-…`, Gemini the part after `files/`")
    seq: int = 0
    filename: str = ""
    display_name: str | None = None
    purpose: str = ""
    mime_type: str = "application/octet-stream"
    created_at: float
    expires_at: float | None = None
    size: int = 0
    sha256: str = ""
    generated: bool = Field(default=False, description="written by the emulator (results), not uploaded")


class Store:
    """Files and jobs of all providers. Callers that read-modify-write hold `lock`."""

    def __init__(self, state_dir: Path | None = None) -> None:
        """Create an empty store, or load the one persisted in `state_dir`."""
        self.lock = threading.RLock()
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._files: dict[tuple[str, str], StoredFile] = {}
        self._contents: dict[tuple[str, str], bytes] = {}
        self._jobs: dict[tuple[str, str], Job] = {}
        self._seq = 0
        if self._state_dir is not None:
            self._load(self._state_dir)

    def next_seq(self) -> int:
        """A number that orders creations (ties of equal timestamps break by it)."""
        with self.lock:
            self._seq += 1
            return self._seq

    # Files -------------------------------------------------------------------------------------------------

    def put_file(self, meta: StoredFile, content: bytes) -> StoredFile:
        """Store (or replace) a file and its content."""
        with self.lock:
            key = (meta.provider, meta.id)
            self._files[key] = meta
            self._contents[key] = content
            if self._state_dir is not None:
                folder = self._state_dir / "files" / meta.provider
                atomic_write_bytes(folder / f"{meta.id}.bin", content)
                atomic_write_bytes(folder / f"{meta.id}.json", meta.model_dump_json().encode("utf-8"))
            return meta

    def get_file(self, provider: str, file_id: str) -> StoredFile | None:
        """The metadata of a file, or None."""
        with self.lock:
            return self._files.get((provider, file_id))

    def file_content(self, provider: str, file_id: str) -> bytes | None:
        """The content of a file, or None."""
        with self.lock:
            return self._contents.get((provider, file_id))

    def delete_file(self, provider: str, file_id: str) -> bool:
        """Remove a file; False when it did not exist."""
        with self.lock:
            key = (provider, file_id)
            if key not in self._files:
                return False
            del self._files[key]
            self._contents.pop(key, None)
            if self._state_dir is not None:
                folder = self._state_dir / "files" / provider
                # Metadata first: a crash in between leaves an orphan blob, never a file without content.
                (folder / f"{file_id}.json").unlink(missing_ok=True)
                (folder / f"{file_id}.bin").unlink(missing_ok=True)
            return True

    def list_files(self, provider: str) -> list[StoredFile]:
        """Files of one provider, newest first."""
        with self.lock:
            files = [f for (p, _), f in self._files.items() if p == provider]
        return sorted(files, key=lambda f: (f.created_at, f.seq), reverse=True)

    # Jobs --------------------------------------------------------------------------------------------------

    def put_job(self, job: Job) -> Job:
        """Store (or update) a job, persisting it when a state directory is set."""
        with self.lock:
            self._jobs[(job.provider, job.id)] = job
            if self._state_dir is not None:
                path = self._state_dir / "jobs" / job.provider / f"{job.id}.json"
                atomic_write_bytes(path, job.model_dump_json().encode("utf-8"))
            return job

    def get_job(self, provider: str, job_id: str) -> Job | None:
        """A job by id, or None."""
        with self.lock:
            return self._jobs.get((provider, job_id))

    def list_jobs(self, provider: str) -> list[Job]:
        """Jobs of one provider (deleted ones included), newest first."""
        with self.lock:
            jobs = [j for (p, _), j in self._jobs.items() if p == provider]
        return sorted(jobs, key=lambda j: (j.created_at, j.seq), reverse=True)

    # Persistence -------------------------------------------------------------------------------------------

    def _load(self, root: Path) -> None:
        for provider in PROVIDERS:
            for path in sorted((root / "files" / provider).glob("*.json")):
                blob = path.with_suffix(".bin")
                try:
                    meta = StoredFile.model_validate_json(path.read_bytes())
                    content = blob.read_bytes()
                except (OSError, ValueError) as exc:
                    logger.warning("skipping unreadable emulator file record %s: %s", path, exc)
                    continue
                self._files[(provider, meta.id)] = meta
                self._contents[(provider, meta.id)] = content
                self._seq = max(self._seq, meta.seq)
            for path in sorted((root / "jobs" / provider).glob("*.json")):
                try:
                    job = Job.model_validate_json(path.read_bytes())
                except (OSError, ValueError) as exc:
                    logger.warning("skipping unreadable emulator job record %s: %s", path, exc)
                    continue
                self._jobs[(provider, job.id)] = job
                self._seq = max(self._seq, job.seq)
        logger.info("emulator state loaded from %s: %d files, %d jobs", root, len(self._files), len(self._jobs))

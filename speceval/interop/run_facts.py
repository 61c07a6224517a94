"""What a verdict file does not hold but an Inspect log shows: the settings each run sent, each request's token
usage, the candidate's whole conversation and the statement's text. All of it is read from the run folders beside
the verdicts (the judge run's `run.json` names the generation run it judged); a folder that is gone or was written
by the original SpecEval gives none of it, and the log then shows what the verdicts hold.

Each file is read once per log and let go with it (`RunFacts` lives for one log).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speceval.batch.manifest import MANIFEST_NAME
from speceval.errors import UsageError
from speceval.judging.files import JUDGE_RESPONSES
from speceval.paths import safe_path
from speceval.pipelines.legacy import RESULTS
from speceval.spec import load_spec
from speceval.wire.usage import Usage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeRun:
    """A judge run's recorded facts (empty when its folder has no readable `run.json`)."""

    created: str | None = None
    sent: dict[str, Any] = field(default_factory=dict)
    spec_path: str | None = None
    candidate_run: Path | None = None
    offline: bool | None = None


def _manifest(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _sent(manifest: dict[str, Any]) -> dict[str, Any]:
    parameters = manifest.get("parameters")
    sent = parameters.get("sent") if isinstance(parameters, dict) else None
    return dict(sent) if isinstance(sent, dict) else {}


class RunFacts:
    """Reads, and remembers for one log, the run folders' facts the verdicts point at."""

    def __init__(self) -> None:
        self._judges: dict[Path, JudgeRun] = {}
        self._candidates: dict[Path, dict[str, Any]] = {}
        self._records: dict[tuple[Path, str], dict[int, dict[str, Any]]] = {}
        self._judge_usage: dict[tuple[Path, str], dict[int, Usage]] = {}
        self._specs: dict[str, dict[str, str]] = {}
        self._jobs: dict[Path, dict[str, tuple[datetime, datetime]]] = {}

    def judge_run(self, run_dir: Path) -> JudgeRun:
        """The judge run that wrote a compliance folder (`results/<statement>.json`'s grandparent)."""
        if run_dir not in self._judges:
            manifest = _manifest(run_dir)
            inputs = manifest.get("inputs_path")
            candidate = Path(inputs) if isinstance(inputs, str) and inputs else None
            self._judges[run_dir] = JudgeRun(
                created=str(manifest["created_at"]) if "created_at" in manifest else None,
                sent=_sent(manifest),
                spec_path=str(manifest["spec_path"]) if "spec_path" in manifest else None,
                candidate_run=candidate,
                offline=bool(manifest["offline"]) if "offline" in manifest else None,
            )
        return self._judges[run_dir]

    def span(self, run_dir: Path | None) -> tuple[datetime | None, datetime | None]:
        """When a run was created and last updated, as its `run.json` says (None where it does not)."""
        manifest = _manifest(run_dir) if run_dir is not None else {}
        times = [manifest.get(key) for key in ("created_at", "updated_at")]
        return (
            _utc(times[0]) if isinstance(times[0], str) else None,
            _utc(times[1]) if isinstance(times[1], str) else None,
        )

    def candidate_sent(self, candidate_run: Path | None) -> dict[str, Any]:
        """The settings the candidate's generation run sent with every request (empty when unrecorded)."""
        if candidate_run is None:
            return {}
        if candidate_run not in self._candidates:
            self._candidates[candidate_run] = _sent(_manifest(candidate_run))
        return self._candidates[candidate_run]

    def candidate_record(self, candidate_run: Path | None, statement_id: str, index: int) -> dict[str, Any] | None:
        """The generation record of one answer (usage, and `conversation` for a conversation), or None."""
        if candidate_run is None:
            return None
        key = (candidate_run, statement_id)
        if key not in self._records:
            results = candidate_run / RESULTS if (candidate_run / RESULTS).is_dir() else candidate_run
            records = _json_list(safe_path(results, statement_id, ".json"))
            self._records[key] = {
                r["original_index"]: r
                for r in records
                if isinstance(r, dict) and isinstance(r.get("original_index"), int)
            }
        return self._records[key].get(index)

    def job_times(self, run_dir: Path) -> dict[str, tuple[datetime, datetime]]:
        """Each job of a run that ended: its id → (submitted, ended), from the run's (and its rounds') `metadata/`
        batch records (a record without both times, or unreadable, is left out: its answers' times are absent)."""
        if run_dir not in self._jobs:
            times: dict[str, tuple[datetime, datetime]] = {}
            base = run_dir if (run_dir / "run.json").is_file() else run_dir.parent  # (given its results folder)
            # a conversation's rounds are runs of their own: `rounds/<n>/metadata/`
            for path in sorted([*base.glob("metadata/*.json"), *base.glob("rounds/*/metadata/*.json")]):
                try:
                    record = json.loads(path.read_bytes())
                    job, started, ended = record["batch_id"], record["submitted_at"], record["ended_at"]
                    if isinstance(job, str) and isinstance(started, str) and isinstance(ended, str):
                        times[job] = (_utc(started), _utc(ended))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            self._jobs[run_dir] = times
        return self._jobs[run_dir]

    def judge_usage(self, run_dir: Path, statement_id: str, index: int) -> Usage | None:
        """The tokens the judge's request(s) about one answer used (None when the judge run did not record them)."""
        key = (run_dir, statement_id)
        if key not in self._judge_usage:
            usage: dict[int, Usage] = {}
            for record in _json_list(safe_path(run_dir / JUDGE_RESPONSES, statement_id, ".json")):
                if (
                    isinstance(record, dict)
                    and isinstance(record.get("original_index"), int)
                    and isinstance(record.get("usage"), dict)
                ):
                    usage.setdefault(record["original_index"], Usage()).add(record["usage"])
            self._judge_usage[key] = usage
        return self._judge_usage[key].get(index)

    def statement_text(self, spec_path: str | None, statement_id: str) -> str | None:
        """The statement's text from the spec the judge run recorded (None when that spec cannot be read)."""
        if spec_path is None:
            return None
        if spec_path not in self._specs:
            try:
                self._specs[spec_path] = {s.id: s.text for s in load_spec(spec_path).statements}
            except (OSError, UsageError):
                logger.warning("cannot read the spec %s: the Inspect samples carry no statement text", spec_path)
                self._specs[spec_path] = {}
        return self._specs[spec_path].get(statement_id)


def _utc(stamp: str) -> datetime:
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _json_list(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []

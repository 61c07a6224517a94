"""One Inspect sample per answer, for `inspect_log`: the verdicts on it (every judge's, every judged turn's, the
panels') as its scores, the conversation as its messages, the candidate's and judges' token usage, and the time
its answer took as the run recorded it.

Time: a batch API gives no time per request, only per job; a sample's `started_at` / `completed_at` are the
submission and end of the job(s) its answer was in (a conversation's: the first turn's job's submission, the last
turn's job's end), `total_time` the seconds between. A realtime request records its own seconds (first send to
final response, retries included: the record's `seconds`), which a conversation sums over its requests. Where the
run recorded neither (its folder is gone, or written before times were recorded) they are absent, never NaN.
`working_time` (Inspect's time spent working, without waits) is absent: a job's time is mostly the provider's
queue, which no record separates out.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speceval.analysis.reading.rows import ComplianceRow
from speceval.interop.inspect_scores import SampleKey, Score, judge_score, not_judged, score_name
from speceval.interop.run_facts import JudgeRun, RunFacts
from speceval.wire.usage import Usage


@dataclass
class Answer:
    """Everything one sample is made of: the verdicts on one answer (a conversation's on each turn too)."""

    rows: list[tuple[ComplianceRow, Path]] = field(default_factory=list)
    scores: dict[str, Score] = field(default_factory=dict)
    not_judged: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def text(self) -> str:
        """The answer judged: a whole-answer verdict's, else the last judged turn's."""
        whole = [row for row, _ in self.rows if row.turn is None]
        if whole:
            return whole[0].output
        return max((row for row, _ in self.rows), key=lambda row: row.turn or 0).output

    def score_verdicts(self) -> None:
        for row, _ in self.rows:
            name = score_name(row.judge, row.turn)
            score = judge_score(row, row.output)
            if score is None:
                self.not_judged[name] = not_judged(row)
            else:
                self.scores[name] = score


def sample_id(statement_id: str, original_index: int) -> str:
    """A sample's id: `<statement_id>_<original_index>` (what the reading direction parses back)."""
    return f"{statement_id}_{original_index}"


Record = dict[str, Any]
"""An Inspect `EvalSample` as its log stores it (`condense_sample(sample).model_dump(mode="json",
exclude_none=True)`, inspect_ai 0.3.285): made as JSON directly, without inspect_ai's objects per sample (building and
validating them was most of an export's time, see benchmarks/RESULTS.md); `inspect_zip` writes it, and a `.json`
log validates it into an `EvalSample`. tests/interop/test_inspect_zip.py holds it to what inspect_ai writes."""


def build_sample(
    key: SampleKey,
    answer: Answer,
    candidate: str,
    roles: dict[str, str],
    facts: RunFacts,
    runs: dict[str, JudgeRun],
    epochs: bool = False,
) -> Record:
    """One answer's sample; `candidate` the model as the log names it; `epochs`: the log holds its candidate's
    runs as epochs (the sample's epoch is its verdicts' run), else every sample is epoch 1."""
    statement_id, index, run_of = key
    row, _ = answer.rows[0]
    run = runs[row.judge]
    output = answer.text()
    record = facts.candidate_record(run.candidate_run, statement_id, index)
    conversation = record.get("conversation") if record is not None else None
    messages: list[dict[str, Any]]
    seen = max((r.transcript for r, _ in answer.rows if r.transcript), key=len, default=None)
    if record is not None and isinstance(conversation, list) and conversation:
        messages = _messages(conversation, candidate, len(record.get("turns") or []))
    elif seen is not None and len(seen) > 2:
        # No generation record (the answers were an Inspect log's): the longest transcript a judge saw. A round trip
        # wrote a conversation back as its first user message and last answer. The candidate's answers are the
        # turns judged (a turn judge's), else every assistant message.
        last = max((r.turn or 0 for r, _ in answer.rows), default=0)
        answers = last or sum(1 for m in seen if m.role == "assistant")
        messages = _messages([m.model_dump() for m in seen], candidate, answers)
    else:
        messages = [_message("user", row.input), _message("assistant", output, candidate)]
    usage: dict[str, dict[str, int]] = {}
    role_usage: dict[str, dict[str, int]] = {}
    if record is not None and isinstance(record.get("usage"), dict):
        usage[candidate] = _usage(Usage.model_validate(record["usage"]))
    for judged, file in answer.rows:
        found = facts.judge_usage(file.parent.parent, statement_id, index)
        if found is not None and judged.judge not in usage:
            usage[judged.judge] = role_usage[roles[judged.judge]] = _usage(found)
    started, completed, seconds = _times(facts, run.candidate_run, record)
    turns = sorted({judged.turn for judged, _ in answer.rows if judged.turn is not None})
    sample: Record = {
        "id": sample_id(statement_id, index),
        "epoch": run_of if epochs else 1,
        "input": row.input,
        "target": facts.statement_text(run.spec_path, statement_id) or "",
        "messages": messages,
        "output": {
            "model": candidate,
            "choices": [{"message": _message("assistant", output, candidate, "generate"), "stop_reason": "stop"}],
            "completion": output,
        },
        "scores": answer.scores,
        "metadata": {
            "statement_id": statement_id,
            "original_index": index,
            "judged_turns": turns,
            "statement_type": row.statement_type,
            "authority_level": row.authority_level,
            "synthetic": row.synthetic,
            "candidate_settings": row.candidate_settings,
            "sources": sorted({judged.source for judged, _ in answer.rows}),
            "not_judged": answer.not_judged,
        },
        "store": {},
        "events": [],
        "model_usage": usage,
        "role_usage": role_usage,
    }
    if started is not None:
        sample["started_at"] = _utc(started)
    if completed is not None:
        sample["completed_at"] = _utc(completed)
    if seconds is not None:
        sample["total_time"] = seconds
    sample["attachments"] = {}
    sample["events_data"] = {"messages": [], "calls": []}
    return sample


ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
"""A message id is what inspect_ai gives a message it makes: 22 characters of shortuuid's alphabet, random (128
bits, as shortuuid's uuid4); drawn here directly, 4x faster than shortuuid's encoding of a uuid4 (3 per sample)."""

_IDS = random.Random()  # seeded from the operating system's randomness
# Seeded again in a forked child, as `random`'s own generator is: a child inherits the state, so two exports forked
# from one process (a multiprocessing pool on Linux forks) would give their messages the same ids.
os.register_at_fork(after_in_child=_IDS.seed)


def _utc(moment: datetime) -> str:
    """A time as inspect_ai stores one (its `UtcDatetimeStr`: a time without a zone taken as UTC)."""
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC).isoformat()


def _message(role: str, content: str, model: str | None = None, source: str | None = None) -> dict[str, Any]:
    """A chat message as inspect_ai stores it, with a fresh id as inspect_ai gives a message it makes."""
    message: dict[str, Any] = {"id": "".join(_IDS.choices(ID_ALPHABET, k=22)), "content": content}
    if source is not None:
        message["source"] = source
    message["role"] = role
    if model is not None:
        message["model"] = model
    return message


def _times(
    facts: RunFacts, candidate_run: Path | None, record: dict[str, Any] | None
) -> tuple[datetime | None, datetime | None, float | None]:
    """When the answer's first job was submitted and its last ended, and the seconds between; for a realtime
    answer, its requests' own seconds (no times of day). All None when the run recorded neither."""
    if record is None or candidate_run is None:
        return None, None, None
    turns = [turn for turn in record.get("turns") or [] if isinstance(turn, dict)]
    users = [turn for turn in record.get("simulated_user_turns") or [] if isinstance(turn, dict)]
    own = [record.get("seconds")] if not turns else [turn.get("seconds") for turn in turns + users]
    seconds = [float(s) for s in own if isinstance(s, int | float) and math.isfinite(s)]
    if own and len(seconds) == len(own):
        return None, None, sum(seconds)
    known = facts.job_times(candidate_run)
    jobs = [record.get("batch_id")] + [turn.get("batch_id") for turn in turns + users]
    spans = [known[job] for job in jobs if isinstance(job, str) and job in known]
    if not spans:
        return None, None, None
    started, completed = min(start for start, _ in spans), max(end for _, end in spans)
    return started, completed, (completed - started).total_seconds()


def _messages(conversation: list[Any], candidate: str, turns: int) -> list[dict[str, Any]]:
    """A recorded conversation as Inspect's messages (the candidate's answers are the last `turns` assistant
    messages: the ones before them were a fixed history, so they name no model)."""
    built: list[dict[str, Any]] = []
    assistant = sum(1 for m in conversation if isinstance(m, dict) and m.get("role") == "assistant")
    seen = 0
    for message in conversation:
        role, content = message.get("role"), str(message.get("content", ""))
        if role == "system":
            built.append(_message("system", content))
        elif role == "assistant":
            seen += 1
            built.append(_message("assistant", content, candidate if seen > assistant - turns else None))
        else:
            built.append(_message("user", content))
    return built


def _usage(usage: Usage) -> dict[str, int]:
    """Token usage as inspect_ai's `ModelUsage` stores it (a cache count of 0 left out, as before)."""
    made = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    if usage.cache_write_tokens:
        made["input_tokens_cache_write"] = usage.cache_write_tokens
    if usage.cached_input_tokens:
        made["input_tokens_cache_read"] = usage.cached_input_tokens
    return made


USAGE_SUMS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "input_tokens_cache_write",
    "input_tokens_cache_read",
    "reasoning_tokens",
    "total_cost",
)
"""`ModelUsage`'s fields, in its order (an Inspect source's samples may carry the last two)."""


def usage_totals(totals: dict[str, dict[str, Any]], sample: Record) -> None:
    """Add a sample's usage into the log's `totals` (model → ModelUsage's fields), as `ModelUsage.__add__` sums: a
    count absent from every sample stays absent."""
    for model, usage in sample.get("model_usage", {}).items():
        total = totals.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
        for name in USAGE_SUMS:
            if usage.get(name) is not None:
                total[name] = total.get(name, 0) + usage[name]

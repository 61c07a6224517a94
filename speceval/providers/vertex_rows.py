"""Reading Vertex AI prediction rows: which request a row answers, and what its outcome is.

Google documents that each output row repeats the request it answers (`request`) beside `status` and `response`; it
does not document that the request's `labels` or the input line's other fields (our `key`) come back. So a row is
matched by the custom id where one is echoed (the `speceval_custom_id` label, then `key`), else by the request
itself: a fingerprint of the echoed request (field names normalised, so `generation_config` and `generationConfig`
agree; labels left out) looked up among the fingerprints of the lines we sent. Identical requests of one job share
a fingerprint; their answers are interchangeable (same prompt, same parameters) and are handed out in turn.
Never matched by prompt text alone, never by position.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from speceval.batch.answers import Answer, failed
from speceval.batch.records import Outcome, RequestOutcome
from speceval.providers.gemini_batch import error_answer, response_answer
from speceval.providers.google_calls import json_line

LABEL = "speceval_custom_id"
_EMBEDDED_ERROR = re.compile(r"\{.*\}", re.DOTALL)


def read_row(line: str, uri: str) -> dict[str, Any]:
    """One row of a predictions file as JSON. A row that is not JSON means a download cut short: transient."""
    return json_line("vertex", uri, line)


def echoed_id(row: Mapping[str, Any]) -> str | None:
    """The custom id a row carries: the request's `speceval_custom_id` label, else the line's `key`."""
    request = row.get("request")
    labels = request.get("labels") if isinstance(request, dict) else None
    key = labels.get(LABEL) if isinstance(labels, dict) else None
    key = key or row.get("key")
    return key if isinstance(key, str) and key else None


def request_fingerprint(request: Any) -> str:
    """A hash of a GenerateContentRequest that does not depend on how its field names are spelled or ordered.

    Field names lose case and underscores (protobuf JSON prints `generationConfig`, we send `generation_config`);
    the top-level `labels` are left out (Vertex may or may not repeat them).
    """
    if isinstance(request, dict):
        request = {k: v for k, v in request.items() if k != "labels"}
    canonical = json.dumps(_normalised(request), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).replace("_", "").lower(): _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


class RequestIndex:
    """The custom ids of one job's request lines, by fingerprint of their request; each id is claimed once."""

    def __init__(self, lines: Iterable[str]) -> None:
        """Index the lines of a request file (`{"key": custom id, "request": …}` per line)."""
        self._ids: dict[str, deque[str]] = {}
        for line in lines:
            if not line.strip():
                continue
            data = json.loads(line)
            self._ids.setdefault(request_fingerprint(data.get("request")), deque()).append(str(data["key"]))

    def claim(self, request: Any) -> str | None:
        """The next unclaimed custom id whose request is this one, or None."""
        waiting = self._ids.get(request_fingerprint(request)) if isinstance(request, dict) else None
        return waiting.popleft() if waiting else None


def row_answer(key: str, row: Mapping[str, Any]) -> Answer:
    """The answer of a row answering request `key`: a non-empty `status` is its error, else its `response`."""
    status = row.get("status")
    if isinstance(status, dict) and status:
        return error_answer(key, status)
    if isinstance(status, str) and status.strip():
        return _status_answer(key, status)
    return response_answer(key, row.get("response"), "the prediction row has neither a response nor a status")


def parse_prediction_line(line: str, uri: str) -> RequestOutcome | None:
    """The outcome of a row that carries its custom id (None for a row that echoes none)."""
    row = read_row(line, uri)
    key = echoed_id(row)
    return row_answer(key, row).typed() if key is not None else None


def _status_answer(key: str, status: str) -> Answer:
    """An errored answer from a row's `status` text, with the code of an embedded Google error body if any."""
    found = _EMBEDDED_ERROR.search(status)
    if found:
        try:
            body = json.loads(found.group(0))
        except json.JSONDecodeError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return error_answer(key, error)
    return failed(key, Outcome.ERRORED, "request_failed", status)

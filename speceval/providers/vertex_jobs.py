"""A Vertex BatchPredictionJob as our `RemoteJob`, read from google-genai's BatchJob or from the REST JSON.

The raw JSON path exists because google-genai types a failed job's `error.details` as strings, while Google sends
`google.rpc.Status` details as objects (`{"@type": …}`), and the SDK then refuses the whole job.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from speceval.batch.records import RemoteJob, VertexHandle
from speceval.providers.gemini_batch import job_state
from speceval.providers.google_calls import status_text


def job_from_sdk(job: Any, input_uri: str | None) -> RemoteJob:
    """A RemoteJob from google-genai's BatchJob."""
    state = getattr(job.state, "value", job.state)
    error = job.error.model_dump() if job.error is not None else None
    output_info = getattr(job, "output_info", None)
    stats = job.completion_stats
    return _remote_job(
        name=job.name,
        raw=str(state) if state is not None else "JOB_STATE_UNSPECIFIED",
        error=error,
        reported_dir=getattr(output_info, "gcs_output_directory", None) if output_info is not None else None,
        dest_prefix=job.dest.gcs_uri if job.dest is not None else None,
        created_at=_aware(job.create_time),
        counts=(stats.successful_count, stats.failed_count, stats.incomplete_count) if stats is not None else None,
        input_uri=input_uri,
    )


def job_from_wire(body: dict[str, Any], input_uri: str | None) -> RemoteJob:
    """A RemoteJob from a BatchPredictionJob as the REST API sends it (camelCase JSON)."""
    stats = body.get("completionStats")
    destination = (body.get("outputConfig") or {}).get("gcsDestination") or {}
    created = body.get("createTime")
    return _remote_job(
        name=str(body.get("name") or ""),
        raw=str(body.get("state") or "JOB_STATE_UNSPECIFIED"),
        error=body.get("error"),
        reported_dir=(body.get("outputInfo") or {}).get("gcsOutputDirectory"),
        dest_prefix=destination.get("outputUriPrefix"),
        created_at=_aware(datetime.fromisoformat(created.replace("Z", "+00:00"))) if isinstance(created, str) else None,
        counts=tuple(stats.get(k) for k in ("successfulCount", "failedCount", "incompleteCount"))
        if isinstance(stats, dict)
        else None,
        input_uri=input_uri,
    )


def _remote_job(
    *,
    name: str,
    raw: str,
    error: Any,
    reported_dir: str | None,
    dest_prefix: str | None,
    created_at: datetime | None,
    counts: tuple[Any, ...] | None,
    input_uri: str | None,
) -> RemoteJob:
    state = job_state(raw)
    # The folder the job itself reports; the destination prefix (ours, unique to this job) only until then.
    output_dir = reported_dir or (dest_prefix if state.is_terminal else None)
    total = None
    # `incompleteCount` is -1 when Vertex does not know it (a job that failed before counting): total unknown.
    values = [int(c or 0) for c in counts] if counts is not None else []
    if values and min(values) >= 0:
        total = sum(values) or None
    return RemoteJob(
        batch_id=name,
        state=state,
        raw_state=raw,
        handle=VertexHandle(input_uri=input_uri, output_dir=output_dir),
        created_at=created_at,
        request_count=total,
        error=status_text(error),
    )


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

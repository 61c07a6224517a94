"""The Vertex AI provider of the emulator: `batchPredictionJobs` for Gemini models, reading and writing GCS objects.

Mounted under `/vertex` for `v1` and `v1beta1` (google-genai's Vertex default), so the SDK's base URL is
`http://127.0.0.1:P/vertex` with `project` and `location` given to the client. Paths, field names and states are
the REST API's: `projects/{p}/locations/{l}/batchPredictionJobs[/{id}[:cancel]]`, `BatchPredictionJob` with
`inputConfig.gcsSource.uris`, `outputConfig.gcsDestination.outputUriPrefix`, `state` (`JOB_STATE_*`),
`completionStats`, `error`, and `outputInfo.gcsOutputDirectory` (a new folder under the prefix, per job).

Cloud Storage is not served over HTTP here: the jobs read their input from, and write `predictions.jsonl` into,
`VertexApp.objects`, an in-memory bucket map. Tests serve the same map to google-cloud-storage through
`responses` (the storage client speaks `requests`), so both sides see one bucket.

Output lines echo the input line (its `request`, and any other top-level field such as `key`) and add
`status` (empty on success, the error otherwise), `processed_time` and, on success, `response`. Like Vertex, a
job that is cancelled or expires still exports the rows it completed.
"""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime
from typing import Any

from speceval.emulator.common import (
    RPC_INVALID_ARGUMENT,
    GoogleApp,
    google_status,
    int_arg,
    jsonl,
    refresh,
    rfc3339,
)
from speceval.emulator.context import EmulatorContext
from speceval.emulator.gcs import GcsObjects, split_gs_uri
from speceval.emulator.gemini_batch import gemini_item, parse_request_lines, response_or_error
from speceval.emulator.jobs import (
    Job,
    JobFailure,
    Kind,
    Outcome,
    Phase,
    RequestItem,
    emitted,
    google_end_time,
    random_id,
    settled_counts,
    timeline,
)
from speceval.emulator.routing import ApiError, Request, Response, Route, json_response

__all__ = ["GcsObjects", "VertexApp", "split_gs_uri"]

PROVIDER = "vertex"
VERSIONS = "v1|v1beta1"
_STATE = {
    Phase.QUEUED: "JOB_STATE_PENDING",
    Phase.RUNNING: "JOB_STATE_RUNNING",
    Phase.FINALIZING: "JOB_STATE_RUNNING",
    Phase.CANCELLING: "JOB_STATE_CANCELLING",
    Phase.COMPLETED: "JOB_STATE_SUCCEEDED",
    Phase.FAILED: "JOB_STATE_FAILED",
    Phase.EXPIRED: "JOB_STATE_EXPIRED",
    Phase.CANCELLED: "JOB_STATE_CANCELLED",
}


def _status_string(code: int, message: str) -> str:
    """A failed row's `status`: the HTTP reason and the Google error body, as Vertex writes it."""
    body = {"error": google_status(code, message)}
    reason = "Bad Request" if code == 400 else "Internal Server Error"
    return f"{reason}: {json.dumps(body)}"


def _parse_input(content: bytes, model: str) -> tuple[list[RequestItem], list[JobFailure]]:
    """Requests of a JSONL input object (`{"request": GenerateContentRequest, ...}` per line)."""
    # The whole line is kept: Vertex echoes it in the output row (which is how callers find their key).
    refused = "Line {number} of the input is not a JSON object with a 'request' object."
    return parse_request_lines(
        content, lambda number, row: gemini_item(str(number), model, row["request"], {"line": row}), refused, refused
    )


class VertexApp(GoogleApp):
    """Vertex AI batch prediction (Gemini models) with an in-memory Cloud Storage behind it."""

    name = PROVIDER
    prefix = "/vertex"
    missing_credential = (
        401,
        "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie "
        "or other valid authentication credential.",
    )
    state_names = _STATE

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind to the emulator context; `objects` is the Cloud Storage the jobs read and write."""
        self.objects = GcsObjects()
        super().__init__(ctx)

    def build_routes(self) -> list[Route]:
        """Create, list, get, cancel and delete of `batchPredictionJobs` for v1 and v1beta1."""
        base = "/{ver:" + VERSIONS + "}/projects/{project}/locations/{location}/batchPredictionJobs"
        return [
            Route("POST", base, self.create),
            Route("GET", base, self.list_jobs),
            Route("GET", base + "/{job_id}", self.retrieve),
            Route("DELETE", base + "/{job_id}", self.delete),
            Route("POST", base + "/{job_id}:cancel", self.cancel),
        ]

    def authenticated(self, request: Request) -> bool:
        """An OAuth bearer token (ADC) or an express-mode API key."""
        auth = request.header("authorization") or ""
        return auth.lower().startswith("bearer ") and len(auth) > 7 or bool(request.header("x-goog-api-key"))

    def _job(self, request: Request) -> Job:
        missing = f"The BatchPredictionJob does not exist: {request.params['job_id']}."
        return self.live_job(
            request.params["job_id"], missing, where=(request.params["project"], request.params["location"])
        )

    def create(self, request: Request) -> Response:
        """`POST …/batchPredictionJobs` with a BatchPredictionJob body (GCS JSONL in, GCS JSONL out)."""
        body = request.json()
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload: expected a BatchPredictionJob object.")
        display_name, model = body.get("displayName"), body.get("model")
        if not isinstance(display_name, str) or not display_name:
            raise ApiError(400, "BatchPredictionJob.display_name is required.")
        if not isinstance(model, str) or not model:
            raise ApiError(400, "BatchPredictionJob.model is required.")
        source = (body.get("inputConfig") or {}).get("gcsSource") or {}
        uris = source.get("uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            raise ApiError(400, "inputConfig.gcsSource.uris must list the gs:// input files.")
        prefix = ((body.get("outputConfig") or {}).get("gcsDestination") or {}).get("outputUriPrefix")
        if not isinstance(prefix, str) or not prefix.startswith("gs://"):
            raise ApiError(400, "outputConfig.gcsDestination.outputUriPrefix must be a gs:// prefix.")
        model_id = model.rsplit("/", 1)[-1]
        items: list[RequestItem] = []
        failures: list[JobFailure] = []
        for uri in uris:
            try:
                content = self.objects.get_uri(uri)
            except ValueError:
                content = None
            if content is None:
                failures = [JobFailure(code="INVALID_ARGUMENT", message=f"Failed to read the input file {uri}.")]
                break
            found, failures = _parse_input(content, model_id)
            if failures:
                break
            items.extend(found)
        faults = self.ctx.faults
        if faults.fail_validation and not failures:
            message = "The batch prediction job failed validation (injected by the speceval emulator)."
            failures = [JobFailure(code="INVALID_ARGUMENT", message=message)]
        if self.ctx.take_create_limit():
            raise ApiError(429, f"Quota exceeded for batch prediction jobs with base model {model_id}.")
        params = {
            "project": request.params["project"],
            "location": request.params["location"],
            "display_name": display_name,
            "model": model,
            "input_uris": uris,
            "output_prefix": prefix,
        }
        job = self.store_new_job(random_id("1", 18, string.digits), items, failures, params)  # decimal ids, as Vertex's
        return json_response(self.job_json(job))

    def retrieve(self, request: Request) -> Response:
        """`GET …/batchPredictionJobs/{id}`."""
        return json_response(self.job_json(self._job(request)))

    def cancel(self, request: Request) -> Response:
        """`POST …/batchPredictionJobs/{id}:cancel` → `{}`; the job is CANCELLING, then CANCELLED."""
        job = self._job(request)
        return self.cancel_job(job, lambda state: f"Cannot cancel BatchPredictionJob {job.id} in state {state}.")

    def delete(self, request: Request) -> Response:
        """`DELETE …/batchPredictionJobs/{id}` → a done delete Operation."""
        job = self._job(request)
        with self.ctx.store.lock:
            job.deleted = True
            self.ctx.store.put_job(job)
        p = request.params
        name = f"projects/{p['project']}/locations/{p['location']}/operations/{job.id}"
        return json_response({"name": name, "done": True, "response": {}})

    def list_jobs(self, request: Request) -> Response:
        """`GET …/batchPredictionJobs?pageSize=&pageToken=&filter=` → `{batchPredictionJobs, nextPageToken}`.

        Of the filter language only `display_name="…"` is understood (what speceval sends); another filter is
        refused rather than silently ignored.
        """
        size = int_arg(request.arg("pageSize"), 100, 1, 1000, "pageSize")
        start = int_arg(request.arg("pageToken"), 0, 0, 2**31, "pageToken")
        wanted = _display_name_filter(request.arg("filter"))
        p = request.params
        jobs = [
            j
            for j in self.ctx.store.list_jobs(PROVIDER)
            if not j.deleted
            and (j.params["project"], j.params["location"]) == (p["project"], p["location"])
            and (wanted is None or j.params["display_name"] == wanted)
        ]
        page = jobs[start : start + size]
        body: dict[str, Any] = {"batchPredictionJobs": [self.job_json(j) for j in page]}
        if start + size < len(jobs):
            body["nextPageToken"] = str(start + size)
        return json_response(body)

    def finalize(self, job: Job, final: Phase, outcomes: list[Outcome]) -> None:
        """Write `predictions.jsonl` into a new folder under the job's prefix (completed rows, any end state)."""
        if final is Phase.FAILED:
            return
        rows = [o for o in emitted(job, outcomes) if o.kind in (Kind.SUCCEEDED, Kind.INVALID, Kind.SERVER_ERROR)]
        stamp = datetime.fromtimestamp(timeline(job).end, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        directory = f"{job.params['output_prefix'].rstrip('/')}/prediction-model-{stamp}"
        processed = rfc3339(self.ctx.now())
        echo = self.ctx.faults.vertex_echo
        lines = []
        for outcome in rows:
            line = _echoed(dict((outcome.item.metadata or {}).get("line") or {}), echo)
            answer = response_or_error(outcome)
            if "response" in answer:
                line.update(status="", processed_time=processed, response=answer["response"])
            else:
                error = answer["error"]
                line.update(status=_status_string(error["code"], error["message"]), processed_time=processed)
            lines.append(line)
        self.objects.put_uri(f"{directory}/predictions.jsonl", jsonl(lines))
        job.outputs["output_dir"] = directory

    def job_json(self, job: Job) -> dict[str, Any]:
        """The BatchPredictionJob now (finalising it first if it just ended)."""
        now = self.ctx.now()
        current = refresh(self.ctx, job, now, self.finalize)
        times = timeline(job)
        n = len(job.requests)
        succeeded, failed = settled_counts(job, now, current)
        end = google_end_time(times, current)
        p = job.params
        body: dict[str, Any] = {
            "name": f"projects/{p['project']}/locations/{p['location']}/batchPredictionJobs/{job.id}",
            "displayName": p["display_name"],
            "model": p["model"],
            "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": p["input_uris"]}},
            "outputConfig": {"predictionsFormat": "jsonl", "gcsDestination": {"outputUriPrefix": p["output_prefix"]}},
            "state": _STATE[current],
            "createTime": rfc3339(times.created),
            "updateTime": rfc3339(end if end is not None else max(times.created, min(now, times.end))),
            "completionStats": {
                "successfulCount": str(succeeded),
                "failedCount": str(failed),
                "incompleteCount": str(n - succeeded - failed),
            },
        }
        if current not in (Phase.QUEUED, Phase.FAILED):
            body["startTime"] = rfc3339(times.start)
        if end is not None:
            body["endTime"] = rfc3339(end)
        if "output_dir" in job.outputs:
            body["outputInfo"] = {"gcsOutputDirectory": job.outputs["output_dir"]}
        if current is Phase.FAILED:
            # Failed before every request was counted: Vertex reports the unknown remainder as -1.
            body["completionStats"]["incompleteCount"] = "-1"
        if current is Phase.FAILED and job.failures:
            # A google.rpc.Status: `details` holds typed objects (`@type` plus fields), as Google's errors do.
            failure = job.failures[0]
            violation = {
                "field": f"line {failure.line}" if failure.line else "inputConfig",
                "description": failure.message,
            }
            body["error"] = {
                "code": RPC_INVALID_ARGUMENT,
                "message": failure.message,
                "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}],
            }
        return body


def _echoed(line: dict[str, Any], echo: str) -> dict[str, Any]:
    """What an output row repeats of its input line, under the `vertex_echo` fault setting."""
    if echo == "nothing":
        return {}
    if echo == "request":
        request = {k: v for k, v in (line.get("request") or {}).items() if k != "labels"}
        return {"request": _camel_keys(request)}
    return line


def _camel_keys(value: Any) -> Any:
    """`generation_config` → `generationConfig`, recursively (how protobuf JSON prints field names)."""
    if isinstance(value, dict):
        return {_camel(k): _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _display_name_filter(value: str | None) -> str | None:
    if not value:
        return None
    field, sep, quoted = value.partition("=")
    quoted = quoted.strip()
    if field.strip() != "display_name" or not sep or len(quoted) < 2 or quoted[0] != '"' or quoted[-1] != '"':
        raise ApiError(400, f'Unsupported filter {value!r}: the emulator understands display_name="…" only.')
    return quoted[1:-1]

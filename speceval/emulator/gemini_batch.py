"""The Gemini provider of the emulator: Batch API (a long-running Operation) plus the Files API it needs.

Mounted under `/gemini`, at `v1beta` only (as documented; `v1` answers 404), so the SDK's base URL is
`http://127.0.0.1:P/gemini`.
The SDK reads only `name` and `metadata.{displayName, state, createTime, updateTime, endTime, model, output}`;
the rest (`done`, `response`, `batchStats`, `error`) is filled as the REST API does, for raw readers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from speceval.emulator.common import (
    RPC_INVALID_ARGUMENT,
    GoogleApp,
    google_status,
    int_arg,
    new_generated_file,
    refresh,
    results_jsonl,
    rfc3339,
    text_of,
)
from speceval.emulator.gemini_files import (
    BATCH_VERSIONS,
    FILE_RETENTION_SECONDS,
    PROVIDER,
    GeminiFiles,
    api_key_present,
)
from speceval.emulator.jobs import (
    TERMINAL,
    Job,
    JobFailure,
    Kind,
    Outcome,
    Phase,
    RequestItem,
    gemini_output_limit,
    google_end_time,
    random_id,
    random_lower_id,
    settled_counts,
    timeline,
)
from speceval.emulator.routing import ApiError, Request, Response, Route, json_response
from speceval.emulator.structured import schema_of_gemini

_STATE = {
    Phase.QUEUED: "BATCH_STATE_PENDING",
    Phase.RUNNING: "BATCH_STATE_RUNNING",
    Phase.FINALIZING: "BATCH_STATE_RUNNING",
    Phase.CANCELLING: "BATCH_STATE_RUNNING",
    Phase.COMPLETED: "BATCH_STATE_SUCCEEDED",
    Phase.FAILED: "BATCH_STATE_FAILED",
    Phase.EXPIRED: "BATCH_STATE_EXPIRED",
    Phase.CANCELLED: "BATCH_STATE_CANCELLED",
}
INVALID_MESSAGE = "Invalid request: the prompt contains the speceval emulator error marker [[emulator:error]]."
SERVER_MESSAGE = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"


def _prompt_of(request: dict[str, Any]) -> str:
    system = request.get("systemInstruction", request.get("system_instruction"))
    return "\n".join(t for t in (text_of(system), text_of(request.get("contents"))) if t)


def gemini_item(custom_id: str, model: str, request: dict[str, Any], metadata: dict[str, Any] | None) -> RequestItem:
    """One GenerateContentRequest of a Gemini or Vertex batch, as the emulator answers it."""
    return RequestItem(
        custom_id=custom_id,
        model=model,
        prompt=_prompt_of(request),
        metadata=metadata,
        response_schema=schema_of_gemini(request),
        max_tokens=gemini_output_limit(request),
    )


def response_or_error(outcome: Outcome) -> dict[str, Any]:
    """`{"response": GenerateContentResponse}` or `{"error": Status}` for one request."""
    if outcome.kind is Kind.SUCCEEDED:
        return {
            "response": {
                "candidates": [
                    {
                        "content": {"parts": [{"text": outcome.text or ""}], "role": "model"},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": outcome.input_tokens,
                    "candidatesTokenCount": outcome.output_tokens,
                    "totalTokenCount": outcome.input_tokens + outcome.output_tokens,
                    # Implicit cache hits; the API leaves the field out when there are none.
                    **({"cachedContentTokenCount": outcome.cache.read} if outcome.cache.read else {}),
                },
                "modelVersion": outcome.item.model,
                "responseId": random_id("", 22),
            }
        }
    if outcome.kind is Kind.INVALID:
        return {"error": google_status(400, INVALID_MESSAGE)}
    return {"error": google_status(500, SERVER_MESSAGE)}


def parse_request_lines(
    content: bytes, item_of: Callable[[int, dict[str, Any]], RequestItem], not_json: str, no_request: str
) -> tuple[list[RequestItem], list[JobFailure]]:
    """The requests of a Gemini or Vertex JSONL input file (a `request` object per line), or why it is refused.

    `item_of(line number, row)` builds a line's request; `not_json` and `no_request` are the provider's messages
    for a line that is not JSON and one without a `request` object, with `{number}` for the line's number.
    """
    items: list[RequestItem] = []
    for number, line in enumerate(content.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            return [], [JobFailure(code="INVALID_ARGUMENT", line=number, message=not_json.format(number=number))]
        if not isinstance(row, dict) or not isinstance(row.get("request"), dict):
            return [], [JobFailure(code="INVALID_ARGUMENT", line=number, message=no_request.format(number=number))]
        items.append(item_of(number, row))
    if not items:
        return [], [JobFailure(code="INVALID_ARGUMENT", message="The input file contains no requests.")]
    return items, []


def _parse_file(content: bytes, model: str) -> tuple[list[RequestItem], list[JobFailure]]:
    """Requests of a JSONL input file (`{"key", "request"}` per line)."""

    def item_of(number: int, row: dict[str, Any]) -> RequestItem:
        key = row.get("key")
        return gemini_item(str(key) if key is not None else str(number), model, row["request"], None)

    return parse_request_lines(
        content,
        item_of,
        "Line {number} of the input file is not valid JSON.",
        "Line {number} of the input file has no 'request' object.",
    )


class GeminiApp(GoogleApp):
    """Gemini Batch and Files APIs (Gemini Developer API mode, not Vertex)."""

    name = PROVIDER
    prefix = "/gemini"
    missing_credential = (
        403,
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.",
    )
    state_names = _STATE

    def build_routes(self) -> list[Route]:
        """Files, upload and batch routes, at v1beta only."""
        ver = "{ver:" + BATCH_VERSIONS + "}"
        return [
            *GeminiFiles(self.ctx).routes(),
            Route("POST", f"/{ver}/models/{{model}}:batchGenerateContent", self.create),
            Route("GET", f"/{ver}/batches", self.list_batches),
            Route("GET", f"/{ver}/batches/{{batch_id}}", self.retrieve),
            Route("DELETE", f"/{ver}/batches/{{batch_id}}", self.delete),
            Route("POST", f"/{ver}/batches/{{batch_id}}:cancel", self.cancel),
        ]

    def authenticated(self, request: Request) -> bool:
        """`x-goog-api-key` header or `?key=`."""
        return api_key_present(request)

    def _job(self, batch_id: str) -> Job:
        return self.live_job(batch_id, f"Batch batches/{batch_id} not found.")

    def create(self, request: Request) -> Response:
        """`POST /{ver}/models/{model}:batchGenerateContent` with a file or inline source."""
        body = request.json()
        batch = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch, dict):
            raise ApiError(400, "Invalid JSON payload: field 'batch' is required.")
        source = batch.get("inputConfig", batch.get("input_config"))
        if not isinstance(source, dict):
            raise ApiError(400, "batch.input_config is required.")
        model = request.params["model"].removeprefix("models/")
        faults = self.ctx.faults
        failures: list[JobFailure] = []
        inline = "requests" in source
        if inline:
            wrapped = source["requests"]
            entries = wrapped.get("requests") if isinstance(wrapped, dict) else None
            if not isinstance(entries, list) or not entries:
                raise ApiError(400, "batch.input_config.requests.requests must be a non-empty list.")
            items = []
            for index, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
                    raise ApiError(400, f"batch.input_config.requests.requests[{index}].request is required.")
                metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else None
                key = (metadata or {}).get("key", str(index))
                items.append(gemini_item(str(key), model, entry["request"], metadata))
        else:
            file_name = source.get("fileName", source.get("file_name"))
            if not isinstance(file_name, str) or not file_name.startswith("files/"):
                raise ApiError(400, "batch.input_config must name a file (files/…) or inline requests.")
            content = self.ctx.store.file_content(PROVIDER, file_name.removeprefix("files/"))
            if content is None:
                raise ApiError(404, f"File {file_name} not found.")
            items, failures = _parse_file(content, model)
        if faults.max_requests_per_batch is not None and len(items) > faults.max_requests_per_batch:
            raise ApiError(
                400, f"The batch contains {len(items)} requests; at most {faults.max_requests_per_batch} are allowed."
            )
        if self.ctx.take_create_limit():
            raise ApiError(
                429,
                f"Enqueued token quota exceeded for model {model}; try again once running batch jobs have finished.",
            )
        if faults.fail_validation and not failures:
            failures.append(
                JobFailure(
                    code="INVALID_ARGUMENT", message="The batch failed validation (injected by the speceval emulator)."
                )
            )
        params = {
            "model": model,
            "display_name": batch.get("displayName", batch.get("display_name")),
            "inline": inline,
            "input_file": None if inline else source.get("fileName", source.get("file_name")),
        }
        job = self.store_new_job(random_lower_id(length=20), items, failures, params)
        return json_response(self.operation_json(job, request))

    def retrieve(self, request: Request) -> Response:
        """`GET /{ver}/batches/{id}`."""
        return json_response(self.operation_json(self._job(request.params["batch_id"]), request))

    def cancel(self, request: Request) -> Response:
        """`POST /{ver}/batches/{id}:cancel` → `{}`; the job ends CANCELLED shortly after."""
        job = self._job(request.params["batch_id"])
        return self.cancel_job(job, lambda state: f"Batch batches/{job.id} is already in a terminal state ({state}).")

    def delete(self, request: Request) -> Response:
        """`DELETE /{ver}/batches/{id}` → `{}`."""
        job = self._job(request.params["batch_id"])
        with self.ctx.store.lock:
            job.deleted = True
            self.ctx.store.put_job(job)
        return json_response({})

    def list_batches(self, request: Request) -> Response:
        """`GET /{ver}/batches?pageSize=&pageToken=` → `{operations, nextPageToken}`, newest first."""
        size = int_arg(request.arg("pageSize"), 50, 1, 1000, "pageSize")
        jobs = [j for j in self.ctx.store.list_jobs(PROVIDER) if not j.deleted]
        start = int_arg(request.arg("pageToken"), 0, 0, 2**31, "pageToken")
        page = jobs[start : start + size]
        body: dict[str, Any] = {"operations": [self.operation_json(j, request) for j in page]}
        if start + size < len(jobs):
            body["nextPageToken"] = str(start + size)
        return json_response(body)

    def finalize(self, job: Job, final: Phase, outcomes: list[Outcome]) -> None:
        """Succeeded jobs get their output (Gemini gives failed, expired or cancelled jobs none)."""
        if final is not Phase.COMPLETED:
            return
        if job.params.get("inline"):
            # Inline responses keep the input order (positional), with drops and duplicates applied.
            inlined = []
            for outcome in outcomes:
                if outcome.dropped:
                    continue
                entry = response_or_error(outcome)
                if outcome.item.metadata is not None:
                    entry["metadata"] = outcome.item.metadata
                inlined.extend([entry, entry] if outcome.duplicated else [entry])
            job.params["inlined_responses"] = inlined
            return
        lines = results_jsonl(job, outcomes, lambda o: {"key": o.item.custom_id, **response_or_error(o)})
        meta = new_generated_file(
            self.ctx,
            PROVIDER,
            f"batch-{job.id}",
            lines,
            filename=f"batch-{job.id}",
            retention_seconds=FILE_RETENTION_SECONDS,
        )
        job.outputs["responses_file"] = f"files/{meta.id}"

    def operation_json(self, job: Job, request: Request) -> dict[str, Any]:
        """The batch as an Operation, now (finalising it first if it just ended)."""
        now = self.ctx.now()
        current = refresh(self.ctx, job, now, self.finalize)
        times = timeline(job)
        version = request.params.get("ver", "v1")
        n = len(job.requests)
        succeeded, failed = settled_counts(job, now, current)
        end = google_end_time(times, current)
        metadata: dict[str, Any] = {
            "@type": f"type.googleapis.com/google.ai.generativelanguage.{version}.GenerateContentBatch",
            "model": f"models/{job.params['model']}",
            "name": f"batches/{job.id}",
            "state": _STATE[current],
            "createTime": rfc3339(times.created),
            "updateTime": rfc3339(end if end is not None else max(times.created, min(now, times.end))),
            "batchStats": {
                "requestCount": str(n),
                "successfulRequestCount": str(succeeded),
                "failedRequestCount": str(failed),
                "pendingRequestCount": str(n - succeeded - failed),
            },
        }
        if job.params.get("display_name") is not None:
            metadata["displayName"] = job.params["display_name"]
        if end is not None:
            metadata["endTime"] = rfc3339(end)
        output: dict[str, Any] | None = None
        if "responses_file" in job.outputs:
            output = {"responsesFile": job.outputs["responses_file"]}
        elif "inlined_responses" in job.params:
            output = {"inlinedResponses": {"inlinedResponses": job.params["inlined_responses"]}}
        operation: dict[str, Any] = {"name": f"batches/{job.id}", "metadata": metadata, "done": current in TERMINAL}
        if output is not None:
            metadata["output"] = output
            operation["response"] = {
                "@type": f"type.googleapis.com/google.ai.generativelanguage.{version}.GenerateContentBatchOutput",
                **output,
            }
        if current is Phase.FAILED and job.failures:
            # A google.rpc.Status: the numeric RPC code (3 = INVALID_ARGUMENT), not the HTTP error body's shape.
            operation["error"] = {"code": RPC_INVALID_ARGUMENT, "message": job.failures[0].message}
        return operation

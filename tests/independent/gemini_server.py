"""A Gemini API server written only from Google's public Gemini API documentation and the google-genai SDK source.

It shares no code with `speceval.emulator` on purpose: tests that run against it show that speceval follows the
documented wire format, not whatever the project's own emulator happens to accept. Sources:

- Batch mode guide, https://ai.google.dev/gemini-api/docs/batch-mode (also published as .../docs/batch-api): a
  file-mode job reads an uploaded JSONL file whose lines are `{"key", "request": GenerateContentRequest}`; a
  succeeded job names a responses file (`output.responsesFile`) of JSONL lines, each "either a
  GenerateContentResponse or a status object" carrying its request's `key`; target turnaround 24 hours.
- Batch mode reference, https://ai.google.dev/api/batch-mode: `POST /v1beta/{batch.model=models/*}:
  batchGenerateContent` with `{"batch": {displayName (required), inputConfig (required: fileName | requests),
  priority}}` (the other `batch` fields are output only); the response is an `Operation` whose `metadata` is the
  `GenerateContentBatch` (name `batches/{id}`, model, displayName, createTime, updateTime, endTime, batchStats,
  state `BATCH_STATE_{PENDING,RUNNING,SUCCEEDED,FAILED,CANCELLED,EXPIRED}`, output); `batches.get`, `batches.list`
  (`pageSize`, `pageToken` → `{operations, nextPageToken}`), `batches.cancel` (`POST batches/{id}:cancel`) and
  `batches.delete`. Cancelled operations carry `error.code` 1 (CANCELLED), as google.longrunning documents.
- Files API, https://ai.google.dev/api/files and https://ai.google.dev/gemini-api/docs/files: the resumable upload
  (`POST /upload/v1beta/files` with `X-Goog-Upload-Protocol: resumable`, `X-Goog-Upload-Command: start`,
  `X-Goog-Upload-Header-Content-Length/-Type` and a `{"file": {...}}` body; the answer's `X-Goog-Upload-URL`
  receives the bytes with `X-Goog-Upload-Command: upload[, finalize]` and `X-Goog-Upload-Offset`, and the final
  answer is `{"file": File}` with `X-Goog-Upload-Status: final`), `files.get`, `files.delete`, and the download of a
  generated file (`GET [/download]/v1beta/files/{id}:download?alt=media`; uploaded files cannot be downloaded).
  Files expire after 48 hours.
- Models, https://ai.google.dev/api/models and https://ai.google.dev/api/generate-content: `GET /v1beta/models`,
  `GET /v1beta/models/{model}`, `POST /v1beta/models/{model}:generateContent`, served under `v1` too (the stable
  version, https://ai.google.dev/gemini-api/docs/api-versions, documents generateContent and models there) with
  the narrower request of its published proto (googleapis, google/ai/generativelanguage/v1/generative_service.proto:
  `model`, `contents`, `safetySettings`, `generationConfig` without `responseMimeType`/`responseJsonSchema`; no
  `systemInstruction`). Batch mode and the Files API are documented under `v1beta` only (v1 has no BatchService),
  so `v1/batches`, `v1/files` and `upload/v1/files` are 404 here. The same page says the SDKs default to
  `v1beta`, but google-genai 3.x defaults the Gemini Developer API to `v1` (`GOOGLE_AI_API_DEFAULT_VERSION`).
- The google-genai SDK (3.x) source: `files.upload` / `_api_client._upload_fd` (headers above, chunking, the
  upload URL re-based on the client's base URL), `files.download` (`files/{id}:download?alt=media`),
  `batches._BatchJob_from_mldev` (reads `metadata.{displayName,state,createTime,endTime,output.responsesFile}`;
  `error` is not read on the Gemini path), the `x-goog-api-key` header.

Request bodies are parsed as proto3 JSON parsers do: a field may be spelt lowerCamelCase or as its proto
(snake_case) name, never both, and an unknown field is refused with Google's "Invalid JSON payload received.
Unknown name ..." (400 INVALID_ARGUMENT). Where the documentation does not say what happens, this server chooses
the strict reading and says so: a request line that is not a JSON object, has no `key`, a duplicate `key`, or a
field other than `key`/`request` fails the whole job (`BATCH_STATE_FAILED`, `error` set) when it runs; a line
whose `request` is invalid comes back as that line's `error` status (INVALID_ARGUMENT), as a model-side failure
does (`fail`). The responses file lists the lines shuffled: the reference describes `responsesFile` as written
"in the same order as the input requests", but the guide matches results by `key`, and a client that relied on
the order would mis-assign answers the day a file came back otherwise; shuffling makes such a reliance show.

Left out: inlined requests and responses (speceval does not use them), embeddings batches, `updateGenerateContent
Batch`, streaming, caching, tools, media parts, and quota behaviour other than refused creates
(`refuse_creates`). Nothing here knows speceval's prompts:
what an answer says is the test's business (`answer`), as is which requests fail (`fail`) and how long a job
takes (`turnaround`).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import random
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

Answer = Callable[[dict[str, Any]], str]
"""Maps a GenerateContentRequest (field names normalised to lowerCamelCase) to the model's text."""

Fail = Callable[[str | None, dict[str, Any]], tuple[int, str, str] | None]
"""Maps (the line's key, or None for a live call; the request) to (HTTP code, status, message) to make it fail."""

DEFAULT_MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite")
API_VERSION = "v1beta"
FILE_LIFETIME = timedelta(hours=48)
BATCH_TYPE = f"type.googleapis.com/google.ai.generativelanguage.{API_VERSION}.GenerateContentBatch"
OUTPUT_TYPE = f"type.googleapis.com/google.ai.generativelanguage.{API_VERSION}.GenerateContentBatchOutput"

# Field names per message, lowerCamelCase (the proto name is the snake_case spelling of each).
REQUEST_FIELDS = frozenset(
    {
        "model",
        "contents",
        "tools",
        "toolConfig",
        "safetySettings",
        "systemInstruction",
        "generationConfig",
        "cachedContent",
        "serviceTier",
    }
)
GENERATION_CONFIG_FIELDS = frozenset(
    {
        "stopSequences",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
        "candidateCount",
        "maxOutputTokens",
        "temperature",
        "topP",
        "topK",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "enableEnhancedCivicAnswers",
        "speechConfig",
        "thinkingConfig",
        "imageConfig",
        "mediaResolution",
    }
)
# The stable v1 surface is narrower (googleapis, google/ai/generativelanguage/v1/generative_service.proto): no
# system instruction, tools or response MIME type / schema, and no BatchService at all.
REQUEST_FIELDS_V1 = frozenset({"model", "contents", "safetySettings", "generationConfig"})
GENERATION_CONFIG_FIELDS_V1 = frozenset(
    {
        "candidateCount",
        "stopSequences",
        "maxOutputTokens",
        "temperature",
        "topP",
        "topK",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "enableEnhancedCivicAnswers",
    }
)
SERVICE_TIERS = frozenset({"unspecified", "standard", "flex", "priority"})  # google-genai `types.ServiceTier`
CONTENT_FIELDS = frozenset({"role", "parts"})
PART_DATA = frozenset(
    {"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}
)
PART_FIELDS = PART_DATA | {"thought", "thoughtSignature", "videoMetadata", "partMetadata"}
BATCH_FIELDS = frozenset({"name", "displayName", "inputConfig", "model", "priority"})
INPUT_CONFIG_FIELDS = frozenset({"fileName", "requests"})
FILE_FIELDS = frozenset({"name", "displayName", "mimeType", "sizeBytes"})

STATUS_OF_CODE = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class ApiError(Exception):
    """A Google API error: `{"error": {"code", "message", "status"}}` with that HTTP code."""

    def __init__(
        self, code: int, message: str, status: str | None = None, details: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or STATUS_OF_CODE.get(code, "UNKNOWN")
        self.details = details

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "status": self.status}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def proto_json(value: Any, known: frozenset[str], where: str) -> dict[str, Any]:
    """One JSON object's fields under their lowerCamelCase names; unknown or doubly-spelt fields refused."""
    if not isinstance(value, dict):
        raise ApiError(400, f"Invalid value at '{where}', expected an object")
    normalised: dict[str, Any] = {}
    for name, item in value.items():
        key = camel(name)
        if key not in known:
            raise ApiError(
                400, f"Invalid JSON payload received. Unknown name \"{name}\" at '{where}': Cannot find field."
            )
        if key in normalised:
            raise ApiError(400, f"Invalid JSON payload received. Field \"{key}\" at '{where}' is set twice.")
        normalised[key] = item
    return normalised


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _content(value: Any, where: str, system: bool = False) -> dict[str, Any]:
    content = proto_json(value, CONTENT_FIELDS, where)
    role = content.get("role")
    if role is not None and role not in (("user", "model") if not system else ("user", "model", "system")):
        raise ApiError(400, f"Please use a valid role: user, model. (at '{where}.role')")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise ApiError(400, f"* {where}.parts: contents.parts must not be empty.")
    checked = []
    for j, raw in enumerate(parts):
        part = proto_json(raw, PART_FIELDS, f"{where}.parts[{j}]")
        data = PART_DATA & part.keys()
        if len(data) != 1:
            raise ApiError(400, f"* {where}.parts[{j}]: a part holds exactly one kind of data")
        if "text" in part and not isinstance(part["text"], str):
            raise ApiError(400, f"Invalid value at '{where}.parts[{j}].text' (TYPE_STRING)")
        checked.append(part)
    return {**content, "parts": checked}


def _number(config: dict[str, Any], name: str, low: float, high: float) -> None:
    if name not in config:
        return
    value = config[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ApiError(400, f"* GenerateContentRequest.generation_config.{name}: must be in [{low}, {high}]")


def validate_request(value: Any, where: str = "request", version: str = API_VERSION) -> dict[str, Any]:
    """A GenerateContentRequest as the API `version` parses it (lowerCamelCase), or ApiError (400) saying what
    is wrong."""
    stable = version == "v1"
    request = proto_json(value, REQUEST_FIELDS_V1 if stable else REQUEST_FIELDS, where)
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        raise ApiError(400, "* GenerateContentRequest.contents: contents is not specified")
    request["contents"] = [_content(c, f"{where}.contents[{i}]") for i, c in enumerate(contents)]
    if "systemInstruction" in request:
        request["systemInstruction"] = _content(request["systemInstruction"], f"{where}.system_instruction", True)
    if request.get("serviceTier", "unspecified") not in SERVICE_TIERS:
        raise ApiError(400, f"Invalid value at '{where}.service_tier': {request['serviceTier']!r}")
    known = GENERATION_CONFIG_FIELDS_V1 if stable else GENERATION_CONFIG_FIELDS
    config = proto_json(request.get("generationConfig", {}), known, f"{where}.generation_config")
    request["generationConfig"] = config
    tokens = config.get("maxOutputTokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise ApiError(400, "* GenerateContentRequest.generation_config.max_output_tokens: must be positive")
    _number(config, "temperature", 0.0, 2.0)
    _number(config, "topP", 0.0, 1.0)
    if "responseSchema" in config and "responseJsonSchema" in config:
        raise ApiError(400, "response_schema and response_json_schema cannot both be set")
    if ("responseSchema" in config or "responseJsonSchema" in config) and config.get("responseMimeType") not in (
        "application/json",
        "text/x.enum",
    ):
        raise ApiError(400, "a response schema needs response_mime_type application/json")
    if "responseJsonSchema" in config and not isinstance(config["responseJsonSchema"], dict):
        raise ApiError(400, "response_json_schema must be a JSON Schema object")
    return request


def request_text(request: dict[str, Any]) -> str:
    """The text of the last content of a (validated) request."""
    return "".join(p.get("text", "") for p in request["contents"][-1]["parts"])


def echo_answer(request: dict[str, Any]) -> str:
    text = request_text(request)
    return f"independent answer ({len(text)} chars): {text[:40]}"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class _File:
    id: str
    display_name: str | None
    mime_type: str
    data: bytes
    created_at: datetime
    source: str  # UPLOADED | GENERATED

    @property
    def name(self) -> str:
        return f"files/{self.id}"


@dataclass
class _Upload:
    display_name: str | None
    mime_type: str
    size: int
    data: bytearray = field(default_factory=bytearray)


@dataclass
class _Batch:
    id: str
    seq: int
    model: str
    display_name: str
    input_file: str
    created_at: datetime
    ready_at: float
    state: str = "BATCH_STATE_PENDING"
    updated_at: datetime | None = None
    ended_at: datetime | None = None
    error: dict[str, Any] | None = None
    responses_file: str | None = None
    stats: dict[str, int] = field(default_factory=dict)
    polls: int = 0

    @property
    def name(self) -> str:
        return f"batches/{self.id}"


TERMINAL = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED")


class IndependentGeminiServer:
    """A threaded Gemini API server on 127.0.0.1 (context manager).

    Args:
        answer: the text of each request (batch line or live call).
        turnaround: seconds from a job's creation until it has run (it is PENDING until first read, then RUNNING).
        fail: which requests fail, and how (see `Fail`), after the server's own validation.
        models: the model ids served (`models/{id}`); a job or call for another model is 404 NOT_FOUND.
        api_key: the only key accepted (None: any key); a request without a key is 403 PERMISSION_DENIED.
        refused_mime_types: upload MIME types refused with 400 "Unsupported MIME type" (the service has refused
            `jsonl` and `application/jsonl` at times: python-genai #1547).
        page_cap: the most operations one `batches.list` page holds, whatever `pageSize` asks.
        refuse_creates: how many `batchGenerateContent` calls to refuse first with 429 RESOURCE_EXHAUSTED and a
            `google.rpc.RetryInfo` detail (`retryDelay` "0.2s"), as the quota errors of
            https://ai.google.dev/gemini-api/docs/troubleshooting are shaped; a refused create makes nothing.
        shuffle_seed: seed of the responses file's order.

    What a test inspects: `lines` ((batch name, key, request as sent) per request line), `live_requests` (bodies of
    `generateContent`), `batches` (every job as `batches.get` shows it now), `files` (name → bytes of every file),
    `calls` ((method, path with query) of every request), `keys_seen` (the API keys received).
    """

    def __init__(
        self,
        *,
        answer: Answer = echo_answer,
        turnaround: float = 0.0,
        fail: Fail | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
        api_key: str | None = None,
        refused_mime_types: Sequence[str] = (),
        page_cap: int = 1000,
        refuse_creates: int = 0,
        shuffle_seed: int = 0,
    ) -> None:
        self.refuse_creates = refuse_creates
        self.answer = answer
        self.turnaround = turnaround
        self.fail = fail
        self.models = list(models)
        self.api_key = api_key
        self.refused_mime_types = set(refused_mime_types)
        self.page_cap = page_cap
        self.shuffle_seed = shuffle_seed
        self.lines: list[tuple[str, str, dict[str, Any]]] = []
        self.live_requests: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str]] = []
        self.call_times: list[float] = []  # time.monotonic() of each of `calls`
        self.keys_seen: set[str] = set()
        self._files: dict[str, _File] = {}
        self._uploads: dict[str, _Upload] = {}
        self._batches: dict[str, _Batch] = {}
        self._seq = itertools.count(1)
        self._lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def __enter__(self) -> IndependentGeminiServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def base_url(self) -> str:
        """The SDK's `base_url` (the SDK adds `v1beta/` or `upload/v1beta/` itself)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Every job created and not deleted, oldest first, as `batches.get` shows it now."""
        with self._lock:
            return [self._operation(b, advance=False) for b in sorted(self._batches.values(), key=lambda b: b.seq)]

    @property
    def files(self) -> dict[str, bytes]:
        with self._lock:
            return {f.name: f.data for f in self._files.values()}

    # ---- test controls ---------------------------------------------------------------------------------------
    def expire(self, name: str) -> None:
        """End a job as its 48 hours running out would: no results."""
        with self._lock:
            batch = self._batches[name.removeprefix("batches/")]
            if batch.state not in TERMINAL:
                self._end(batch, "BATCH_STATE_EXPIRED", {"code": 4, "message": "The batch expired."})

    def fail_batch(self, name: str, message: str = "Internal error while running the batch.") -> None:
        """End a job as FAILED with `error` set (code 13 INTERNAL): no results."""
        with self._lock:
            batch = self._batches[name.removeprefix("batches/")]
            if batch.state not in TERMINAL:
                self._end(batch, "BATCH_STATE_FAILED", {"code": 13, "message": message})

    # ---- resources -------------------------------------------------------------------------------------------
    def _file_resource(self, f: _File) -> dict[str, Any]:
        resource: dict[str, Any] = {
            "name": f.name,
            "mimeType": f.mime_type,
            "sizeBytes": str(len(f.data)),  # int64 is a string in proto3 JSON
            "createTime": rfc3339(f.created_at),
            "updateTime": rfc3339(f.created_at),
            "expirationTime": rfc3339(f.created_at + FILE_LIFETIME),
            "sha256Hash": base64.b64encode(hashlib.sha256(f.data).digest()).decode(),
            "uri": f"{self.base_url}/{API_VERSION}/{f.name}",
            "state": "ACTIVE",
            "source": f.source,
        }
        if f.display_name:
            resource["displayName"] = f.display_name
        if f.source == "GENERATED":
            resource["downloadUri"] = f"{self.base_url}/download/{API_VERSION}/{f.name}:download?alt=media"
        return resource

    def _operation(self, batch: _Batch, advance: bool = True) -> dict[str, Any]:
        if advance:  # a read by a client moves the job on; a test's look does not
            self._advance(batch)
        metadata: dict[str, Any] = {
            "@type": BATCH_TYPE,
            "name": batch.name,
            "model": f"models/{batch.model}",
            "displayName": batch.display_name,
            "inputConfig": {"fileName": batch.input_file},
            "createTime": rfc3339(batch.created_at),
            "updateTime": rfc3339(batch.updated_at or batch.created_at),
            "batchStats": {k: str(v) for k, v in batch.stats.items()},
            "state": batch.state,
        }
        operation: dict[str, Any] = {"name": batch.name, "metadata": metadata}
        if batch.ended_at is not None:
            metadata["endTime"] = rfc3339(batch.ended_at)
            operation["done"] = True
        if batch.responses_file is not None:
            metadata["output"] = {"responsesFile": batch.responses_file}
            operation["response"] = {"@type": OUTPUT_TYPE, "responsesFile": batch.responses_file}
        if batch.error is not None:
            operation["error"] = batch.error
        return operation

    # ---- behaviour -------------------------------------------------------------------------------------------
    def _advance(self, batch: _Batch) -> None:
        if batch.state in TERMINAL:
            return
        if batch.state == "BATCH_STATE_PENDING" and batch.polls > 0:
            batch.state, batch.updated_at = "BATCH_STATE_RUNNING", datetime.now(UTC)
        if time.monotonic() >= batch.ready_at and batch.polls > 0:
            self._run(batch)
        batch.polls += 1

    def _end(self, batch: _Batch, state: str, error: dict[str, Any] | None) -> None:
        batch.state, batch.error = state, error
        batch.ended_at = batch.updated_at = datetime.now(UTC)
        batch.stats["pendingRequestCount"] = 0

    def _run(self, batch: _Batch) -> None:
        """Run every line of the job's input file and write the shuffled responses file."""
        source = self._files.get(batch.input_file.removeprefix("files/"))
        if source is None:
            self._end(batch, "BATCH_STATE_FAILED", {"code": 5, "message": f"{batch.input_file} not found"})
            return
        out: list[dict[str, Any]] = []
        keys: set[str] = set()
        for number, raw in enumerate(source.data.decode("utf-8", errors="replace").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                line = None
            key = line.get("key") if isinstance(line, dict) else None
            problem = None
            if not isinstance(line, dict):
                problem = "is not a JSON object"
            elif set(line) - {"key", "request"}:
                problem = f"has an unknown field {sorted(set(line) - {'key', 'request'})[0]!r}"
            elif not isinstance(key, str) or not key:
                problem = "has no key"
            elif key in keys:
                problem = f"repeats the key {key!r}"
            if problem is not None:
                message = f"Invalid request file {batch.input_file}: line {number} {problem}."
                self._end(batch, "BATCH_STATE_FAILED", {"code": 3, "message": message})
                return
            keys.add(str(key))
            self.lines.append((batch.name, str(key), line.get("request")))
            out.append(self._line(str(key), line.get("request"), batch.model))
        random.Random(self.shuffle_seed).shuffle(out)
        failed = sum("error" in o for o in out)
        batch.stats.update(requestCount=len(out), successfulRequestCount=len(out) - failed, failedRequestCount=failed)
        result = _File(
            f"batch-{batch.id}",
            None,
            "application/jsonl",
            b"".join(json.dumps(o).encode() + b"\n" for o in out),
            datetime.now(UTC),
            "GENERATED",
        )
        self._files[result.id] = result
        batch.responses_file = result.name
        self._end(batch, "BATCH_STATE_SUCCEEDED", None)

    def _line(self, key: str, raw: Any, model: str) -> dict[str, Any]:
        try:
            request = validate_request(raw)
        except ApiError as exc:
            return {"key": key, "error": {"code": exc.code, "message": exc.message, "status": exc.status}}
        failure = self.fail(key, request) if self.fail is not None else None
        if failure is not None:
            code, status, message = failure
            return {"key": key, "error": {"code": code, "message": message, "status": status}}
        return {"key": key, "response": self.generate(request, model)}

    def generate(self, request: dict[str, Any], model: str) -> dict[str, Any]:
        text = self.answer(request)
        prompt = _tokens(json.dumps(request["contents"]) + json.dumps(request.get("systemInstruction", "")))
        output = _tokens(text)
        return {
            "candidates": [
                {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": output,
                "totalTokenCount": prompt + output,
            },
            "modelVersion": model,
            "responseId": secrets.token_urlsafe(12),
        }

    def _model(self, segment: str) -> str:
        if segment not in self.models:
            raise ApiError(404, f"models/{segment} is not found for API version {API_VERSION}.")
        return segment

    # ---- routes ----------------------------------------------------------------------------------------------
    def start_upload(self, headers: Any, body: Any) -> tuple[dict[str, Any], dict[str, str]]:
        if headers.get("X-Goog-Upload-Protocol") != "resumable" or headers.get("X-Goog-Upload-Command") != "start":
            raise ApiError(400, "Expected X-Goog-Upload-Protocol: resumable and X-Goog-Upload-Command: start.")
        meta = proto_json(body.get("file", {}) if isinstance(body, dict) else None, FILE_FIELDS, "file")
        if set(body) - {"file"}:
            raise ApiError(400, f'Invalid JSON payload received. Unknown name "{sorted(set(body) - {"file"})[0]}".')
        size = headers.get("X-Goog-Upload-Header-Content-Length")
        mime = headers.get("X-Goog-Upload-Header-Content-Type") or meta.get("mimeType")
        if size is None or not size.isdigit():
            raise ApiError(400, "X-Goog-Upload-Header-Content-Length is required.")
        if not mime:
            raise ApiError(400, "The file's MIME type is required.")
        if mime in self.refused_mime_types:
            raise ApiError(400, f"Unsupported MIME type: {mime}")
        upload_id = secrets.token_urlsafe(16)
        self._uploads[upload_id] = _Upload(meta.get("displayName"), mime, int(size))
        url = f"{self.base_url}/upload/{API_VERSION}/files?upload_id={upload_id}&upload_protocol=resumable"
        return {}, {"X-Goog-Upload-URL": url, "X-Goog-Upload-Status": "active"}

    def upload_chunk(self, upload_id: str, headers: Any, data: bytes) -> tuple[dict[str, Any], dict[str, str]]:
        upload = self._uploads.get(upload_id)
        if upload is None:
            raise ApiError(404, "No upload session with this upload_id.")
        command = {c.strip() for c in (headers.get("X-Goog-Upload-Command") or "").split(",")}
        offset = headers.get("X-Goog-Upload-Offset")
        if "upload" not in command or offset is None or int(offset) != len(upload.data):
            raise ApiError(400, f"Expected X-Goog-Upload-Command: upload at X-Goog-Upload-Offset {len(upload.data)}.")
        upload.data.extend(data)
        if "finalize" not in command:
            return {}, {"X-Goog-Upload-Status": "active"}
        del self._uploads[upload_id]
        if len(upload.data) != upload.size:
            raise ApiError(400, f"Uploaded {len(upload.data)} bytes, but {upload.size} were declared.")
        stored = _File(
            secrets.token_hex(6),
            upload.display_name,
            upload.mime_type,
            bytes(upload.data),
            datetime.now(UTC),
            "UPLOADED",
        )
        self._files[stored.id] = stored
        return {"file": self._file_resource(stored)}, {"X-Goog-Upload-Status": "final"}

    def create_batch(self, model: str, body: Any) -> dict[str, Any]:
        if self.refuse_creates > 0:
            self.refuse_creates -= 1
            retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}
            raise ApiError(429, "Resource has been exhausted (e.g. check quota).", details=[retry])
        if not isinstance(body, dict) or set(body) - {"batch"}:
            extra = sorted(set(body) - {"batch"})[0] if isinstance(body, dict) else "(body)"
            raise ApiError(400, f'Invalid JSON payload received. Unknown name "{extra}": Cannot find field.')
        batch = proto_json(body.get("batch"), BATCH_FIELDS, "batch")
        config = proto_json(batch.get("inputConfig"), INPUT_CONFIG_FIELDS, "batch.input_config")
        display_name = batch.get("displayName")
        if not isinstance(display_name, str) or not display_name:
            raise ApiError(400, "* BatchGenerateContentRequest.batch.display_name: display_name is required")
        if "requests" in config:
            raise ApiError(400, "This server does not serve inlined requests.", "UNIMPLEMENTED")
        file_name = config.get("fileName")
        if not isinstance(file_name, str) or not file_name.startswith("files/"):
            raise ApiError(400, "* BatchGenerateContentRequest.batch.input_config: file_name is required")
        if file_name.removeprefix("files/") not in self._files:
            raise ApiError(404, f"File {file_name} not found.")
        seq = next(self._seq)
        created = _Batch(
            secrets.token_hex(8),
            seq,
            self._model(model),
            display_name,
            file_name,
            datetime.now(UTC),
            time.monotonic() + self.turnaround,
        )
        created.stats = {"requestCount": 0, "pendingRequestCount": 0}
        self._batches[created.id] = created
        return self._operation(created)

    def batch(self, batch_id: str) -> _Batch:
        found = self._batches.get(batch_id)
        if found is None:
            raise ApiError(404, f"Requested entity was not found: batches/{batch_id}.")
        return found

    def list_batches(self, query: dict[str, list[str]]) -> dict[str, Any]:
        size = int((query.get("pageSize") or ["50"])[0] or 50)
        size = max(1, min(size, self.page_cap))
        start = int((query.get("pageToken") or ["0"])[0] or 0)
        newest_first = sorted(self._batches.values(), key=lambda b: -b.seq)
        page = newest_first[start : start + size]
        answer: dict[str, Any] = {"operations": [self._operation(b) for b in page]}
        if start + size < len(newest_first):
            answer["nextPageToken"] = str(start + size)
        return answer

    def cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self.batch(batch_id)
        if batch.state in TERMINAL:
            raise ApiError(400, f"Batch {batch.name} has already ended ({batch.state}).", "FAILED_PRECONDITION")
        self._end(batch, "BATCH_STATE_CANCELLED", {"code": 1, "message": "The batch was cancelled."})
        return {}

    def model_resource(self, model: str) -> dict[str, Any]:
        return {
            "name": f"models/{model}",
            "baseModelId": model,
            "version": "001",
            "displayName": model,
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens", "batchGenerateContent"],
        }


class _Handler(BaseHTTPRequestHandler):
    owner: IndependentGeminiServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes: without this, Nagle's algorithm and the client's delayed ACK hold
        # each answer for ~40 ms on a kept-alive connection.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            raise ApiError(400, "Invalid JSON payload received.") from None

    def _authorise(self, query: dict[str, list[str]]) -> None:
        key = self.headers.get("x-goog-api-key") or (query.get("key") or [None])[0]
        if not key:
            raise ApiError(
                403,
                "Method doesn't allow unregistered callers (callers without established identity). Please use API "
                "Key or other form of API consumer identity to call this API.",
            )
        self.owner.keys_seen.add(key)
        if self.owner.api_key is not None and key != self.owner.api_key:
            raise ApiError(400, "API key not valid. Please pass a valid API key.")

    def _handle(self, method: str) -> None:
        owner = self.owner
        url = urlparse(self.path)
        query = parse_qs(url.query)
        path = url.path.strip("/")
        raw = self._body() if method in ("POST", "PATCH") else b""
        with owner._lock:
            owner.calls.append((method, self.path))
            owner.call_times.append(time.monotonic())
        try:
            with owner._lock:
                status, body, headers, data = self._route(method, path, query, raw)
        except ApiError as exc:
            self._send(exc.code, exc.body())
            return
        self._send(status, body, headers, data)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], raw: bytes
    ) -> tuple[int, Any, dict[str, str] | None, bytes | None]:
        owner = self.owner
        upload = f"upload/{API_VERSION}/files"
        if path == upload and method == "POST":
            if "upload_id" in query:  # the session URL authorises the bytes: the SDK sends no key with them
                body, headers = owner.upload_chunk(query["upload_id"][0], self.headers, raw)
                return 200, body, headers, None
            self._authorise(query)
            body, headers = owner.start_upload(self.headers, self._json(raw))
            return 200, body, headers, None
        self._authorise(query)
        rest = path.removeprefix("download/")
        version, _, rest = rest.partition("/")
        # Batch mode and the Files API are documented under v1beta only; models and generateContent under both.
        if version not in (API_VERSION, "v1") or (version == "v1" and not rest.startswith("models")):
            raise ApiError(404, f"The requested URL /{path} was not found on this server.")
        if rest.startswith("files/") and rest.endswith(":download") and method == "GET":
            found = owner._files.get(rest.removeprefix("files/").removesuffix(":download"))
            if found is None:
                raise ApiError(404, f"File {rest.removesuffix(':download')} not found.")
            if query.get("alt") != ["media"]:
                raise ApiError(400, "Downloading a file needs alt=media.")
            if found.source != "GENERATED":
                raise ApiError(400, "Only generated files can be downloaded; uploaded files cannot.")
            return 200, None, None, found.data
        if rest.startswith("files/") and method in ("GET", "DELETE"):
            found = owner._files.get(rest.removeprefix("files/"))
            if found is None:
                raise ApiError(403, f"You do not have permission to access the File {rest} or it may not exist.")
            if method == "DELETE":
                del owner._files[found.id]
                return 200, {}, None, None
            return 200, owner._file_resource(found), None, None
        if rest == "batches" and method == "GET":
            return 200, owner.list_batches(query), None, None
        if rest.startswith("batches/"):
            batch_id = rest.removeprefix("batches/")
            if batch_id.endswith(":cancel") and method == "POST":
                return 200, owner.cancel(batch_id.removesuffix(":cancel")), None, None
            if method == "GET":
                return 200, owner._operation(owner.batch(batch_id)), None, None
            if method == "DELETE":
                del owner._batches[owner.batch(batch_id).id]
                return 200, {}, None, None
        if rest == "models" and method == "GET":
            return 200, {"models": [owner.model_resource(m) for m in owner.models]}, None, None
        if rest.startswith("models/"):
            model, _, verb = rest.removeprefix("models/").partition(":")
            if method == "GET" and not verb:
                return 200, owner.model_resource(owner._model(model)), None, None
            if method == "POST" and verb == "batchGenerateContent":
                return 200, owner.create_batch(model, self._json(raw)), None, None
            if method == "POST" and verb == "generateContent":
                body = self._json(raw)
                owner.live_requests.append(body)
                request = validate_request(body, "generate_content_request", version)
                failure = owner.fail(None, request) if owner.fail is not None else None
                if failure is not None:
                    raise ApiError(failure[0], failure[2], failure[1])
                return 200, owner.generate(request, owner._model(model)), None, None
        raise ApiError(404, f"The requested URL /{path} was not found on this server.")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

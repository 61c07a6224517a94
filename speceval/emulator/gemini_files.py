"""Gemini Files API of the emulator: resumable upload, metadata, list, download, delete.

Upload as google-genai speaks it: `POST /upload/{ver}/files` with `X-Goog-Upload-Command: start` answers an
absolute `X-Goog-Upload-URL` on the emulator; chunks are POSTed there (no API key: the URL is the credential)
with `upload` / `upload, finalize`, and each reply carries `X-Goog-Upload-Status`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from speceval.emulator.common import download_bytes, int_arg, rfc3339, sha256_base64
from speceval.emulator.context import EmulatorContext
from speceval.emulator.jobs import random_lower_id
from speceval.emulator.routing import ApiError, Request, Response, Route, bytes_response, json_response
from speceval.emulator.state import StoredFile

PROVIDER = "gemini"
VERSIONS = "v1|v1beta"
"""The API versions that serve models and generateContent."""
BATCH_VERSIONS = "v1beta"
"""The only version documented to serve batch mode and the Files API (https://ai.google.dev/api/batch-mode): the
emulator answers 404 under v1 for them as the real API does, so a client that sends them there (google-genai 3.x's
default) fails here first, not against Google."""
FILE_RETENTION_SECONDS = 48 * 3600
_FILE_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")


def file_not_found(name: str) -> ApiError:
    """Gemini's 404 for an unknown file."""
    return ApiError(404, f"File {name} does not exist or you do not have permission to access it.")


def file_json(meta: StoredFile, base_url: str, version: str) -> dict[str, Any]:
    """The File resource (camelCase, int64 as string, RFC 3339 times)."""
    body: dict[str, Any] = {
        "name": f"files/{meta.id}",
        "mimeType": meta.mime_type,
        "sizeBytes": str(meta.size),
        "createTime": rfc3339(meta.created_at),
        "updateTime": rfc3339(meta.created_at),
        "expirationTime": rfc3339(meta.expires_at or meta.created_at + FILE_RETENTION_SECONDS),
        "sha256Hash": sha256_base64(meta.sha256),
        "uri": f"{base_url}/gemini/{version}/files/{meta.id}",
        "state": "ACTIVE",
        "source": "GENERATED" if meta.generated else "UPLOADED",
    }
    if meta.display_name:
        body["displayName"] = meta.display_name
    if meta.generated:
        body["downloadUri"] = f"{base_url}/gemini/download/{version}/files/{meta.id}:download?alt=media"
    return body


def api_key_present(request: Request) -> bool:
    """`x-goog-api-key` header or `?key=` query parameter."""
    return bool((request.header("x-goog-api-key") or "").strip() or (request.arg("key") or "").strip())


@dataclass
class _Session:
    version: str
    file_id: str
    display_name: str | None
    mime_type: str
    data: bytearray = field(default_factory=bytearray)


class GeminiFiles:
    """Handlers of the Files API (and the upload protocol)."""

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind to the emulator context; upload sessions live in memory only."""
        self.ctx = ctx
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def routes(self) -> list[Route]:
        """Routes relative to the `/gemini` prefix (v1beta only: `BATCH_VERSIONS`)."""
        ver = "{ver:" + BATCH_VERSIONS + "}"
        return [
            # Chunk posts carry no API key, so this route checks the key itself (only for `start`).
            Route("POST", f"/upload/{ver}/files", self.upload, auth=False),
            Route("GET", f"/{ver}/files", self.list_files),
            Route("GET", f"/{ver}/files/{{file_id}}", self.retrieve),
            Route("DELETE", f"/{ver}/files/{{file_id}}", self.delete),
            Route("GET", f"/{ver}/files/{{file_id}}:download", self.download),
            Route("GET", f"/download/{ver}/files/{{file_id}}:download", self.download),
        ]

    def _get(self, file_id: str) -> StoredFile:
        meta = self.ctx.store.get_file(PROVIDER, file_id)
        if meta is None:
            raise file_not_found(f"files/{file_id}")
        return meta

    def upload(self, request: Request) -> Response:
        """Start an upload session, or receive one chunk of it."""
        upload_id = request.arg("upload_id")
        if upload_id is None:
            if not api_key_present(request):
                raise ApiError(
                    403,
                    "Method doesn't allow unregistered callers (callers without established "
                    "identity). Please use API Key or other form of API consumer identity to call "
                    "this API.",
                )
            return self._start(request)
        return self._chunk(request, upload_id)

    def _start(self, request: Request) -> Response:
        command = (request.header("x-goog-upload-command") or "").lower()
        if "start" not in command:
            raise ApiError(400, "Expected X-Goog-Upload-Command: start.")
        body = request.json()
        spec = body.get("file", {}) if isinstance(body, dict) else {}
        spec = spec if isinstance(spec, dict) else {}
        mime_type = (
            spec.get("mime_type")
            or spec.get("mimeType")
            or request.header("x-goog-upload-header-content-type")
            or "application/octet-stream"
        )
        if mime_type in self.ctx.faults.gemini_refused_mime_types:
            raise ApiError(400, f"Unsupported MIME type: {mime_type}")
        name = spec.get("name")
        if name:
            file_id = str(name).removeprefix("files/")
            if not _FILE_ID.match(file_id):
                raise ApiError(
                    400, f"Invalid file name '{name}': use files/ plus up to 40 lowercase letters, digits or dashes."
                )
            if self.ctx.store.get_file(PROVIDER, file_id) is not None:
                raise ApiError(409, f"File files/{file_id} already exists.", kind="ALREADY_EXISTS")
        else:
            file_id = random_lower_id(length=12)
        upload_id = random_lower_id("up", 24)
        with self._lock:
            self._sessions[upload_id] = _Session(
                version=request.params["ver"],
                file_id=file_id,
                mime_type=str(mime_type),
                display_name=spec.get("display_name") or spec.get("displayName"),
            )
        url = (
            f"{request.base_url}/gemini/upload/{request.params['ver']}/files?upload_id={upload_id}"
            "&upload_protocol=resumable"
        )
        return Response(
            200,
            b"",
            {"x-goog-upload-url": url, "x-goog-upload-status": "active", "content-type": "text/plain; charset=utf-8"},
        )

    def _chunk(self, request: Request, upload_id: str) -> Response:
        with self._lock:
            session = self._sessions.get(upload_id)
            if session is None:
                raise ApiError(404, f"Upload session {upload_id} not found.")
            offset = int_arg(request.header("x-goog-upload-offset"), len(session.data), 0, 2**62, "offset")
            if offset > len(session.data):
                raise ApiError(400, f"Upload offset {offset} is past the {len(session.data)} bytes received.")
            # A re-sent chunk (the SDK retries when a reply lacked the status header) replaces the tail.
            del session.data[offset:]
            session.data += request.body
            command = (request.header("x-goog-upload-command") or "").lower()
            if "finalize" not in command:
                return Response(200, b"", {"x-goog-upload-status": "active"})
            del self._sessions[upload_id]
        data = bytes(session.data)
        now = self.ctx.now()
        meta = StoredFile(
            provider=PROVIDER,
            id=session.file_id,
            seq=self.ctx.store.next_seq(),
            filename=session.display_name or session.file_id,
            display_name=session.display_name,
            mime_type=session.mime_type,
            created_at=now,
            expires_at=now + FILE_RETENTION_SECONDS,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )
        self.ctx.store.put_file(meta, data)
        self.ctx.count_upload()
        body = {"file": file_json(meta, request.base_url, session.version)}
        return json_response(body, headers={"x-goog-upload-status": "final"})

    def retrieve(self, request: Request) -> Response:
        """`GET /{ver}/files/{id}`."""
        meta = self._get(request.params["file_id"])
        return json_response(file_json(meta, request.base_url, request.params["ver"]))

    def delete(self, request: Request) -> Response:
        """`DELETE /{ver}/files/{id}` → `{}`."""
        file_id = request.params["file_id"]
        if not self.ctx.store.delete_file(PROVIDER, file_id):
            raise file_not_found(f"files/{file_id}")
        return json_response({})

    def download(self, request: Request) -> Response:
        """`GET /{ver}/files/{id}:download?alt=media` (and the `/download/…` REST form): raw bytes."""
        meta = self._get(request.params["file_id"])
        data = download_bytes(self.ctx, meta, file_not_found(f"files/{meta.id}"))
        return bytes_response(data, meta.mime_type if "/" in meta.mime_type else "application/octet-stream")

    def list_files(self, request: Request) -> Response:
        """`GET /{ver}/files?pageSize=&pageToken=` → `{files, nextPageToken}`."""
        size = int_arg(request.arg("pageSize"), 10, 1, 100, "pageSize")
        files = self.ctx.store.list_files(PROVIDER)
        start = int_arg(request.arg("pageToken"), 0, 0, 2**31, "pageToken")
        page = files[start : start + size]
        body: dict[str, Any] = {"files": [file_json(f, request.base_url, request.params["ver"]) for f in page]}
        if start + size < len(files):
            body["nextPageToken"] = str(start + size)
        return json_response(body)

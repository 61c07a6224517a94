"""OpenAI Files API (`/v1/files…`) of the emulator: multipart upload, metadata, list, content, delete."""

from __future__ import annotations

import hashlib
from typing import Any

from speceval.emulator.common import download_bytes, int_arg
from speceval.emulator.context import EmulatorContext
from speceval.emulator.jobs import random_id
from speceval.emulator.multipart import parse_multipart
from speceval.emulator.routing import ApiError, Request, Response, Route, bytes_response, json_response
from speceval.emulator.state import StoredFile

PROVIDER = "openai"
_PURPOSES = {"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}
_DEFAULT_BATCH_FILE_RETENTION = 30 * 24 * 3600


def file_json(meta: StoredFile) -> dict[str, Any]:
    """The FileObject of `meta`."""
    return {
        "id": meta.id,
        "object": "file",
        "bytes": meta.size,
        "created_at": int(meta.created_at),
        "filename": meta.filename,
        "purpose": meta.purpose,
        "status": "processed",
        "expires_at": None if meta.expires_at is None else int(meta.expires_at),
        "status_details": None,
    }


def file_not_found(file_id: str) -> ApiError:
    """OpenAI's 404 for an unknown file."""
    return ApiError(404, f"No such File object: {file_id}", param="id")


class OpenAIFiles:
    """Handlers of the Files API."""

    def __init__(self, ctx: EmulatorContext) -> None:
        """Bind to the emulator context."""
        self.ctx = ctx

    def routes(self) -> list[Route]:
        """Routes relative to the `/openai` prefix."""
        return [
            Route("POST", "/v1/files", self.upload),
            Route("GET", "/v1/files", self.list_files),
            Route("GET", "/v1/files/{file_id}", self.retrieve),
            Route("DELETE", "/v1/files/{file_id}", self.delete),
            Route("GET", "/v1/files/{file_id}/content", self.content),
        ]

    def _get(self, file_id: str) -> StoredFile:
        meta = self.ctx.store.get_file(PROVIDER, file_id)
        if meta is None:
            raise file_not_found(file_id)
        return meta

    def upload(self, request: Request) -> Response:
        """`POST /v1/files` (multipart: purpose, file, optional expires_after[anchor|seconds])."""
        content_type = request.header("content-type", "") or ""
        if not content_type.startswith("multipart/form-data"):
            raise ApiError(400, "Expected a multipart/form-data request body.")
        try:
            parts = parse_multipart(request.body, content_type)
        except ValueError as exc:
            raise ApiError(400, f"Could not parse multipart form: {exc}") from None
        if "file" not in parts:
            raise ApiError(400, "Missing required parameter: 'file'.", param="file", code="missing_required_parameter")
        if "purpose" not in parts:
            raise ApiError(
                400, "Missing required parameter: 'purpose'.", param="purpose", code="missing_required_parameter"
            )
        purpose = parts["purpose"].text.strip()
        if purpose not in _PURPOSES:
            raise ApiError(
                400,
                f"'{purpose}' is not one of {sorted(_PURPOSES)} - 'purpose'",
                param="purpose",
            )
        now = self.ctx.now()
        expires_at: float | None = now + _DEFAULT_BATCH_FILE_RETENTION if purpose == "batch" else None
        if "expires_after[seconds]" in parts:
            anchor = parts.get("expires_after[anchor]")
            if anchor is None or anchor.text.strip() != "created_at":
                raise ApiError(400, "expires_after.anchor must be 'created_at'.", param="expires_after.anchor")
            seconds = int_arg(parts["expires_after[seconds]"].text.strip(), 0, 3600, 2592000, "expires_after.seconds")
            expires_at = now + seconds
        data = parts["file"].data
        meta = StoredFile(
            provider=PROVIDER,
            id=random_id("file-", 22),
            seq=self.ctx.store.next_seq(),
            filename=parts["file"].filename or "upload",
            purpose=purpose,
            created_at=now,
            expires_at=expires_at,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )
        self.ctx.store.put_file(meta, data)
        self.ctx.count_upload()
        return json_response(file_json(meta))

    def retrieve(self, request: Request) -> Response:
        """`GET /v1/files/{file_id}`."""
        return json_response(file_json(self._get(request.params["file_id"])))

    def delete(self, request: Request) -> Response:
        """`DELETE /v1/files/{file_id}`."""
        file_id = request.params["file_id"]
        if not self.ctx.store.delete_file(PROVIDER, file_id):
            raise file_not_found(file_id)
        return json_response({"id": file_id, "object": "file", "deleted": True})

    def content(self, request: Request) -> Response:
        """`GET /v1/files/{file_id}/content`: the raw bytes."""
        meta = self._get(request.params["file_id"])
        data = download_bytes(self.ctx, meta, file_not_found(meta.id))
        return bytes_response(data, "application/octet-stream")

    def list_files(self, request: Request) -> Response:
        """`GET /v1/files?purpose=&order=&limit=&after=`."""
        limit = int_arg(request.arg("limit"), 10000, 1, 10000, "limit")
        order = request.arg("order", "desc")
        if order not in ("asc", "desc"):
            raise ApiError(400, "Invalid value for 'order': expected 'asc' or 'desc'.", param="order")
        purpose = request.arg("purpose")
        files = self.ctx.store.list_files(PROVIDER)
        if order == "asc":
            files.reverse()
        if purpose:
            files = [f for f in files if f.purpose == purpose]
        after = request.arg("after")
        if after:
            ids = [f.id for f in files]
            files = files[ids.index(after) + 1 :] if after in ids else []
        page = files[:limit]
        return json_response(
            {
                "object": "list",
                "data": [file_json(f) for f in page],
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(files) > limit,
            }
        )

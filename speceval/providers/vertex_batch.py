"""Vertex AI batch prediction adapter (Gemini models on Google Cloud): GCS JSONL in → job → GCS JSONL out.

Wire format (Vertex `projects.locations.batchPredictionJobs`, driven through google-genai in Vertex mode):
- Input: one JSONL object in `gs://<input bucket>/speceval/<idempotency key>.jsonl`, a line per request:
  `{"key": <custom id>, "request": GenerateContentRequest}`. The request is the Gemini adapter's, plus
  `labels: {"speceval_custom_id": <custom id>}`. Vertex writes each output row with the request it answered;
  that the label or the `key` come back is not documented, so rows are matched by that id where echoed, else by
  the echoed request (`vertex_rows`). A job none of whose rows can be matched stops the run
  (`UnmatchedResultsError`) rather than being paid for again.
- Job: `display_name` = the idempotency key (found again after a crash by listing with a display-name filter);
  output prefix `gs://<output bucket>/speceval/<idempotency key>/`, unique to the job.
- Output: Vertex creates a new folder under the prefix and reports it as `outputInfo.gcsOutputDirectory`; only
  the `.jsonl` objects under that folder are read. Each row has `status` (empty on success, the error otherwise)
  and, on success, `response` (a GenerateContentResponse, parsed by the Gemini adapter's functions). Vertex
  exports the rows it completed also when a job is cancelled, expires or fails part-way, so those are read too.
- A failed job's `error` is a `google.rpc.Status` whose `details` are objects; google-genai types them as
  strings and refuses such a job, so jobs it cannot parse are read from the raw JSON instead.

Credentials are Application Default Credentials (or `credentials=`); project and location come from the
arguments or `GOOGLE_CLOUD_PROJECT` / `GOOGLE_CLOUD_LOCATION`, never from a default of ours.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlencode

from pydantic import ValidationError

from speceval.batch.answers import Answer
from speceval.batch.model import LeanBatchedModel, ProviderLimits
from speceval.batch.records import (
    BatchRecord,
    JobState,
    RemoteJob,
    SubmissionIntent,
    VertexHandle,
)
from speceval.errors import ConfigError, ProviderError, UnmatchedResultsError
from speceval.providers.credentials import register_refreshing_token
from speceval.providers.google_calls import call_google, raw_get
from speceval.providers.http_errors import http_error
from speceval.providers.vertex_jobs import job_from_sdk, job_from_wire
from speceval.providers.vertex_rows import LABEL, RequestIndex, echoed_id, parse_prediction_line, read_row, row_answer
from speceval.wire.gemini import generate_content_request
from speceval.wire.lines import encode_line
from speceval.wire.params import GenerationParams
from speceval.wire.prompt import PromptLike
from speceval.wire.tls import genai_tls_options

__all__ = ["VertexBatchedModel", "parse_prediction_line"]

logger = logging.getLogger(__name__)

MIME_TYPE = "application/jsonl"
OBJECT_PREFIX = "speceval"
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
LOCATION_ENV = "GOOGLE_CLOUD_LOCATION"
_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
T = TypeVar("T")


class VertexBatchedModel(LeanBatchedModel):
    """A Gemini model reached through Vertex AI batch prediction, with Cloud Storage for input and output.

    Limits (Vertex documentation for Gemini batch jobs): 200,000 requests and a 1 GB input file per job.
    """

    provider: ClassVar[str] = "vertex"
    limits: ClassVar[ProviderLimits] = ProviderLimits(max_requests=200_000, max_bytes=1_000_000_000)

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
        project: str | None = None,
        location: str | None = None,
        input_bucket: str | None = None,
        output_bucket: str | None = None,
        credentials: Any = None,
        storage_endpoint: str | None = None,
    ):
        """Check the configuration and connect (no network call is made here).

        Args:
            api_key: not used: batch prediction needs a project, reached with ADC (accepted so the generic
                provider options can be passed).
            base_url: a Vertex endpoint other than Google's (e.g. the emulator's `/vertex`).
            project / location: the Google Cloud project and region (else `GOOGLE_CLOUD_PROJECT` /
                `GOOGLE_CLOUD_LOCATION`).
            input_bucket / output_bucket: buckets, as `name`, `gs://name` or `gs://name/folder/` (objects of
                ours then go under that folder).
            credentials: google-auth credentials; None = Application Default Credentials.
            storage_endpoint: a Cloud Storage endpoint other than Google's.
        """
        super().__init__(model_name, params)
        del api_key  # batch prediction is not available to API keys (express mode)
        self.project = project or os.environ.get(PROJECT_ENV) or None
        self.location = location or os.environ.get(LOCATION_ENV) or None
        required = (
            ("--project", f" (or ${PROJECT_ENV})", self.project),
            ("--location", f" (or ${LOCATION_ENV})", self.location),
            ("--input-bucket", "", input_bucket),
            ("--output-bucket", "", output_bucket),
        )
        missing = [flag + alternative for flag, alternative, value in required if not value]
        if missing:
            raise ConfigError(f"Vertex AI batch prediction needs {', '.join(missing)}")
        # The original SpecEval's configs give `gs://bucket/folder/`: the folder is kept as a prefix of ours.
        self.input_bucket, self.input_folder = _bucket_and_folder(input_bucket or "", "--input-bucket")
        self.output_bucket, self.output_folder = _bucket_and_folder(output_bucket or "", "--output-bucket")

        from google import genai  # lazy: `import speceval` must work without every vendor SDK
        from google.cloud import storage
        from google.genai import types

        credentials = register_refreshing_token(credentials if credentials is not None else _default_credentials())
        # One client per API, kept for the adapter's lifetime. No retry_options: the SDK then sends every call
        # once, which a non-idempotent create needs; a timeout is essential (the SDK has none by default).
        self._client = genai.Client(
            vertexai=True,
            project=self.project,
            location=self.location,
            credentials=credentials,
            http_options=types.HttpOptions(timeout=int(timeout * 1000), base_url=base_url, **genai_tls_options()),
        )
        client_options = {"api_endpoint": storage_endpoint} if storage_endpoint else None
        self._storage = storage.Client(project=self.project, credentials=credentials, client_options=client_options)
        self._timeout = timeout

    # -- request file -------------------------------------------------------------------------------------

    def format_request(self, custom_id: str, prompt: PromptLike) -> bytes:
        request = {**generate_content_request(self.params, prompt), "labels": {LABEL: custom_id}}
        return encode_line({"key": custom_id, "request": request})

    # -- submission ---------------------------------------------------------------------------------------

    def prepare(self, intent: SubmissionIntent, request_file: Path) -> VertexHandle:
        name = f"{self.input_folder}{OBJECT_PREFIX}/{intent.idempotency_key}.jsonl"
        blob = self._storage.bucket(self.input_bucket).blob(name)
        # Same name for the same chunk: uploading again after a crash replaces the object, it adds nothing.
        self._gcs(
            f"upload gs://{self.input_bucket}/{name}",
            lambda: blob.upload_from_filename(str(request_file), content_type=MIME_TYPE, timeout=self._timeout),
        )
        return VertexHandle(input_uri=f"gs://{self.input_bucket}/{name}")

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        handle = intent.handle if isinstance(intent.handle, VertexHandle) else None
        if handle is None or not handle.input_uri:
            handle = self.prepare(intent, request_file)
        input_uri = handle.input_uri or ""
        job = call_google(
            self.provider,
            "create batch prediction job",
            lambda: self._client.batches.create(
                model=self.model_name,
                src=input_uri,
                config={"display_name": intent.idempotency_key, "dest": self._dest(intent.idempotency_key)},
            ),
        )
        return job_from_sdk(job, input_uri)

    def find_submitted(self, intent: SubmissionIntent) -> RemoteJob | None:
        key = intent.idempotency_key
        handle = intent.handle if isinstance(intent.handle, VertexHandle) else None
        input_uri = handle.input_uri if handle else None
        wanted = f'display_name="{key}"'

        def tagged() -> Any:
            # Iterated inside the call: the pager fetches later pages while being iterated. The filter narrows
            # the listing on the server; the comparison keeps us right whatever the server makes of it.
            listing = self._client.batches.list(config={"page_size": 100, "filter": wanted})
            return next((job for job in listing if job.display_name == key), None)

        try:
            sdk_job = call_google(self.provider, "list batch prediction jobs", tagged)
            found = None if sdk_job is None else job_from_sdk(sdk_job, input_uri)
        except ValidationError:
            # A job in the listing the SDK cannot parse (a failed job's error details): read the pages raw.
            found = self._find_raw(wanted, key, input_uri)
        if found is not None:
            logger.info("found batch prediction job %s created for %s before an interruption", found.batch_id, key)
        return found

    def _find_raw(self, wanted: str, key: str, input_uri: str | None) -> RemoteJob | None:
        token = None
        while True:
            page = raw_get(
                self._client,
                self.provider,
                "list batch prediction jobs",
                "batchPredictionJobs?"
                + urlencode({"pageSize": 100, "filter": wanted, **({"pageToken": token} if token else {})}),
            )
            for body in page.get("batchPredictionJobs") or []:
                if isinstance(body, dict) and body.get("displayName") == key:
                    return job_from_wire(body, input_uri)
            token = page.get("nextPageToken")
            if not token:
                return None

    # -- tracking -----------------------------------------------------------------------------------------

    def check_batch_progress(self, record: BatchRecord) -> RemoteJob:
        operation = "get batch prediction job"
        try:
            job = call_google(self.provider, operation, lambda: self._client.batches.get(name=record.batch_id))
        except ValidationError:
            # google-genai types a failed job's `error.details` as strings; Google sends objects. Read it raw.
            body = raw_get(self._client, self.provider, operation, record.batch_id)
            return job_from_wire(body, _handle(record).input_uri)
        return job_from_sdk(job, _handle(record).input_uri)

    def cancel_batch(self, record: BatchRecord) -> RemoteJob:
        call_google(
            self.provider, "cancel batch prediction job", lambda: self._client.batches.cancel(name=record.batch_id)
        )
        return self.check_batch_progress(record)

    def iter_answers(self, record: BatchRecord) -> Iterator[Answer]:
        output_dir = _handle(record).output_dir
        if not output_dir:
            if record.state is JobState.COMPLETED:
                raise ProviderError(
                    self.provider, f"read results of {record.batch_id}", "the job succeeded but reported no output"
                )
            return  # ended before writing anything: the engine records every request by the job's state
        bucket, prefix = _split_gs_uri(output_dir)
        prefix = prefix.rstrip("/") + "/" if prefix else ""  # a folder: never a sibling that shares its name
        names = self._gcs(
            f"list {output_dir}",
            lambda: [b.name for b in self._storage.list_blobs(bucket, prefix=prefix, timeout=self._timeout)],
        )
        index: RequestIndex | None = None
        matched = unmatched = 0
        for name in sorted(n for n in names if n.endswith(".jsonl")):
            uri = f"gs://{bucket}/{name}"
            for line in self._download_lines(uri):
                row = read_row(line, uri)
                key = echoed_id(row)
                if key is None:
                    # No id came back with this answer: find the request it repeats among those we sent.
                    index = index or RequestIndex(self._download_lines(_handle(record).input_uri or ""))
                    key = index.claim(row.get("request"))
                if key is None:
                    unmatched += 1
                    continue
                matched += 1
                yield row_answer(key, row)
        if unmatched and not matched:
            raise UnmatchedResultsError(
                self.provider,
                record.batch_id,
                unmatched,
                f"no row repeats the {LABEL} label, the line's key or a request this job was sent (output in "
                f"{output_dir}). speceval stops here rather than pay for these requests again; please report this "
                "with one row of that output",
            )
        if unmatched:
            logger.warning(
                "job %s: %d of %d result row(s) match no request it was sent and are ignored (output in %s); the "
                "requests left without an answer are resubmitted",
                record.batch_id,
                unmatched,
                matched + unmatched,
                output_dir,
            )

    # -- helpers ------------------------------------------------------------------------------------------

    def _dest(self, key: str) -> str:
        return f"gs://{self.output_bucket}/{self.output_folder}{OBJECT_PREFIX}/{key}/"

    def _download_lines(self, uri: str) -> Iterator[str]:
        """The non-blank lines of a Cloud Storage object, streamed to disk first (it can be gigabytes)."""
        bucket, name = _split_gs_uri(uri)
        with tempfile.TemporaryDirectory(prefix="speceval-vertex-") as tmp:
            path = Path(tmp) / "object.jsonl"
            blob = self._storage.bucket(bucket).blob(name)
            self._gcs(f"download {uri}", lambda: blob.download_to_filename(str(path), timeout=self._timeout))
            with path.open("r", encoding="utf-8", errors="replace") as lines:
                yield from (line for line in lines if line.strip())

    def _gcs(self, operation: str, fn: Callable[[], T]) -> T:
        """Run one Cloud Storage call, turning its failures into our provider errors."""
        from google.api_core import exceptions as api_exceptions
        from requests import exceptions as requests_exceptions

        try:
            return fn()
        except api_exceptions.GoogleAPICallError as exc:
            raise http_error(self.provider, operation, exc.code, str(exc.message or exc)) from None
        except (requests_exceptions.RequestException, ConnectionError, TimeoutError) as exc:
            raise http_error(self.provider, operation, None, f"{type(exc).__name__}: {exc}") from None


def _default_credentials() -> Any:
    """Application Default Credentials, or a ConfigError saying how to set them up."""
    import google.auth
    from google.auth import exceptions

    try:
        credentials, _ = google.auth.default(scopes=list(_SCOPES))
    except exceptions.DefaultCredentialsError as exc:
        raise ConfigError(
            "Vertex AI needs Google Cloud credentials (Application Default Credentials): run "
            "`gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service account "
            f"key file ({exc})"
        ) from None
    return credentials


def _bucket_and_folder(value: str, flag: str) -> tuple[str, str]:
    """`my-bucket`, `gs://my-bucket` or `gs://my-bucket/some/folder/` → ('my-bucket', '' or 'some/folder/')."""
    bucket, _, folder = value.removeprefix("gs://").strip("/").partition("/")
    if not bucket or "//" in folder:
        raise ConfigError(f"{flag} must be a bucket (e.g. my-bucket or gs://my-bucket/folder/), got {value!r}")
    return bucket, folder.strip("/") + "/" if folder.strip("/") else ""


def _split_gs_uri(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("gs://").partition("/")
    return bucket, prefix


def _handle(record: BatchRecord) -> VertexHandle:
    if not isinstance(record.handle, VertexHandle):
        raise TypeError(f"batch {record.batch_id} has no Vertex handle")
    return record.handle

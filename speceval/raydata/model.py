"""`RayModel`: one model served through Ray Data LLM, and how one block of its answers becomes our outcomes.

The model turns `(custom_id, prompt)` rows into a Ray dataset, runs it through the processor its settings
describe, and yields the answers block by block as Ray streams them, each row already a typed
`RequestOutcome` keyed by the custom id it was sent with (Ray keeps a row's other columns beside the answer,
so nothing depends on the order rows come back in). HTTP answers are read with the OpenAI adapter's own
result-line rules, so a status, an error body or an empty answer means the same here as in a batch run.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, ClassVar

from speceval.batch.records import Outcome, RequestError, RequestOutcome
from speceval.errors import ConfigError, MissingCredentialsError
from speceval.providers.openai_batch import parse_result_line
from speceval.raydata.settings import HTTP_WORKER_CPUS, INSTALL_HINT, RaySettings, processor_config
from speceval.realtime.limiter import RateLimits
from speceval.realtime.model import RealtimeOptions
from speceval.redaction import redact
from speceval.wire.openai import chat_body
from speceval.wire.params import GenerationParams
from speceval.wire.usage import Usage

logger = logging.getLogger(__name__)

_init_lock = threading.Lock()


def ensure_ray(address: str | None) -> Any:
    """Join the cluster at `address`, or start a local Ray sized to this machine (once per process)."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--org ray needs Ray: {INSTALL_HINT}") from None
    with _init_lock:
        if not ray.is_initialized():
            # Ray's own progress bars and worker logs would drown speceval's progress; its logs stay in /tmp/ray.
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def http_status(body: Any) -> int:
    """The HTTP status an answer stood for: Ray's HTTP stage keeps the body of a non-retried failure, not its
    status. vLLM puts the status in `code`; OpenAI-shaped errors name a type; anything else is a 400."""
    if isinstance(body, dict) and "choices" in body:
        return 200
    error = body.get("error") if isinstance(body, dict) else None
    source = error if isinstance(error, dict) else body if isinstance(body, dict) else {}
    code = source.get("code")
    if isinstance(code, int) and 400 <= code <= 599:
        return code
    if str(source.get("type", "")).lower() in ("server_error", "internalservererror", "internal_server_error"):
        return 500
    return 400


def outcome_of(custom_id: str, response_json: str) -> RequestOutcome:
    """One HTTP answer (Ray's `http_response`, as JSON) as a typed outcome, by the OpenAI result-line rules."""
    body = json.loads(response_json)
    if isinstance(body, dict):
        # Ray stores a column's rows with one schema: a success row gains `error: null`, an error row
        # `choices: null`. Fields that are null were not in the answer.
        body = {key: value for key, value in body.items() if value is not None}
    if isinstance(body, dict) and "error" not in body and "choices" not in body and "object" in body:
        body = {"error": body}  # vLLM's flat ErrorResponse
    status = http_status(body)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        body = {**body, "error": {**error, "code": error.get("type")}}  # the status is kept as status_code
    line = {"custom_id": custom_id, "response": {"status_code": status, "body": body}}
    return parse_result_line(json.dumps(line), "ray")


def _plain(value: Any) -> Any:
    """Arrays and scalars of Ray's columnar formats as JSON values."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _engine_outcome(row: dict[str, Any]) -> RequestOutcome:
    """One row of the vLLM-engine processor as a typed outcome."""
    custom_id = str(row["custom_id"])
    error = str(row.get("__inference_error__") or "")
    if error:
        return RequestOutcome(
            custom_id=custom_id,
            outcome=Outcome.ERRORED,
            error=RequestError(code="engine_error", message=redact(error[:2000]), retryable=False),
        )
    usage = Usage(
        input_tokens=int(row.get("num_input_tokens") or 0), output_tokens=int(row.get("num_generated_tokens") or 0)
    )
    return RequestOutcome(custom_id=custom_id, outcome=Outcome.SUCCEEDED, output_text=str(row["text"]), usage=usage)


class RayModel:
    """A model whose requests run through Ray Data LLM (`--org ray`).

    It has the realtime models' surface (`model_name`, `params`, `options`, `org`, `describe`), so pipelines and
    the CLI treat it like one; `speceval.engines.factory.make_engine` gives it the `RayEngine`.
    """

    provider: ClassVar[str] = "ray"

    def __init__(
        self,
        model_name: str,
        params: GenerationParams | None = None,
        settings: RaySettings | None = None,
        *,
        api_key: str | None = None,
    ):
        """Remember the model and settings; the key comes from `api_key` or the settings' variable."""
        self.model_name = model_name
        self.params = params or GenerationParams()
        self.settings = settings or RaySettings()
        self.org = self.provider
        self.options = RealtimeOptions(limits=RateLimits(max_concurrency=self.settings.max_concurrency))
        if api_key is None and self.settings.api_key_env:
            api_key = os.environ.get(self.settings.api_key_env)
            if not api_key:
                raise MissingCredentialsError("ray", (self.settings.api_key_env,))
        elif api_key is None:
            # As for --org openai-compatible: vLLM serves without a key; a gateway may read OPENAI_API_KEY.
            api_key = os.environ.get("OPENAI_API_KEY") or None
        self._api_key = api_key

    def describe(self) -> dict[str, str]:
        """Provider and model name, for manifests and summaries."""
        return {"provider": self.org, "model_name": self.model_name, "mode": "ray"}

    def limiter_key(self) -> Hashable:
        """What shares one rate limiter (`speceval.realtime.engine.limiter_of`): this object (its Ray cluster's
        workers are its own)."""
        return self

    def run(self, rows: Sequence[tuple[str, str]]) -> Iterator[list[RequestOutcome]]:
        """Send `(custom_id, prompt)` rows through Ray; yield their outcomes one block at a time."""
        ray = ensure_ray(self.settings.ray_address)
        from ray.data.llm import build_processor

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        config = processor_config(self.settings, self.model_name, headers)
        model_name, params = self.model_name, self.params
        if self.settings.vllm:
            sampling = {"temperature": params.temperature or 0.0, "max_tokens": params.max_tokens}
            processor = build_processor(
                config,
                preprocess=lambda row: {
                    "custom_id": row["custom_id"],
                    "messages": chat_body(model_name, params, row["prompt"], compatible=True)["messages"],
                    "sampling_params": sampling,
                },
                postprocess=lambda row: {
                    "custom_id": row["custom_id"],
                    "text": row.get("generated_text") or "",
                    "num_input_tokens": row.get("num_input_tokens") or 0,
                    "num_generated_tokens": row.get("num_generated_tokens") or 0,
                },
                postprocess_map_kwargs={"num_cpus": HTTP_WORKER_CPUS},  # see the HTTP processor below
            )
        else:
            processor = build_processor(
                config,
                preprocess=lambda row: {
                    "custom_id": row["custom_id"],
                    "payload": chat_body(model_name, params, row["prompt"], compatible=True),
                },
                # Success and error bodies have different shapes; one JSON column keeps the schema fixed.
                postprocess=lambda row: {
                    "custom_id": row["custom_id"],
                    "response": json.dumps(row["http_response"], default=_plain),
                },
                # A whole CPU per postprocess task would queue answers behind the HTTP workers until they are
                # all done: nothing would reach the journal before the last request was answered.
                postprocess_map_kwargs={"num_cpus": HTTP_WORKER_CPUS},
            )
        dataset = processor(ray.data.from_items([{"custom_id": cid, "prompt": prompt} for cid, prompt in rows]))
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            columns = dict(batch)
            records = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
            if self.settings.vllm:
                yield [_engine_outcome(row) for row in records]
            else:
                yield [outcome_of(str(row["custom_id"]), str(row["response"])) for row in records]

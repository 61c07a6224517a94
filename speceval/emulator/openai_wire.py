"""OpenAI Batch wire formats: validation of input lines, and the output/error file lines.

Kept apart from the HTTP handlers (`openai_batch`) so the file formats can be read in one place.
"""

from __future__ import annotations

import json
from typing import Any

from speceval.emulator.common import text_of
from speceval.emulator.jobs import JobFailure, Kind, Outcome, RequestItem, output_limit, random_id
from speceval.emulator.structured import schema_of_openai

INVALID_MESSAGE = "Invalid request: the prompt contains the speceval emulator error marker [[emulator:error]]."
SERVER_MESSAGE = "The server had an error while processing your request. Sorry about that!"
_UNEXECUTED = {
    Kind.EXPIRED: ("batch_expired", "This request could not be executed before the completion window expired."),
    Kind.CANCELLED: ("batch_cancelled", "This request was not executed because the batch was cancelled."),
}


def _prompt_of(body: dict[str, Any]) -> str:
    """All prompt text of a request body, for any of the answered endpoints."""
    texts = [text_of(body.get("instructions")), text_of(body.get("messages")), text_of(body.get("input"))]
    if isinstance(body.get("prompt"), str | list):
        texts.append(text_of(body["prompt"]))
    return "\n".join(t for t in texts if t)


def parse_input_file(content: bytes, endpoint: str) -> tuple[list[RequestItem], list[JobFailure]]:
    """Validate a batch input file the way the Batch API does; the failures make the batch `failed`."""
    items: list[RequestItem] = []
    failures: list[JobFailure] = []
    seen: set[str] = set()
    models: set[str] = set()
    lines = content.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            failures.append(
                JobFailure(code="invalid_json_line", message="This line is not parseable as valid JSON.", line=number)
            )
            continue
        if not isinstance(row, dict):
            failures.append(JobFailure(code="invalid_request", message="Each line must be a JSON object.", line=number))
            continue
        custom_id = row.get("custom_id")
        body = row.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            failures.append(
                JobFailure(
                    code="missing_required_parameter",
                    param="custom_id",
                    line=number,
                    message="Missing required parameter: 'custom_id'.",
                )
            )
        elif custom_id in seen:
            failures.append(
                JobFailure(
                    code="duplicate_custom_id",
                    param="custom_id",
                    line=number,
                    message="The custom_id for this request is a duplicate of another request. "
                    "The custom_id parameter must be unique for each request in a batch.",
                )
            )
        if row.get("method") != "POST":
            failures.append(
                JobFailure(
                    code="invalid_method", param="method", line=number, message="The only supported method is 'POST'."
                )
            )
        if row.get("url") != endpoint:
            failures.append(
                JobFailure(
                    code="mismatched_endpoint",
                    param="url",
                    line=number,
                    message=f"The provided URL '{row.get('url')}' does not match the batch endpoint '{endpoint}'.",
                )
            )
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            failures.append(
                JobFailure(
                    code="missing_required_parameter",
                    param="body.model",
                    line=number,
                    message="Missing required parameter: 'model'.",
                )
            )
            continue
        models.add(body["model"])
        if isinstance(custom_id, str) and custom_id and custom_id not in seen:
            seen.add(custom_id)
            items.append(
                RequestItem(
                    custom_id=custom_id,
                    model=body["model"],
                    prompt=_prompt_of(body),
                    response_schema=schema_of_openai(body),
                    max_tokens=output_limit(body.get("max_completion_tokens", body.get("max_tokens"))),
                )
            )
    if not lines or not any(line.strip() for line in lines):
        failures.append(JobFailure(code="empty_file", message="The batch input file is empty."))
    if len(models) > 1:
        failures.append(
            JobFailure(
                code="mismatched_model", param="body.model", message="All requests in a batch must use the same model."
            )
        )
    return items, failures


def _answer_body(endpoint: str, outcome: Outcome, created: int) -> dict[str, Any]:
    """The endpoint's normal response body for a succeeded request."""
    text, model = outcome.text or "", outcome.item.model
    prompt_tokens, completion_tokens = outcome.input_tokens, outcome.output_tokens
    if endpoint == "/v1/responses":
        return {
            "id": random_id("resp_"),
            "object": "response",
            "created_at": created,
            "status": "completed",
            "model": model,
            "output": [
                {
                    "type": "message",
                    "id": random_id("msg_"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "usage": {
                "input_tokens": prompt_tokens,
                "input_tokens_details": {"cached_tokens": outcome.cache.read},
                "output_tokens": completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": outcome.cache.read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    if endpoint == "/v1/completions":
        return {
            "id": random_id("cmpl-"),
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": usage,
        }
    return {
        "id": random_id("chatcmpl-"),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": None,
    }


def result_line(endpoint: str, outcome: Outcome, created: int) -> dict[str, Any]:
    """One output/error file line."""
    line: dict[str, Any] = {"id": random_id("batch_req_"), "custom_id": outcome.item.custom_id}
    if outcome.kind in _UNEXECUTED:
        code, message = _UNEXECUTED[outcome.kind]
        return {**line, "response": None, "error": {"code": code, "message": message}}
    if outcome.kind is Kind.SUCCEEDED:
        status, body = 200, _answer_body(endpoint, outcome, created)
    elif outcome.kind is Kind.INVALID:
        status, body = (
            400,
            {"error": {"message": INVALID_MESSAGE, "type": "invalid_request_error", "param": None, "code": None}},
        )
    else:
        status, body = (
            500,
            {"error": {"message": SERVER_MESSAGE, "type": "server_error", "param": None, "code": "server_error"}},
        )
    return {
        **line,
        "response": {"status_code": status, "request_id": random_id("req_", 32), "body": body},
        "error": None,
    }

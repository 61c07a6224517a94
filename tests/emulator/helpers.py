"""Helpers shared by the emulator tests: SDK clients, request builders, polling and raw HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

import anthropic
import openai
from google import genai
from google.genai import types

from speceval.emulator import Emulator
from speceval.wire.tls import genai_tls_options, sdk_http_client

T = TypeVar("T")
KEY = "sk-test-emulator"
MARKER = "[[emulator:error]]"


# Each client below verifies with the process's one TLS context, as speceval's own adapters do (speceval/wire/tls.py):
# an SDK client builds its own otherwise, loading a certificate bundle each time (25-100 ms of CPU; these helpers
# built some 300 of them in the inner test loop). Nothing else of the SDK's default client changes.


def openai_client(emu: Emulator, **kwargs: Any) -> openai.OpenAI:
    """An OpenAI SDK client on the emulator (close it when done)."""
    http = sdk_http_client(openai.DefaultHttpxClient, openai.DEFAULT_TIMEOUT)
    return openai.OpenAI(api_key=KEY, base_url=emu.openai_base_url, http_client=http, **kwargs)


def anthropic_client(emu: Emulator, **kwargs: Any) -> anthropic.Anthropic:
    """An Anthropic SDK client on the emulator."""
    http = sdk_http_client(anthropic.DefaultHttpxClient, anthropic.DEFAULT_TIMEOUT)
    return anthropic.Anthropic(api_key=KEY, base_url=emu.anthropic_base_url, http_client=http, **kwargs)


def gemini_client(emu: Emulator, version: str = "v1beta") -> genai.Client:
    """A google-genai client on the emulator (with a timeout: the SDK has none by default)."""
    options = types.HttpOptions(base_url=emu.gemini_base_url, api_version=version, timeout=30000, **genai_tls_options())
    return genai.Client(api_key=KEY, http_options=options)


def wait_until(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Call `fetch` every 20 ms until `done(value)`; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"not done in {timeout}s: {value!r}"
        time.sleep(0.02)


def openai_lines(prompts: list[str], model: str = "gpt-test", endpoint: str = "/v1/chat/completions") -> bytes:
    """A Batch API input file with custom ids `r0`, `r1`, …"""
    rows = [
        {
            "custom_id": f"r{i}",
            "method": "POST",
            "url": endpoint,
            "body": {"model": model, "messages": [{"role": "user", "content": prompt}], "max_completion_tokens": 32},
        }
        for i, prompt in enumerate(prompts)
    ]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def anthropic_requests(prompts: list[str], model: str = "claude-test") -> list[dict[str, Any]]:
    """Message Batches requests with custom ids `r0`, `r1`, …"""
    return [
        {
            "custom_id": f"r{i}",
            "params": {"model": model, "max_tokens": 32, "messages": [{"role": "user", "content": prompt}]},
        }
        for i, prompt in enumerate(prompts)
    ]


def gemini_lines(prompts: list[str]) -> bytes:
    """A Gemini batch input file with keys `r0`, `r1`, …"""
    rows = [
        {"key": f"r{i}", "request": {"contents": [{"role": "user", "parts": [{"text": p}]}]}}
        for i, p in enumerate(prompts)
    ]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """Parse JSON Lines (asserting there are no blank lines)."""
    lines = text.split("\n")
    assert lines[-1] == "", "JSONL must end with a newline"
    assert all(line.strip() for line in lines[:-1]), "blank line in JSONL"
    return [json.loads(line) for line in lines[:-1]]


def raw(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP request (no SDK): status, lower-cased headers, body."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

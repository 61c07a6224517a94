"""`python -m tests.emulator.other_process_client`: one OpenAI batch sent by a process that is not the emulator's,
configured only by its environment (OPENAI_API_KEY, OPENAI_BASE_URL); prints the job id and its output as JSON.
A module, not a `-c` script, so tests/forked.py forks it from the test process (the openai SDK already imported)
instead of starting an interpreter that imports it again (1.9 s of CPU)."""

from __future__ import annotations

import json
import os
import time

import openai


def main() -> None:
    client = openai.OpenAI()
    line = {
        "custom_id": "only",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    }
    uploaded = client.files.create(file=("in.jsonl", json.dumps(line).encode()), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    while batch.status != "completed":
        time.sleep(0.02)
        batch = client.batches.retrieve(batch.id)
    assert batch.output_file_id is not None
    print(json.dumps({"id": batch.id, "pid": os.getpid(), "text": client.files.content(batch.output_file_id).text}))


if __name__ == "__main__":
    main()

"""The floor for benchmarks/scale_generation.py: the same work done by hand with the openai SDK, nothing else.

What a competent engineer writes for a one-off run: request lines streamed to a file per chunk and the file
handle uploaded (not built in memory), the batches created, polled at a fixed interval, output files read line by
line as they stream in, every line mapped back by custom id, one compact JSON file per statement. No crash
safety, no retries, no validation: the least any correct tool has to do.

    python benchmarks/floor_openai_batch.py INPUTS_DIR OUT_DIR CHUNK POLL_SECONDS
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import openai


def main() -> None:
    inputs_dir, out_dir, chunk, poll = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    client = openai.OpenAI()
    items = []
    for path in sorted(inputs_dir.glob("*.json")):
        for index, text in enumerate(json.loads(path.read_text())["inputs"]):
            items.append((path.stem, index, text))
    batches = []
    id_map = {}
    with tempfile.TemporaryDirectory() as scratch:
        for start in range(0, len(items), chunk):
            request_file = Path(scratch) / f"chunk-{start}.jsonl"
            with request_file.open("w", encoding="utf-8") as handle:
                for n, (sid, index, text) in enumerate(items[start : start + chunk]):
                    custom_id = f"r{start + n}"
                    id_map[custom_id] = (sid, index, text)
                    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": text}], "max_tokens": 64}
                    line = {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}
                    handle.write(json.dumps(line, separators=(",", ":")) + "\n")
            with request_file.open("rb") as handle:
                uploaded = client.files.create(file=handle, purpose="batch")
            batch = client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            batches.append(batch.id)
    results: dict[str, list] = {}
    pending = set(batches)
    while pending:
        time.sleep(poll)
        for batch_id in list(pending):
            batch = client.batches.retrieve(batch_id)
            if batch.status in ("completed", "failed", "expired", "cancelled"):
                pending.discard(batch_id)
                if batch.output_file_id:
                    with client.files.with_streaming_response.content(batch.output_file_id) as response:
                        for line in response.iter_lines():
                            if not line:
                                continue
                            data = json.loads(line)
                            sid, index, text = id_map[data["custom_id"]]
                            output = data["response"]["body"]["choices"][0]["message"]["content"]
                            results.setdefault(sid, []).append(
                                {"original_index": index, "input_text": text, "output_text": output}
                            )
    out_dir.mkdir(parents=True, exist_ok=True)
    for sid, records in results.items():
        records.sort(key=lambda r: r["original_index"])
        (out_dir / f"{sid}.json").write_text(json.dumps(records, separators=(",", ":")))


if __name__ == "__main__":
    main()

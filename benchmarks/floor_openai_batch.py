"""The floor for benchmarks/scale_generation.py: the same work done by hand with the openai SDK, nothing else.

Upload one request file per chunk, create the batches, poll at a fixed interval, download output files, map
every line back by custom id, write one JSON file per statement. No crash safety, no retries, no validation: the
least any correct tool has to do.

    python benchmarks/floor_openai_batch.py INPUTS_DIR OUT_DIR CHUNK POLL_SECONDS
"""

from __future__ import annotations

import io
import json
import sys
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
    for start in range(0, len(items), chunk):
        buffer = io.BytesIO()
        for n, (sid, index, text) in enumerate(items[start : start + chunk]):
            custom_id = f"r{start + n}"
            id_map[custom_id] = (sid, index, text)
            body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": text}], "max_tokens": 64}
            line = {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}
            buffer.write(json.dumps(line).encode() + b"\n")
        uploaded = client.files.create(file=("in.jsonl", buffer.getvalue()), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
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
                    for line in client.files.content(batch.output_file_id).text.splitlines():
                        data = json.loads(line)
                        sid, index, text = id_map[data["custom_id"]]
                        output = data["response"]["body"]["choices"][0]["message"]["content"]
                        results.setdefault(sid, []).append(
                            {"original_index": index, "input_text": text, "output_text": output}
                        )
    out_dir.mkdir(parents=True, exist_ok=True)
    for sid, records in results.items():
        records.sort(key=lambda r: r["original_index"])
        (out_dir / f"{sid}.json").write_text(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()

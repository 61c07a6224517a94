"""Request files for batch runners speceval does not drive: `vllm run-batch` and OpenAI-batch-compatible gateways.

`export_requests` writes a generation run's pending requests (those without a final outcome) in the OpenAI Batch
request format (`{custom_id, method, url, body}`), which `vllm run-batch -i FILE -o OUT` reads. `import_results`
maps the runner's output file back into the run by custom id, with the OpenAI adapter's outcome rules, so the
run's `results/` look exactly as if speceval had sent the requests. A custom id names its input by itself (a hash
of the statement id and the input's position), so any number of exports and imports, in any order, map back.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from speceval.atomic import atomic_write_lines
from speceval.batch.chunking import item_custom_id
from speceval.batch.engine import is_final
from speceval.batch.records import ItemRef, Outcome, ResultRecord
from speceval.batch.store import RunStore
from speceval.errors import InputError, TransientProviderError
from speceval.pipelines.generation import BatchedGenerationPipeline
from speceval.providers.openai_batch import parse_result_line
from speceval.wire.lines import encode_line
from speceval.wire.openai import ENDPOINT, chat_body

logger = logging.getLogger(__name__)


@dataclass
class ExportSummary:
    """What `export_requests` wrote."""

    path: Path
    exported: int
    already_final: int


@dataclass
class ImportSummary:
    """What `import_results` mapped back: outcomes by kind, and lines that named no pending request."""

    imported: Counter[str] = field(default_factory=Counter)
    unknown_ids: list[str] = field(default_factory=list)
    duplicates: int = 0
    still_pending: int = 0


def _final_results(pipeline: BatchedGenerationPipeline, store: RunStore) -> dict[ItemRef, ResultRecord]:
    """Every input's current record, from `results/` and the realtime journal (a run killed between merges)."""
    from speceval.batch.journal import Journal

    records: dict[ItemRef, ResultRecord] = {}
    for statement_id in pipeline.inputs.statement_ids:
        for record in store.load_results(statement_id):
            records[ItemRef(statement_id, record.original_index)] = record
    for entry in Journal(store.run_dir).read():
        ref = ItemRef(entry.statement_id, entry.record.original_index)
        current = records.get(ref)
        if current is None or current.outcome is not Outcome.SUCCEEDED:
            records[ref] = entry.record
    return records


def export_requests(run_dir: Path, out: Path) -> ExportSummary:
    """Write the pending requests of the generation run in `run_dir` to `out` (OpenAI Batch request format)."""
    pipeline = BatchedGenerationPipeline.resume(Path(run_dir))  # refuses a run whose spec or inputs changed
    config = pipeline.config
    store = RunStore(pipeline.run_dir)
    records = _final_results(pipeline, store)
    max_attempts = config.engine.max_attempts
    counts = Counter[str]()

    def lines() -> Iterator[bytes]:
        for item in pipeline.inputs.items:
            record = records.get(ItemRef(item.statement_id, item.original_index))
            if record is not None and is_final(record, max_attempts):
                counts["final"] += 1
                continue
            counts["exported"] += 1
            yield encode_line(
                {
                    "custom_id": item_custom_id(item.statement_id, item.original_index),
                    "method": "POST",
                    "url": ENDPOINT,
                    # The compatible dialect: `vllm run-batch` and gateways read `max_tokens`.
                    "body": chat_body(config.model_name, config.params, item.input_text, compatible=True),
                }
            )

    atomic_write_lines(Path(out), lines())
    return ExportSummary(path=Path(out), exported=counts["exported"], already_final=counts["final"])


def _normalised(line: str) -> str:
    """vLLM writes a failed request's `error` as a plain string; the OpenAI format has an object."""
    data = json.loads(line)
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        data["error"] = {"message": data["error"]}
        response = data.get("response")
        if isinstance(response, dict) and not response.get("body"):
            response["body"] = {"error": data["error"]}
        return json.dumps(data)
    return line


def import_results(run_dir: Path, results_file: Path) -> ImportSummary:
    """Map a batch runner's output file back into the run in `run_dir` by custom id (nothing final is replaced)."""
    pipeline = BatchedGenerationPipeline.resume(Path(run_dir))
    store = RunStore(pipeline.run_dir)
    records = _final_results(pipeline, store)
    by_id = {item_custom_id(i.statement_id, i.original_index): i for i in pipeline.inputs.items}
    summary = ImportSummary()
    updates: dict[str, list[ResultRecord]] = {}
    seen: set[str] = set()
    path = Path(results_file)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                outcome = parse_result_line(_normalised(line), path.name)
            except (json.JSONDecodeError, TransientProviderError):
                raise InputError(path, "not a batch output line (JSON with a custom_id)", line=number) from None
            item = by_id.get(outcome.custom_id)
            if item is None:
                summary.unknown_ids.append(outcome.custom_id)
                continue
            if outcome.custom_id in seen:
                summary.duplicates += 1
                continue
            seen.add(outcome.custom_id)
            ref = ItemRef(item.statement_id, item.original_index)
            earlier = records.get(ref)
            succeeded = outcome.outcome is Outcome.SUCCEEDED
            record = ResultRecord(
                original_index=item.original_index,
                input_text=item.input_text,
                output_text=outcome.output_text if succeeded else None,
                batch_id=f"import:{path.name}",
                outcome=outcome.outcome,
                error=outcome.error,
                usage=outcome.usage,
                attempts=(earlier.attempts if earlier is not None else 0) + 1,
                custom_id=outcome.custom_id,
            )
            summary.imported[outcome.outcome.value] += 1
            records[ref] = record
            updates.setdefault(item.statement_id, []).append(record)
    for statement_id, statement_records in updates.items():
        store.merge_results(statement_id, statement_records)  # atomic per statement; a success is never replaced
    max_attempts = pipeline.config.engine.max_attempts
    summary.still_pending = sum(
        1
        for i in pipeline.inputs.items
        if not (r := records.get(ItemRef(i.statement_id, i.original_index))) or not is_final(r, max_attempts)
    )
    if summary.unknown_ids:
        logger.error(
            "%s: %d line(s) name custom ids of no request of this run (first: %s)",
            path,
            len(summary.unknown_ids),
            summary.unknown_ids[0],
        )
    return summary
